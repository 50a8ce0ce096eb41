import { pgErrorCode, type Queryable } from '@clinic/db';
import { AppError, errors, type ListEnvelope, listEnvelope, parseDateRange, parsePagination, parseSort, isUuid } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { versionLifecycle } from '../../platform/versioned/service.ts';
import { emit } from '../events/emit.ts';
import { checkContent, type ContentInput, totalDays } from './content.ts';
import * as q from './queries.ts';
import { INTENDED_USE, INTENDED_USE_VERSION, PLAN_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No treatment plan with this id in this organization.');

const contentOf = (r: q.PlanContent): q.PlanContent => ({
  name: r.name,
  description: r.description,
  phases: r.phases,
  required_consents: r.required_consents,
  self_report: r.self_report,
});

/** A plan as responses show it. */
export const view = (r: q.PlanRow) => ({ ...r, total_days: totalDays(r.phases) });

const lifecycle = versionLifecycle<q.PlanRow, 'plan', q.PlanContent>({
  entity: 'treatment_plan',
  noun: 'treatment plan',
  shortNoun: 'plan',
  notFound,
  versions: q.planVersions,
  snapshotKey: 'plan',
  find: q.findPlan,
  save: q.savePlan,
  contentOf,
  // What the draft names may have changed since it was saved (an exercise archived, a purpose withdrawn from use).
  recheck: (tx, orgId, content) => checkContent(tx, orgId, content),
  eventData: (row) => ({ kind: row.kind, patient_id: row.patient_id }),
  auditsContent: (row) => row.kind === 'library',
});

const approvalRequired = () =>
  errors.conflict('approval_required', 'This organization requires a second clinician to approve a draft before it is published.');

/**
 * Publish, rollback and the version reads of the shared lifecycle (platform/versioned). Publishing where the
 * organization requires a second clinician needs the draft approved: checked here for a clear answer, and
 * by the database (the version's trigger), which a concurrent change of the draft or of the setting cannot pass.
 */
export const planLifecycle = {
  async publish(tx: Queryable, actor: OrgActor, id: string) {
    const settings = await q.findSettings(tx, actor.orgId);
    const current = await q.findPlan(tx, actor.orgId, id, { forUpdate: true });
    if (current && !current.published && settings.require_plan_approval && !current.approved_by_principal_id) throw approvalRequired();
    try {
      return view(await lifecycle.publish(tx, actor, id));
    } catch (err) {
      if (pgErrorCode(err) === '23514' && String((err as Error).message).startsWith('approval_required')) throw approvalRequired();
      throw err;
    }
  },
  rollback: async (tx: Queryable, actor: OrgActor, id: string, version: number) => view(await lifecycle.rollback(tx, actor, id, version)),
  listVersions: lifecycle.listVersions,
  getVersion: lifecycle.getVersion,
};

export async function getPlan(tx: Queryable, orgId: string, id: string) {
  const row = await q.findPlan(tx, orgId, id);
  if (!row) throw notFound();
  return view(row);
}

export async function listPlans(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  includeDeleted = false,
): Promise<ListEnvelope<ReturnType<typeof view>>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, PLAN_SORT);
  const created = parseDateRange(query, 'created_at');
  const kind = query.kind === 'library' || query.kind === 'patient' ? query.kind : undefined;
  const patientId = isUuid(query.patient_id) ? query.patient_id.toLowerCase() : undefined;
  if (query.patient_id !== undefined && query.patient_id !== '' && !patientId)
    throw errors.queryValidation({ patient_id: 'must be a uuid' });
  const published = query.published === 'true' ? true : query.published === 'false' ? false : undefined;
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await q.listPlans(
    tx,
    orgId,
    { kind, patientId, published, q: text || undefined, created, includeDeleted },
    sort,
    page,
  );
  return listEnvelope(rows.map(view), page, total);
}

