import { e164, phoneProblem } from '../../platform/phone.ts';
import { errors } from '@clinic/http-kit';
import { WRITABLE, type Writable } from './queries.ts';

// ISO 3166-1 alpha-2 officially assigned codes (249), plus XK (Kosovo: user-assigned, but what its
// clinics and most software use). A fixed list, because Intl also names codes that are not countries
// (EU, UN, ZZ, QO...).
const COUNTRIES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP ' +
    'KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT ' +
    'MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW ' +
    'SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ ' +
    'UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW XK'
  ).split(' '),
);

/**
 * The runtime's name for an IANA zone (case fixed, links such as US/Eastern followed), or null.
 * Offsets such as +02:00 are refused: a location's clock follows daylight saving, an offset does not.
 */
export function canonicalTimeZone(tz: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(tz)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** An assigned ISO 3166-1 alpha-2 code (upper case). */
export const isCountryCode = (code: string): boolean => COUNTRIES.has(code);

export type LocationBody = Partial<Record<Writable, string | null>>;

/**
 * Trims every text, turns an empty optional text into null, upper-cases the country and canonicalises
 * the time zone; collects every problem into one 400 validation_error. Only keys present in the body
 * are returned, so a PATCH changes only what it names.
 */
export function normalizeLocation(body: LocationBody, clinicCountry: string | null = null): Partial<Record<Writable, string | null>> {
  const out: Partial<Record<Writable, string | null>> = {};
  const fields: Record<string, string> = {};
  for (const key of WRITABLE) {
    if (!Object.hasOwn(body, key)) continue;
    const raw = body[key];
    const v = typeof raw === 'string' ? raw.trim() : null;
    switch (key) {
      case 'name':
        if (!v) fields.name = 'must not be blank';
        else out.name = v;
        break;
      case 'timezone': {
        const tz = v ? canonicalTimeZone(v) : null;
        if (!tz) fields.timezone = 'must be an IANA time zone name such as Europe/Bucharest or America/New_York';
        else out.timezone = tz;
        break;
      }
      case 'country': {
        const c = v ? v.toUpperCase() : null;
        if (c !== null && !COUNTRIES.has(c)) fields.country = 'must be an ISO 3166-1 alpha-2 country code such as RO or US';
        else out.country = c;
        break;
      }
      case 'phone':
        {
          // National numbers are read in the location's own country, else the clinic's.
          const given = typeof body.country === 'string' ? body.country.trim().toUpperCase() : null;
          const country = given && COUNTRIES.has(given) ? given : clinicCountry;
          const phone = v ? e164(v, country) : null;
          if (v && !phone) fields.phone = phoneProblem(country);
          else out.phone = phone;
        }
        break;
      default:
        out[key] = v || null;
    }
  }
  if (Object.keys(fields).length) throw errors.validation(fields);
  return out;
}
