import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { type CountryCode, parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * Phones are stored in E.164 (+40712345678). A number in international form is taken as it is; a national one
 * (0712 345 678) is read in `country`, the clinic's (clinicCountry), and without one only the international form
 * is understood. What libphonenumber-js does not find to be a valid number is null.
 */
export function e164(raw: string, country: string | null): string | null {
  const parsed = parsePhoneNumberFromString(raw.trim(), { defaultCountry: (country ?? undefined) as CountryCode | undefined });
  return parsed?.isValid() ? parsed.number : null;
}

export const phoneProblem = (country: string | null) =>
  country
    ? `must be a phone number in international form (+40712345678) or national form of ${country}`
    : 'must be a phone number in international form, such as +40712345678';

/**
 * An optional phone of a body as E.164: null when absent or blank, 400 validation_error naming `field` when it is not
 * a valid number.
 */
export function phoneOf(raw: string | null | undefined, country: string | null, field: string): string | null {
  if (typeof raw !== 'string' || !raw.trim()) return null;
  const phone = e164(raw, country);
  if (!phone) throw errors.validation({ [field]: phoneProblem(country) });
  return phone;
}

/**
 * The clinic's country, for national phone numbers: the country of its first location that names one (the
 * organization has no country of its own; its locations have addresses).
 */
export async function clinicCountry(tx: Queryable, orgId: string): Promise<string | null> {
  const { rows } = await tx.query<{ country: string }>(
    'select country from locations where organization_id = $1 and country is not null order by created_at, id limit 1',
    [orgId],
  );
  return rows[0]?.country ?? null;
}
