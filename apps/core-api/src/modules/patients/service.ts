import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, normalizeEmail, parseDateRange, parsePagination, parseSort, type ListEnvelope } from '@clinic/http-kit';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { valueProblem } from '../custom-fields/definition.ts';
import { presentValues, publishedFieldsOf, replaceValues } from '../custom-fields/values.ts';
import type { PublishedField } from '../custom-fields/queries.ts';
import { clinicCountry, e164, phoneProblem } from '../../platform/phone.ts';
import type { OrgActor } from '../../platform/actor.ts';
import * as q from './queries.ts';
import { orgAcceptsPatients, privacyNoticeMissing } from '../consents/queries.ts';
import { PATIENT_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No patient with this id in this organization.');

export interface PatientBody {
  email?: string;
  first_name?: string | null;
  last_name?: string | null;
  date_of_birth?: string | null;
  phone?: string | null;
  notes?: string | null;
  custom_fields?: Record<string, unknown>;
  id?: string;
  user_id?: string;
  organization_id?: string;
}

/**
 * What a caller sees: patient callers get no staff notes, no private fields, no internal user id (spec 5.8).
 * Written out field by field: a list presents every row of its page, and copying the row with object rest
 * and spread cost about 3 us a row (a sixth of a 50-row page's CPU in bench/directory.ts).
 */
export function present(row: q.PatientRow, fields: PublishedField[], patientCaller: boolean): PresentedPatient {
  const out: PresentedPatient = {
    id: row.id,
    organization_id: row.organization_id,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    date_of_birth: row.date_of_birth,
    phone: row.phone,
    profile_shared: row.profile_shared,
    custom_fields: presentValues(row.custom_field_values, fields, patientCaller),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  if (!patientCaller) {
    out.user_id = row.user_id;
    out.notes = row.notes;
  }
  return out;
}

export type PresentedPatient = Omit<q.PatientRow, 'custom_field_values' | 'notes' | 'user_id'> & {
  user_id?: string;
  notes?: string | null;
  custom_fields: Record<string, unknown>;
};

/** The record columns from a body; left-out fields are null (PUT replaces the editable record). */
export function recordOf(
  body: PatientBody,
  current: q.PatientRow | null,
  fields: PublishedField[],
  patientCaller: boolean,
  country: string | null = null,
): q.PatientRecord {
  const problems: Record<string, string> = {};
  const text = (v: string | null | undefined) => (typeof v === 'string' ? v.trim() || null : null);
  const rec = {
    first_name: text(body.first_name),
    last_name: text(body.last_name),
    date_of_birth: text(body.date_of_birth),
    phone: text(body.phone),
    // Staff notes: a patient caller's value is dropped and the stored one kept.
    notes: patientCaller ? (current?.notes ?? null) : text(body.notes),
  };
  if (
    rec.date_of_birth &&
    (valueProblem({ field_type: 'date', options: [] }, rec.date_of_birth) || rec.date_of_birth > new Date().toISOString().slice(0, 10))
  ) {
    problems.date_of_birth = 'must be a past date as YYYY-MM-DD';
  }
  if (rec.phone) {
    const phone = e164(rec.phone, country);
    if (!phone) problems.phone = phoneProblem(country);
    else rec.phone = phone;
  }
  if (Object.keys(problems).length) throw errors.validation(problems);
  const custom_field_values = replaceValues(current?.custom_field_values ?? {}, body.custom_fields ?? {}, fields, patientCaller);
  return { ...rec, custom_field_values };
}

/** POST /v1/patients (patients.onboard): a record for a person named by email, created unsigned-in if new. */
export async function createPatient(tx: Queryable, actor: OrgActor, body: PatientBody & { email: string }) {
  const checked = normalizeEmail(body.email);
  if (!checked.ok) throw errors.validation({ email: checked.problem });
  const email = checked.email;
  if (!(await orgAcceptsPatients(tx, actor.orgId))) throw privacyNoticeMissing();
  const fields = await publishedFieldsOf(tx, actor.orgId, 'patient');
  const rec = recordOf(body, null, fields, false, await clinicCountry(tx, actor.orgId));
  const userId = await q.ensurePatientUser(tx, email);
  if (!userId)
    throw errors.conflict('principal_not_allowed', 'This email belongs to an agent or a service account, which cannot be a patient.');
  const row = await q.insertPatient(tx, actor.orgId, userId, rec, actor.ctx.principalId);
  await audit(tx, actor, 'patient.created', 'patient', row.id, {
    user_id: userId,
    fields: Object.keys(body).filter((k) => k !== 'custom_fields'),
  });
  await emit(tx, actor.orgId, 'patient.created', { id: row.id, user_id: userId });
  return present(row, fields, false);
}

export async function getPatient(tx: Queryable, orgId: string, id: string, patientCaller: boolean) {
  const row = await q.findPatient(tx, orgId, id);
  if (!row) throw notFound();
  return present(row, await publishedFieldsOf(tx, orgId, 'patient'), patientCaller);
}

export async function listPatients(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  includeDeleted = false,
): Promise<ListEnvelope<ReturnType<typeof present>>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, PATIENT_SORT);
  const created = parseDateRange(query, 'created_at');
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  // The field definitions leave with the page's statements: one round trip for the three.
  const [{ rows, total }, fields] = await Promise.all([
    q.listPatients(tx, orgId, { q: text || undefined, created, includeDeleted }, sort, page),
    publishedFieldsOf(tx, orgId, 'patient'),
  ]);
  return listEnvelope(
    rows.map((r) => present(r, fields, false)),
    page,
    total,
  );
}

