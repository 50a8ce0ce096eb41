import { clinicCountry, phoneOf } from '../../platform/phone.ts';
import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, normalizeEmail, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import type { PublishedField } from '../custom-fields/queries.ts';
import { presentValues, publishedFieldsOf, replaceValues } from '../custom-fields/values.ts';
import type { OrgActor } from '../../platform/actor.ts';
import { canonicalLanguage } from '../../platform/locale.ts';
import * as q from './queries.ts';
import { SPECIALIST_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No specialist with this id in this organization.');

export interface SpecialistBody {
  user_id?: string;
  organization_id?: string;
  id?: string;
  display_name: string;
  title?: string | null;
  bio?: string | null;
  contact_email?: string | null;
  contact_phone?: string | null;
  custom_fields?: Record<string, unknown>;
  languages?: string[];
  bookable_online?: boolean;
  specialty_ids?: string[];
  location_ids?: string[];
}

/** What every caller sees of a specialist's row: a new column fails to compile here until it is placed. */
type SharedPart = Omit<
  q.SpecialistRow,
  | 'custom_field_values'
  | 'user_id'
  | 'contact_email'
  | 'contact_phone'
  | 'gender'
  | 'registration_number'
  | 'qualifications'
  | 'practising_since'
  | 'booking_note'
>;
type Presented = SharedPart &
  Partial<Pick<q.SpecialistRow, 'user_id' | 'contact_email' | 'contact_phone'>> & { custom_fields: ReturnType<typeof presentValues> };

/**
 * The record. Patient callers get no contact details, no private fields and no internal user id (spec
 * 5.8); the professional profile's own fields are read at /profile.
 */
export function present(row: q.SpecialistRow, fields: PublishedField[], patientCaller: boolean): Presented {
  // Property by property: a rest pattern over the row's 20 columns took most of a list page's presenting
  // (about 6 us a row, bench/directory.ts).
  const out: Presented = {
    id: row.id,
    organization_id: row.organization_id,
    display_name: row.display_name,
    title: row.title,
    bio: row.bio,
    languages: row.languages,
    bookable_online: row.bookable_online,
    specialty_ids: row.specialty_ids,
    location_ids: row.location_ids,
    service_ids: row.service_ids,
    created_at: row.created_at,
    updated_at: row.updated_at,
    custom_fields: presentValues(row.custom_field_values, fields, patientCaller),
  };
  // Patient callers get no contact data and no internal identifiers (spec 5.8).
  if (!patientCaller) {
    out.user_id = row.user_id;
    out.contact_email = row.contact_email;
    out.contact_phone = row.contact_phone;
  }
  return out;
}

/** A contact address: blank is none; anything else must be a usable address, stored normalised. */
function contactEmail(v: string | null | undefined): string | null {
  if (typeof v !== 'string' || !v.trim()) return null;
  const checked = normalizeEmail(v);
  if (!checked.ok) throw errors.validation({ contact_email: checked.problem });
  return checked.email;
}

/** BCP 47 tags, canonical (`en-us` -> `en-US`), without duplicates. */
export function languagesOf(tags: string[] | undefined): string[] {
  const out: string[] = [];
  for (const tag of tags ?? []) {
    const canonical = canonicalLanguage(tag);
    if (!canonical) throw errors.validation({ languages: `"${tag}" is not a BCP 47 language tag such as ro or en-GB` });
    if (!out.includes(canonical)) out.push(canonical);
  }
  return out;
}

function languageFilter(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const tag = canonicalLanguage(raw);
  if (!tag) throw errors.queryValidation({ language: 'a BCP 47 language tag such as ro or en-GB' });
  return tag;
}

const uniqueIds = (ids: string[] | undefined) => [...new Set((ids ?? []).map((id) => id.toLowerCase()))].sort();

function profileOf(body: SpecialistBody, current: q.SpecialistRow | null, fields: PublishedField[], country: string | null): q.Profile {
  const text = (v: string | null | undefined) => (typeof v === 'string' ? v.trim() || null : null);
  const display = body.display_name.trim();
  if (!display) throw errors.validation({ display_name: 'must not be blank' });
  const p = {
    display_name: display,
    title: text(body.title),
    bio: text(body.bio),
    contact_email: contactEmail(body.contact_email),
    contact_phone: phoneOf(body.contact_phone, country, 'contact_phone'),
  };
  return {
    ...p,
    custom_field_values: replaceValues(current?.custom_field_values ?? {}, body.custom_fields ?? {}, fields, false),
    languages: languagesOf(body.languages),
    bookable_online: body.bookable_online ?? false,
  };
}

export async function createSpecialist(tx: Queryable, actor: OrgActor, body: SpecialistBody & { user_id: string }) {
  const fields = await publishedFieldsOf(tx, actor.orgId, 'specialist');
  const id = await q.insertSpecialist(
    tx,
    actor.orgId,
    body.user_id.toLowerCase(),
    profileOf(body, null, fields, await clinicCountry(tx, actor.orgId)),
  );
  await q.replaceLinks(tx, actor.orgId, id, { specialty_ids: uniqueIds(body.specialty_ids), location_ids: uniqueIds(body.location_ids) });
  const row = (await q.findSpecialist(tx, actor.orgId, id))!;
  await audit(tx, actor, 'specialist.created', 'specialist', row.id, { user_id: row.user_id });
  await emit(tx, actor.orgId, 'specialist.created', { id: row.id, user_id: row.user_id });
  return present(row, fields, false);
}

export async function getSpecialist(tx: Queryable, orgId: string, id: string, patientCaller: boolean) {
  const row = await readableSpecialist(tx, orgId, id);
  return present(row, await publishedFieldsOf(tx, orgId, 'specialist'), patientCaller);
}

export async function listSpecialists(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  patientCaller: boolean,
  includeDeleted = false,
) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, SPECIALIST_SORT);
  const created = parseDateRange(query, 'created_at');
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  const filter = {
    q: text || undefined,
    created,
    specialtyId: query.specialty_id as string | undefined,
    locationId: query.location_id as string | undefined,
    serviceId: query.service_id as string | undefined,
    language: languageFilter(query.language),
    includeDeleted,
  };
  // The page, its total and the field definitions leave together.
  const [{ rows, total }, fields] = await Promise.all([
    q.listSpecialists(tx, orgId, filter, sort, page),
    publishedFieldsOf(tx, orgId, 'specialist'),
  ]);
  return listEnvelope(
    rows.map((r) => present(r, fields, patientCaller)),
    page,
    total,
  );
}

