import type { Queryable } from '@clinic/db';
import {
  errors,
  listEnvelope,
  parseDateRange,
  parseFilters,
  parsePagination,
  parseSort,
  type ListEnvelope,
  isUuid,
} from '@clinic/http-kit';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { valueProblem } from '../custom-fields/definition.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import { findTemplate, templateVersions } from '../form-templates/queries.ts';
import type { OrgActor } from '../../platform/actor.ts';
import * as q from './queries.ts';
import { FORM_SORT } from './schemas.ts';

type FormActor = OrgActor & { patientCaller: boolean };
export const formNotFound = () => errors.notFound('No form with this id in this organization.');
export const formSigned = () => errors.conflict('form_signed', 'The form is signed and can no longer change.');

/**
 * A form as its caller may see it. Patient callers (spec 5.8) get neither private fields nor their
 * values, nor internal identifiers (custom field ids, the principals who created and signed it).
 */
export function present(row: q.FormRow, fields: q.FieldSnapshot[], patientCaller: boolean) {
  const { values, created_by_principal_id, signed_by_principal_id, ...rest } = row;
  if (!patientCaller) return { ...rest, created_by_principal_id, signed_by_principal_id, fields, values };
  const shown = fields.filter((f) => !f.private).map(({ custom_field_id: _id, private: _p, ...f }) => f);
  const keys = new Set(shown.map((f) => f.key));
  return { ...rest, fields: shown, values: Object.fromEntries(Object.entries(values).filter(([k]) => keys.has(k))) };
}

/** Merges `input` into `current`, each value checked against the form's own snapshot (not the live field). */
function mergeValues(current: Record<string, unknown>, input: Record<string, unknown>, fields: q.FieldSnapshot[], patientCaller: boolean) {
  const byKey = new Map(fields.filter((f) => !(patientCaller && f.private)).map((f) => [f.key, f]));
  const problems: Record<string, string> = {};
  const out = { ...current };
  for (const [key, value] of Object.entries(input)) {
    const f = byKey.get(key);
    if (!f) {
      problems[`values.${key}`] = 'is not a field of this form';
      continue;
    }
    const why = valueProblem(f, value);
    if (why) problems[`values.${key}`] = why;
    else if (value === null) delete out[key];
    else out[key] = value;
  }
  if (Object.keys(problems).length) throw errors.validation(problems);
  return out;
}

/**
 * POST /v1/forms (forms.create): made from the template's latest PUBLISHED version; each field is
 * snapshotted at its latest published version (spec 2.10), in the same transaction as the form.
 */
export async function createForm(
  tx: Queryable,
  actor: FormActor,
  body: { form_template_id: string; patient_id: string; values?: Record<string, unknown> },
) {
  const templateId = body.form_template_id.toLowerCase();
  const patientId = body.patient_id.toLowerCase();
  const problems: Record<string, string> = {};
  const template = await findTemplate(tx, actor.orgId, templateId);
  const version = template ? await templateVersions.find(tx, actor.orgId, templateId, null) : null;
  if (!version) problems.form_template_id = 'no live form template with this id in this organization';
  if (!(await q.livePatientExists(tx, actor.orgId, patientId))) problems.patient_id = 'no patient with this id in this organization';
  if (Object.keys(problems).length) throw errors.validation(problems);
  const spec = version!.template.fields;
  const published = new Map(
    (await latestPublished(tx, actor.orgId, { entityType: 'form', ids: spec.map((f) => f.custom_field_id) })).map((f) => [
      f.custom_field_id,
      f,
    ]),
  );
  const gone = spec.filter((f) => !published.has(f.custom_field_id)).map((f) => f.custom_field_id);
  if (gone.length) {
    throw errors.conflict(
      'template_out_of_date',
      `Template version ${version!.version} uses deleted custom fields (${gone.join(', ')}); publish a new version of the template.`,
    );
  }
  const snapshots: q.FieldSnapshot[] = spec.map((s) => {
    const f = published.get(s.custom_field_id)!;
    return {
      custom_field_id: f.custom_field_id,
      version: f.version,
      key: f.key,
      label: f.label,
      field_type: f.field_type,
      options: f.options,
      private: f.private,
      required: s.required,
    };
  });
  if (new Set(snapshots.map((s) => s.key)).size !== snapshots.length) {
    throw errors.conflict('template_out_of_date', 'Two fields of this template now share a key; publish a new version of the template.');
  }
  const values = mergeValues({}, body.values ?? {}, snapshots, false);
  const row = await q.insertForm(tx, actor.orgId, {
    patientId,
    templateId,
    templateVersion: version!.version,
    title: version!.template.name,
    values,
    principalId: actor.ctx.principalId,
  });
  await q.insertSnapshots(tx, actor.orgId, row.id, snapshots);
  await audit(tx, actor, 'form.created', 'form', row.id, {
    patient_id: patientId,
    form_template_id: templateId,
    template_version: version!.version,
  });
  await emit(tx, actor.orgId, 'form.created', {
    id: row.id,
    patient_id: patientId,
    form_template_id: templateId,
    template_version: version!.version,
  });
  return present(row, snapshots, false);
}

