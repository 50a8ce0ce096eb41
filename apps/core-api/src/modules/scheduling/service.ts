import { clinicCountry, phoneOf } from '../../platform/phone.ts';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database, Queryable } from '@clinic/db';
import { AppError, errors, normalizeEmail, isIsoDate } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import { canonicalTimeZone } from '../locations/validation.ts';
import { orgAcceptsPatients, privacyNoticeMissing } from '../consents/queries.ts';
import { resolveBookingOrganization } from '../organizations/service.ts';
import { bookingRules, DEFAULT_STEP_MINUTES, occupied, resolveSlot } from '../appointments/booking.ts';
import * as appointments from '../appointments/queries.ts';
import { bookTarget, present } from '../appointments/service.ts';
import { type Intake, intakeForm, intakeOf } from '../appointments/intake.ts';
import { latestRequiredOrgPurposes } from './consents.ts';
import { localIso } from './local-time.ts';
import * as q from './queries.ts';
import { freeSlots } from './slots.ts';

/** The longest range of one availability request (spec 4.5 Scheduling). */
export const MAX_RANGE_DAYS = 62;

const BYPASS = { role: 'app_bypass', principalId: null, orgId: null, permissions: [] } as const;

export interface PublicCall {
  organization?: string | undefined;
  host: string;
  ip: string | null;
  /** Runs once the organization is known (a per-organization rate limit). */
  perOrganization?: (orgId: string) => Promise<void>;
}

/** The organization of a public call and a narrow transaction on app_bypass for it (spec 5.3). */
async function publicTx<T>(db: Database, call: PublicCall, fn: (tx: Queryable, orgId: string) => Promise<T>): Promise<T> {
  const org = await resolveBookingOrganization(db, { organization: call.organization, host: call.host });
  // A per-organization limit counts the organization, however the request named it (id, slug or domain).
  await call.perOrganization?.(org.id);
  return db.withScope(BYPASS, (tx) => fn(tx, org.id));
}

/** The instant a local date starts in a zone (00:00 local, or the first minute after a gap). */
function startOfLocalDay(date: string, zone: string): Date {
  // Guess with UTC, then correct by the zone's offset at that guess (twice: the offset may differ across it).
  let t = Date.parse(`${date}T00:00:00Z`);
  for (let i = 0; i < 2; i++) {
    const local = localIso(new Date(t), zone);
    const shown = Date.parse(`${local.slice(0, 19)}Z`);
    t -= shown - Date.parse(`${date}T00:00:00Z`);
  }
  return new Date(t);
}

/**
 * The dates a range may name: from the second day of year 1000 to the last but one of 9999, so that their
 * local midnights in every zone (and the day after `to`) are instants with four-digit years, which the
 * local-time formatting below and both databases hold (no year 0, no year 10000).
 */
const FIRST_DATE = '1000-01-02';
const LAST_DATE = '9999-12-30';
const isDate = (d: string) => isIsoDate(d) && d >= FIRST_DATE && d <= LAST_DATE;

export interface AvailabilityQuery {
  organization?: string;
  service_id: string;
  specialist_id?: string;
  location_id?: string;
  from: string;
  to: string;
  time_zone?: string;
}

/**
 * GET /v1/public/availability: the free slots of a public service, from `from` to `to` (local dates of
 * the viewer's zone, inclusive, at most 62 days), for its specialists bookable online (or the one named)
 * at its locations (or the one named). Each slot has its start and end as instants and as the viewer
 * reads them.
 */