/** POST /v1/treatment-plans: a draft (version 0), a library plan or, with patient_id, that patient's. */
export async function createPlan(tx: Queryable, actor: OrgActor, body: ContentInput & { patient_id?: string | undefined }) {
  const content = await checkContent(tx, actor.orgId, body);
  const patientId = body.patient_id?.toLowerCase() ?? null;
  if (patientId && !(await q.livePatient(tx, actor.orgId, patientId)))
    throw errors.validation({ patient_id: 'no patient record with this id at the organization' });
  const row = await q.insertPlan(tx, actor.orgId, {
    ...content,
    kind: patientId ? 'patient' : 'library',
    patient_id: patientId,
    created_by: actor.ctx.principalId,
  });
  await created(tx, actor, row, {});
  return view(row);
}

async function created(tx: Queryable, actor: OrgActor, row: q.PlanRow, source: Record<string, unknown>): Promise<void> {
  // A patient's plan is about that person, and so may be a library draft promoted from one: the append-only
  // trail, which erasure cannot reach, names them by id only (docs/decisions.md, "Telerehab"). A library
  // plan's content is the clinic's (a promoted one's is logged when it is published, reviewed).
  await audit(tx, actor, 'treatment_plan.created', 'treatment_plan', row.id, {
    kind: row.kind,
    patient_id: row.patient_id,
    ...source,
    ...(row.kind === 'library' && source.source_kind !== 'promote' ? { plan: contentOf(row) } : {}),
  });
  await emit(tx, actor.orgId, 'treatment_plan.created', { id: row.id, kind: row.kind, patient_id: row.patient_id, ...source });
}

const notDraft = () =>
  errors.conflict(
    'plan_not_draft',
    'Only a draft changes (spec 3.5); this plan is published. Make a draft from a version with POST /v1/treatment-plans/{id}/rollback.',
  );