/**
 * The specialist a caller may edit, locked: specialists.update_org, or the specialist itself with
 * specialists.update_self (403 otherwise, 404 when there is no such profile).
 */
export async function editableSpecialist(tx: Queryable, actor: OrgActor, id: string): Promise<q.SpecialistRow> {
  // Read first, then lock: FOR UPDATE applies the update policy, which hides other profiles from a
  // specialist holding only update_self, and that caller should learn 403, not 404.
  const seen = await q.findSpecialist(tx, actor.orgId, id);
  if (!seen) throw notFound();
  const ctx = actor.ctx;
  const own = seen.user_id === ctx.principalId;
  if (
    !(
      ctx.isSuperadmin ||
      ctx.permissions.includes('specialists.update_org') ||
      (own && ctx.permissions.includes('specialists.update_self'))
    )
  ) {
    throw errors.forbidden('Editing another specialist needs specialists.update_org.');
  }
  const current = await q.findSpecialist(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  return current;
}

/** A specialist the caller can read (RLS decides), or 404. */
export async function readableSpecialist(tx: Queryable, orgId: string, id: string): Promise<q.SpecialistRow> {
  const row = await q.findSpecialist(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

/** PUT: specialists.update_org, or the specialist itself with specialists.update_self. */
export async function putSpecialist(tx: Queryable, actor: OrgActor, id: string, body: SpecialistBody) {
  const current = await editableSpecialist(tx, actor, id);
  const ctx = actor.ctx;
  const fixed: Record<string, string> = {};
  if (body.user_id !== undefined && body.user_id.toLowerCase() !== current.user_id) fixed.user_id = 'a profile stays with its staff member';
  if (body.organization_id !== undefined && body.organization_id.toLowerCase() !== current.organization_id)
    fixed.organization_id = 'a profile stays at its organization';
  if (Object.keys(fixed).length) throw errors.validation(fixed);
  const fields = await publishedFieldsOf(tx, actor.orgId, 'specialist');
  const next = profileOf(body, current, fields, await clinicCountry(tx, actor.orgId));
  const links = { specialty_ids: uniqueIds(body.specialty_ids), location_ids: uniqueIds(body.location_ids) };
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of q.PROFILE_COLUMNS) if (next[k] !== current[k]) changes[k] = { from: current[k], to: next[k] };
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  if (!same(next.custom_field_values, current.custom_field_values))
    changes.custom_fields = { from: current.custom_field_values, to: next.custom_field_values };
  if (!same(next.languages, current.languages)) changes.languages = { from: current.languages, to: next.languages };
  // Where a specialist works, what it practises and whether the public booking page lists it are the
  // clinic's decisions: a specialist editing its own profile (update_self) cannot change them.
  const clinicOwned: Record<string, [unknown, unknown]> = {
    bookable_online: [current.bookable_online, next.bookable_online],
    specialty_ids: [current.specialty_ids, links.specialty_ids],
    location_ids: [current.location_ids, links.location_ids],
  };
  for (const [k, [from, to]] of Object.entries(clinicOwned)) {
    if (same(from, to)) continue;
    if (!(ctx.isSuperadmin || ctx.permissions.includes('specialists.update_org')))
      throw errors.forbidden(`Changing ${k} needs specialists.update_org; send the current value to keep it.`);
    changes[k] = { from, to };
  }
  if (!Object.keys(changes).length) return present(current, fields, false);
  await q.updateSpecialist(tx, actor.orgId, id, next);
  await q.replaceLinks(tx, actor.orgId, id, links);
  const row = (await q.findSpecialist(tx, actor.orgId, id))!;
  // Which fields changed, never their values (names and contact details stay out of the append-only trail).
  await audit(tx, actor, 'specialist.updated', 'specialist', id, { fields: Object.keys(changes) });
  await emit(tx, actor.orgId, 'specialist.updated', { id, fields: Object.keys(changes) });
  return present(row, fields, false);
}

export async function deleteSpecialist(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const row = await q.softDeleteSpecialist(tx, actor.orgId, id);
  if (!row) throw notFound();
  await audit(tx, actor, 'specialist.deleted', 'specialist', id, { user_id: row.user_id });
  await emit(tx, actor.orgId, 'specialist.deleted', { id, user_id: row.user_id });
}