/**
 * PUT /v1/patients/{id}: staff with patients.update_org, or the patient itself (ownership). For a
 * patient caller the ownership fields (id, user_id, organization_id) and staff notes are dropped
 * silently and private custom fields are unknown keys; staff may not change the ownership fields.
 */
export async function putPatient(tx: Queryable, actor: OrgActor, id: string, body: PatientBody, patientCaller: boolean) {
  const current = await q.findPatient(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  if (!patientCaller) {
    const fixed: Record<string, string> = {};
    if (body.user_id !== undefined && body.user_id.toLowerCase() !== current.user_id)
      fixed.user_id = 'a patient record stays with its person';
    if (body.organization_id !== undefined && body.organization_id.toLowerCase() !== current.organization_id)
      fixed.organization_id = 'a patient record stays at its organization';
    if (Object.keys(fixed).length) throw errors.validation(fixed);
  }
  const fields = await publishedFieldsOf(tx, actor.orgId, 'patient');
  const rec = recordOf(body, current, fields, patientCaller, await clinicCountry(tx, actor.orgId));
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of q.RECORD_COLUMNS) if (rec[k] !== current[k]) changes[k] = { from: current[k], to: rec[k] };
  if (JSON.stringify(rec.custom_field_values) !== JSON.stringify(current.custom_field_values))
    changes.custom_fields = { from: current.custom_field_values, to: rec.custom_field_values };
  if (!Object.keys(changes).length) return present(current, fields, patientCaller);
  const row = await q.updatePatient(tx, actor.orgId, id, rec);
  // Which fields changed, never their values: the audit trail is append-only and must not keep what erasure removes.
  await audit(tx, actor, 'patient.updated', 'patient', id, { fields: Object.keys(changes), by_patient: patientCaller });
  await emit(tx, actor.orgId, 'patient.updated', { id, fields: Object.keys(changes) });
  return present(row, fields, patientCaller);
}

/** Soft delete (patients.delete): hidden from staff without data.view_deleted; forms keep pointing at it. */
export async function deletePatient(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const row = await q.softDeletePatient(tx, actor.orgId, id);
  if (!row) throw notFound();
  await audit(tx, actor, 'patient.deleted', 'patient', id, { user_id: row.user_id });
  await emit(tx, actor.orgId, 'patient.deleted', { id, user_id: row.user_id });
}