export async function publicAvailability(db: Database, call: PublicCall, query: AvailabilityQuery) {
  const problems: Record<string, string> = {};
  const zone = query.time_zone ? canonicalTimeZone(query.time_zone.trim()) : 'UTC';
  if (!zone) problems.time_zone = 'not an IANA time zone such as Europe/Bucharest';
  if (!isDate(query.from)) problems.from = `a date YYYY-MM-DD from ${FIRST_DATE} to ${LAST_DATE}`;
  if (!isDate(query.to)) problems.to = `a date YYYY-MM-DD from ${FIRST_DATE} to ${LAST_DATE}`;
  if (!problems.from && !problems.to) {
    const days = (Date.parse(query.to) - Date.parse(query.from)) / 86_400_000;
    if (days < 0) problems.to = 'must not be before from';
    else if (days >= MAX_RANGE_DAYS) problems.to = `at most ${MAX_RANGE_DAYS} days from from`;
  }
  if (Object.keys(problems).length) throw errors.queryValidation(problems);
  const viewer = zone!;
  const from = startOfLocalDay(query.from, viewer);
  const next = new Date(Date.parse(`${query.to}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  const to = startOfLocalDay(next, viewer);
  return publicTx(db, call, async (tx, orgId) => {
    const service = await q.findBookableService(tx, orgId, query.service_id.toLowerCase());
    if (!service?.is_public) throw errors.notFound('No public service with this id at this organization.');
    let specialists = service.specialists.filter((s) => s.bookable_online).map((s) => s.id);
    if (query.specialist_id) specialists = specialists.filter((id) => id === query.specialist_id!.toLowerCase());
    let locations: string[] | null = service.location_ids.length ? service.location_ids : null;
    if (query.location_id) {
      const loc = query.location_id.toLowerCase();
      locations = locations === null || locations.includes(loc) ? [loc] : [];
    }
    const rules = bookingRules(service, 'public');
    const slots =
      specialists.length && locations?.length !== 0
        ? await freeSlots(tx, {
            orgId,
            serviceId: service.id,
            specialistIds: specialists,
            locationIds: locations,
            from,
            to,
            durationMinutes: service.duration_minutes,
            bufferBeforeMinutes: service.buffer_before_minutes,
            bufferAfterMinutes: service.buffer_after_minutes,
            stepMinutes: service.slot_interval_minutes ?? DEFAULT_STEP_MINUTES,
            earliest: rules.earliest,
            latest: rules.latest,
          })
        : [];
    return {
      service_id: service.id,
      time_zone: viewer,
      duration_minutes: service.duration_minutes,
      slots: slots.map((s) => ({
        start: s.start,
        end: s.end,
        start_local: localIso(s.start, viewer),
        end_local: localIso(s.end, viewer),
        specialist_id: s.specialist_id,
        location_id: s.location_id,
      })),
    };
  });
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Constant-time comparison of a presented hold secret with the stored hash. */
function secretMatches(secret: unknown, hash: string): boolean {
  if (typeof secret !== 'string' || secret.length > 200) return false;
  return timingSafeEqual(Buffer.from(sha256(secret), 'hex'), Buffer.from(hash, 'hex'));
}

export interface HoldBody {
  organization?: string;
  service_id: string;
  specialist_id: string;
  location_id?: string | null;
  start: string;
}

/**
 * POST /v1/public/holds: sets one free slot aside for `holdMinutes`, for whoever has the secret returned
 * (once). A slot held or booked cannot be held again (409 slot_unavailable: the exclusion constraint of
 * the calendar's claims decides, so two concurrent holds of one slot give one hold).
 */
export async function placeHold(db: Database, call: PublicCall, body: HoldBody, holdMinutes: number) {
  return publicTx(db, call, async (tx, orgId) => {
    const t = await resolveSlot(tx, orgId, body, 'public');
    const secret = `hold_${randomBytes(24).toString('base64url')}`;
    const hold = await q.insertHold(tx, {
      orgId,
      serviceId: t.service.id,
      specialistId: t.specialistId,
      locationId: t.locationId,
      start: t.start,
      end: t.end,
      secretHash: sha256(secret),
      minutes: holdMinutes,
      ip: call.ip,
    });
    await appointments.claim(tx, {
      orgId,
      calendarId: t.calendarId,
      ...occupied(t, t.service),
      holdId: hold.id,
      expiresAt: hold.expires_at,
    });
    return { ...presentHold(hold), secret };
  });
}

export function presentHold(h: q.HoldRow) {
  return {
    id: h.id,
    organization_id: h.organization_id,
    service_id: h.service_id,
    specialist_id: h.specialist_id,
    location_id: h.location_id,
    start: h.starts_at,
    end: h.ends_at,
    status: h.status,
    expires_at: h.expires_at,
    appointment_id: h.appointment_id,
  };
}

/** A live hold named by id and secret, locked; the same 404 for a wrong secret as for no hold (nothing to probe). */
async function heldBy(tx: Queryable, id: string, secret: unknown): Promise<q.HoldRow> {
  const hold = await q.findHold(tx, id, true);
  if (!hold || !secretMatches(secret, hold.secret_hash)) throw errors.notFound('No hold with this id and secret.');
  return hold;
}

/** DELETE /v1/public/holds/{id}: the holder gives the slot back (X-Hold-Secret). */
export async function releaseHold(db: Database, id: string, secret: unknown) {
  return db.withScope(BYPASS, async (tx) => {
    const hold = await heldBy(tx, id, secret);
    if (hold.status !== 'live')
      throw errors.conflict(
        'hold_ended',
        `This hold has ${hold.status === 'converted' ? 'become an appointment' : `been ${hold.status}`}.`,
      );
    await q.endHold(tx, hold.organization_id, hold.id, 'released');
    return presentHold({ ...hold, status: 'released' });
  });
}

/**
 * GET /v1/public/holds/{id}/stream: the hold's state for its holder (hold-streams.ts follows it from
 * there). The same 404 for a wrong secret as for no hold.
 */
export async function holdForStream(db: Database, id: string, secret: unknown): Promise<q.HoldState> {
  const found = await db.withScope(BYPASS, (tx) => q.findHoldState(tx, id));
  if (!found || !secretMatches(secret, found.secret_hash)) throw errors.notFound('No hold with this id and secret.');
  const { secret_hash: _, ...state } = found;
  return state;
}

/**
 * The states of the holds an instance's streams follow, in one transaction. With `settle`, those live
 * past their time end as expired first (the sweep's work, for the holds whose countdown has reached
 * zero), so a stream says expired only once the database says so.
 */
export async function followHolds(db: Database, keys: readonly q.HoldKey[], settle = false): Promise<q.HoldState[]> {
  return db.transaction(async (tx) => {
    if (settle) await q.expireDueHolds(tx, keys);
    return q.holdStates(tx, keys);
  });
}

/**
 * GET /v1/public/booking-form: what the guest form of a public service asks before a booking is accepted:
 * the consents the organization requires (and telemedicine for a video service) at their latest version,
 * with their texts in every language published, and the service's intake questions. The booking checks
 * exactly these (bookGuest), so a page built from this answer is never refused for a missing consent.
 */
export async function publicBookingForm(db: Database, call: PublicCall, serviceId: string) {
  return publicTx(db, call, async (tx, orgId) => {
    const service = await q.findBookableService(tx, orgId, serviceId.toLowerCase());
    if (!service?.is_public) throw errors.notFound('No public service with this id at this organization.');
    const required = await latestRequiredOrgPurposes(tx, orgId, service.mode === 'video' ? ['telemedicine'] : []);
    const consents = [];
    for (const r of required) {
      // The clinic's own text of that version when it has one, else the platform's (as latestRequiredOrgPurposes chose).
      const { rows } = await tx.query<{ name: string; body_translations: Record<string, string> }>(
        `select p.name, v.body_translations from consent_purpose_versions v join consent_purposes p on p.code = v.purpose_code
         where v.purpose_code = $1 and v.version = $2 and (v.organization_id = $3 or v.organization_id is null)
         order by v.organization_id is null limit 1`,
        [r.purpose_code, r.version, orgId],
      );
      consents.push({
        purpose_code: r.purpose_code,
        purpose_version: r.version,
        name: rows[0]?.name ?? r.purpose_code,
        texts: rows[0]?.body_translations ?? {},
      });
    }
    const intake = await intakeForm(tx, orgId, service.intake_form_template_id);
    return {
      service_id: service.id,
      mode: service.mode,
      consents,
      intake: intake
        ? intake.fields.map((f) => ({ key: f.key, label: f.label, field_type: f.field_type, options: f.options, required: f.required }))
        : [],
    };
  });
}

export interface BookingBody {
  organization?: string;
  hold_id: string;
  secret: string;
  name: string;
  email: string;
  phone?: string | null;
  note?: string | null;
  consents?: { purpose_code: string; purpose_version: number }[];
  /** The answers to the service's intake form, by field key. */
  intake?: Record<string, unknown>;
}

/**
 * POST /v1/public/bookings (a guest): turns a live hold into an appointment with the guest's name, email
 * and phone and the consents the organization requires (its required purposes, and telemedicine for a
 * video visit). The booking is never tied to an existing patient by its email: it stays a guest booking
 * until the clinic ties it to a patient record (PATCH /v1/appointments/{id} patient_id), so nobody can
 * read or take over a patient's record by typing their address.
 */
export async function bookGuest(db: Database, call: PublicCall, body: BookingBody) {
  return publicTx(db, call, async (tx, orgId) => {
    const problems: Record<string, string> = {};
    const name = body.name.trim();
    if (!name) problems.name = 'must not be blank';
    const email = normalizeEmail(body.email);
    if (!email.ok) problems.email = email.problem;
    const hold = await heldBy(tx, body.hold_id, body.secret);
    if (hold.organization_id !== orgId) throw errors.notFound('No hold with this id and secret.');
    // The same rule as for every way in (spec 4.6 rule 5): no personal data before the clinic's notice.
    if (!(await orgAcceptsPatients(tx, orgId))) throw privacyNoticeMissing();
    if (hold.status !== 'live')
      throw errors.conflict(
        'hold_ended',
        `This hold has ${hold.status === 'converted' ? 'become an appointment' : `been ${hold.status}`}; place a new one.`,
      );
    // The slot is checked again (its own claim aside): the service or availability may have changed.
    const target = await resolveSlot(
      tx,
      orgId,
      {
        service_id: hold.service_id,
        specialist_id: hold.specialist_id,
        location_id: hold.location_id,
        start: hold.starts_at.toISOString(),
      },
      'public',
      hold.id,
    );
    let intake: Intake | null = null;
    try {
      intake = await intakeOf(tx, orgId, target.service.intake_form_template_id, body.intake);
    } catch (err) {
      if (!(err instanceof AppError) || !err.fields) throw err;
      Object.assign(problems, err.fields);
    }
    const phone = phoneOf(body.phone, await clinicCountry(tx, orgId), 'phone');
    const required = await latestRequiredOrgPurposes(tx, orgId, target.service.mode === 'video' ? ['telemedicine'] : []);
    const given = new Map((body.consents ?? []).map((c) => [c.purpose_code, c.purpose_version]));
    const missing = required.filter((r) => given.get(r.purpose_code) !== r.version);
    if (missing.length)
      problems.consents = `accept the latest version of: ${missing.map((m) => `${m.purpose_code} version ${m.version}`).join(', ')}`;
    if (Object.keys(problems).length) throw errors.queryValidation(problems, 'The booking is incomplete; see fields.');
    const row = await bookTarget(tx, null, orgId, target, {
      source: 'guest',
      patientId: null,
      guest: {
        name,
        email: (email as { email: string }).email,
        phone,
        consents: required.map((r) => ({ purpose_code: r.purpose_code, purpose_version: r.version })),
      },
      patientNote: body.note?.trim() || null,
      holdId: hold.id,
      intake,
    });
    await q.endHold(tx, orgId, hold.id, 'converted', row.id);
    await recordChange(
      tx,
      null,
      'appointment.guest_booked',
      { type: 'appointment', id: row.id, organizationId: orgId },
      { hold_id: hold.id, ip: call.ip },
    );
    return present(row, true);
  });
}

/** The sweep: holds past their time end as expired and free their claims. */
export async function sweepHolds(db: Database): Promise<{ organization_id: string; id: string }[]> {
  return db.transaction((tx) => q.expireHolds(tx));
}