export async function loadForm(tx: Queryable, orgId: string, id: string, opts: { forUpdate?: boolean } = {}) {
  // Both statements at once: pipelined, they cost one round trip (the snapshots of a missing form are none).
  const [row, fields] = await Promise.all([q.findForm(tx, orgId, id, opts), q.findSnapshots(tx, orgId, id)]);
  if (!row) throw formNotFound();
  return { row, fields };
}

export async function getForm(tx: Queryable, orgId: string, id: string, patientCaller: boolean) {
  const { row, fields } = await loadForm(tx, orgId, id);
  return present(row, fields, patientCaller);
}

/** Staff with forms.view_org see the organization's forms; a patient its own (row-level security decides). */
export async function listForms(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  includeDeleted = false,
): Promise<ListEnvelope<Omit<q.FormRow, 'values' | 'organization_id' | 'created_by_principal_id' | 'signed_by_principal_id'>>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, FORM_SORT);
  const created = parseDateRange(query, 'created_at');
  const f = parseFilters(query, ['patient_id', 'status', 'form_template_id'] as const);
  const bad: Record<string, string> = {};
  for (const k of ['patient_id', 'form_template_id'] as const) if (f[k] && !isUuid(f[k]!)) bad[k] = 'must be a uuid';
  if (f.status && f.status !== 'pending' && f.status !== 'signed') bad.status = 'must be pending or signed';
  if (Object.keys(bad).length) throw errors.queryValidation(bad);
  const { rows, total } = await q.listForms(
    tx,
    orgId,
    { patientId: f.patient_id, status: f.status, templateId: f.form_template_id, created, includeDeleted },
    sort,
    page,
  );
  return listEnvelope(
    rows.map(({ values: _v, organization_id: _o, created_by_principal_id: _c, signed_by_principal_id: _s, ...r }) => r),
    page,
    total,
  );
}

/**
 * PATCH /v1/forms/{id}: fills values (merged; null clears), validated against the form's snapshot.
 * Staff need forms.fill_org; the patient fills its own form. A patient's ownership fields are
 * dropped silently; staff cannot move a form to another patient.
 */
export async function fillForm(
  tx: Queryable,
  actor: FormActor,
  id: string,
  body: { values: Record<string, unknown>; patient_id?: string; organization_id?: string; status?: string },
) {
  const { row, fields } = await loadForm(tx, actor.orgId, id, { forUpdate: true });
  if (!actor.patientCaller) {
    const bad: Record<string, string> = {};
    if (body.patient_id !== undefined && body.patient_id.toLowerCase() !== row.patient_id) bad.patient_id = 'a form stays with its patient';
    if (body.organization_id !== undefined && body.organization_id.toLowerCase() !== row.organization_id)
      bad.organization_id = 'a form stays at its organization';
    if (body.status !== undefined && body.status !== row.status) bad.status = 'sign with POST /v1/forms/{id}/sign';
    if (Object.keys(bad).length) throw errors.validation(bad);
  }
  if (row.status === 'signed') throw formSigned();
  const values = mergeValues(row.values, body.values, fields, actor.patientCaller);
  if (JSON.stringify(values) === JSON.stringify(row.values)) return present(row, fields, actor.patientCaller);
  const saved = await q.saveValues(tx, actor.orgId, id, values);
  await audit(tx, actor, 'form.filled', 'form', id, { keys: Object.keys(body.values), by_patient: actor.patientCaller });
  await emit(tx, actor.orgId, 'form.updated', { id, patient_id: row.patient_id });
  return present(saved, fields, actor.patientCaller);
}

/** POST /v1/forms/{id}/sign: pending -> signed, once (409 already_signed); required fields must be filled. */
export async function signForm(tx: Queryable, actor: FormActor, id: string) {
  const { row, fields } = await loadForm(tx, actor.orgId, id, { forUpdate: true });
  if (row.status === 'signed') throw errors.conflict('already_signed', 'The form is already signed.');
  const missing = fields.filter(
    (f) => f.required && (row.values[f.key] === undefined || row.values[f.key] === null || row.values[f.key] === ''),
  );
  if (missing.length)
    throw errors.validation(
      Object.fromEntries(missing.map((f) => [`values.${f.key}`, 'is required before signing'])),
      'Required fields are empty.',
    );
  const signed = await q.signForm(tx, actor.orgId, id, actor.ctx.principalId);
  await audit(tx, actor, 'form.signed', 'form', id, { patient_id: row.patient_id, by_patient: actor.patientCaller });
  await emit(tx, actor.orgId, 'form.signed', { id, patient_id: row.patient_id, form_template_id: row.form_template_id });
  return present(signed, fields, actor.patientCaller);
}

/** DELETE /v1/forms/{id} (forms.delete_unsigned): soft; a signed form is never deleted (409). */
export async function deleteForm(tx: Queryable, actor: FormActor, id: string): Promise<void> {
  const { row } = await loadForm(tx, actor.orgId, id, { forUpdate: true });
  if (row.status === 'signed') throw formSigned();
  await q.softDeleteForm(tx, actor.orgId, id);
  await audit(tx, actor, 'form.deleted', 'form', id, { patient_id: row.patient_id });
  await emit(tx, actor.orgId, 'form.deleted', { id, patient_id: row.patient_id });
}