/** PATCH: edits the draft in place; a published plan is 409 plan_not_draft (spec 3.5: only drafts may be updated). */
export async function updatePlan(tx: Queryable, actor: OrgActor, id: string, body: Partial<ContentInput>) {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findPlan(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  if (current.published) throw notDraft();
  const before = contentOf(current);
  const next = await checkContent(tx, actor.orgId, {
    name: body.name ?? before.name,
    description: body.description !== undefined ? body.description : before.description,
    phases: body.phases ?? before.phases,
    required_consents: body.required_consents ?? before.required_consents,
    self_report: body.self_report ?? before.self_report,
  });
  const changed = (Object.keys(next) as (keyof q.PlanContent)[]).filter((k) => JSON.stringify(next[k]) !== JSON.stringify(before[k]));
  if (!changed.length) return view(current);
  const row = await q.savePlan(tx, actor.orgId, id, next, { version: current.version, published: false, publishedNow: false });
  await audit(tx, actor, 'treatment_plan.updated', 'treatment_plan', id, {
    version: row.version,
    patient_id: row.patient_id,
    changed,
    ...(row.kind === 'library' ? Object.fromEntries(changed.map((k) => [k, { from: before[k], to: next[k] }])) : {}),
  });
  await emit(tx, actor.orgId, 'treatment_plan.updated', { id, version: row.version, published: false });
  return view(row);
}

/**
 * POST /{id}/approve: the second clinician (treatment_plans.approve, not the draft's author) approves the
 * draft as it is; any later change of the content drops the approval (a database trigger).
 */
export async function approvePlan(tx: Queryable, actor: OrgActor, id: string) {
  const current = await q.findPlan(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  if (current.published) throw errors.conflict('plan_not_draft', 'There is no draft to approve: the plan is published as it is.');
  if (current.draft_author_principal_id === actor.ctx.principalId)
    throw new AppError(403, 'second_clinician_required', 'A second clinician approves a draft: the clinician who last changed it cannot.');
  if (current.approved_by_principal_id === actor.ctx.principalId) return view(current);
  const row = await q.approvePlan(tx, actor.orgId, id, actor.ctx.principalId);
  await audit(tx, actor, 'treatment_plan.approved', 'treatment_plan', id, { version: row.version, author: row.draft_author_principal_id });
  await emit(tx, actor.orgId, 'treatment_plan.approved', { id, version: row.version });
  return view(row);
}

export async function deletePlan(tx: Queryable, actor: OrgActor, id: string, activeEnrollments: (tx: Queryable) => Promise<number>) {
  const row = await q.findPlan(tx, actor.orgId, id, { forUpdate: true });
  if (!row) throw notFound();
  const active = await activeEnrollments(tx);
  if (active > 0)
    throw errors.conflict(
      'plan_in_use',
      `${active} enrollment(s) in this plan are active or paused: cancel them before deleting the plan.`,
    );
  await q.softDeletePlan(tx, actor.orgId, id);
  await audit(tx, actor, 'treatment_plan.deleted', 'treatment_plan', id, { kind: row.kind, version: row.version });
  await emit(tx, actor.orgId, 'treatment_plan.deleted', { id });
}

const copyName = (name: string, given: string | undefined) => (given?.trim() || `${name} (copy)`).slice(0, 200).trim();

/** POST /{id}/duplicate: a new draft in the same organization with the plan's current content, of the same kind and patient. */
export async function duplicatePlan(tx: Queryable, actor: OrgActor, id: string, body: { name?: string | undefined }) {
  const src = await q.findPlan(tx, actor.orgId, id);
  if (!src) throw notFound();
  const content = await checkContent(tx, actor.orgId, { ...contentOf(src), name: copyName(src.name, body.name) });
  const source = { plan_id: src.id, version: src.published ? src.version : null, kind: 'duplicate' as const };
  const row = await q.insertPlan(tx, actor.orgId, {
    ...content,
    kind: src.kind,
    patient_id: src.patient_id,
    created_by: actor.ctx.principalId,
    source,
  });
  await created(tx, actor, row, { source_plan_id: src.id, source_version: source.version, source_kind: 'duplicate' });
  return view(row);
}

/** A published version of the plan: the one asked for, or the latest. */
async function publishedVersion(tx: Queryable, orgId: string, src: q.PlanRow, version: number | undefined) {
  if (src.version === 0) throw errors.conflict('plan_not_published', 'The plan has no published version yet.');
  const v = await q.planVersions.find(tx, orgId, src.id, version ?? null);
  if (!v) throw errors.notFound(`This treatment plan has no version ${version}.`);
  return v;
}

/** POST /{id}/clone: a published version of a library plan becomes a draft plan of one patient. */
export async function clonePlan(
  tx: Queryable,
  actor: OrgActor,
  id: string,
  body: { patient_id: string; version?: number | undefined; name?: string | undefined },
) {
  const src = await q.findPlan(tx, actor.orgId, id);
  if (!src) throw notFound();
  if (src.kind !== 'library')
    throw errors.conflict('not_a_library_plan', "Only library plans are cloned for a patient; duplicate a patient's plan instead.");
  const v = await publishedVersion(tx, actor.orgId, src, body.version);
  const patientId = body.patient_id.toLowerCase();
  if (!(await q.livePatient(tx, actor.orgId, patientId)))
    throw errors.validation({ patient_id: 'no patient record with this id at the organization' });
  const content = await checkContent(tx, actor.orgId, { ...v.plan, name: body.name?.trim() || v.plan.name });
  const source = { plan_id: src.id, version: v.version, kind: 'clone' as const };
  const row = await q.insertPlan(tx, actor.orgId, {
    ...content,
    kind: 'patient',
    patient_id: patientId,
    created_by: actor.ctx.principalId,
    source,
  });
  await created(tx, actor, row, { source_plan_id: src.id, source_version: v.version, source_kind: 'clone' });
  return view(row);
}

/** POST /{id}/promote (treatment_plans.promote_to_org): a published version of a patient's plan becomes a library draft; the patient's plan stays. */
export async function promotePlan(
  tx: Queryable,
  actor: OrgActor,
  id: string,
  body: { version?: number | undefined; name?: string | undefined },
) {
  const src = await q.findPlan(tx, actor.orgId, id);
  if (!src) throw notFound();
  if (src.kind !== 'patient') throw errors.conflict('not_a_patient_plan', 'This is a library plan already.');
  const v = await publishedVersion(tx, actor.orgId, src, body.version);
  const content = await checkContent(tx, actor.orgId, { ...v.plan, name: body.name?.trim() || v.plan.name });
  const source = { plan_id: src.id, version: v.version, kind: 'promote' as const };
  const row = await q.insertPlan(tx, actor.orgId, {
    ...content,
    kind: 'library',
    patient_id: null,
    created_by: actor.ctx.principalId,
    source,
  });
  await created(tx, actor, row, { source_plan_id: src.id, source_version: v.version, source_kind: 'promote' });
  return view(row);
}

// ---------------------------------------------------------------------------------------------
// Telerehab settings (the regulatory boundary, docs/telerehab.md)

export function settingsView(s: q.SettingsRow) {
  return {
    organization_id: s.organization_id,
    enabled: s.enabled,
    require_plan_approval: s.require_plan_approval,
    intended_use: {
      version: INTENDED_USE_VERSION,
      text: INTENDED_USE,
      accepted_version: s.intended_use_version,
      accepted_at: s.intended_use_accepted_at,
      accepted_by_principal_id: s.intended_use_accepted_by,
    },
    updated_at: s.updated_at,
  };
}

export async function getSettings(tx: Queryable, orgId: string) {
  return settingsView(await q.findSettings(tx, orgId));
}

/**
 * PUT /v1/treatment-plans/settings: enabling telerehab needs the current intended-use statement accepted
 * (in this request or before): the outputs are served under it.
 */
export async function updateSettings(
  tx: Queryable,
  actor: OrgActor,
  body: { enabled?: boolean | undefined; require_plan_approval?: boolean | undefined; accept_intended_use?: true | undefined },
) {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const before = await q.lockSettings(tx, actor.orgId);
  const enabled = body.enabled ?? before.enabled;
  const accept = body.accept_intended_use ? INTENDED_USE_VERSION : null;
  if (enabled && !before.enabled && before.intended_use_version !== INTENDED_USE_VERSION && !accept)
    throw errors.validation(
      { accept_intended_use: `must be true to enable telerehab: accept the intended-use statement ${INTENDED_USE_VERSION}` },
      'Enabling telerehab needs the intended-use statement accepted.',
    );
  const next = { enabled, require_plan_approval: body.require_plan_approval ?? before.require_plan_approval, accept };
  await q.saveSettings(tx, actor.orgId, next, actor.ctx.principalId);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  if (next.enabled !== before.enabled) changes.enabled = { from: before.enabled, to: next.enabled };
  if (next.require_plan_approval !== before.require_plan_approval)
    changes.require_plan_approval = { from: before.require_plan_approval, to: next.require_plan_approval };
  if (accept) changes.intended_use = { from: before.intended_use_version, to: accept };
  if (Object.keys(changes).length) await audit(tx, actor, 'telerehab_settings.updated', 'telerehab_settings', actor.orgId, { changes });
  return getSettings(tx, actor.orgId);
}

/** The regulatory boundary: clinical decision-support outputs only where the organization enabled telerehab. */
export async function requireTelerehab(tx: Queryable, orgId: string): Promise<q.SettingsRow> {
  const s = await q.findSettings(tx, orgId);
  if (!s.enabled)
    throw new AppError(
      403,
      'telerehab_disabled',
      'This organization has not enabled telerehab: form scores, progress and analytics are not served (PUT /v1/treatment-plans/settings).',
    );
  return s;
}
