import type { Queryable } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import { auditErasure } from '../me/account-service.ts';
import { erasedObjectKeys, eraseUserRows } from '../me/account-queries.ts';
import { recordChange } from '../../platform/audit.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import type { Actor } from '../../platform/actor.ts';
import {
  activeRestriction,
  exportFile,
  findExportJob,
  gdprPatientUserId,
  insertExportJob,
  insertRestriction,
  liftRestriction,
  userExists,
  type JobRow,
  type RestrictionRow,
} from './queries.ts';

export interface SubjectInput {
  patient_id?: string | undefined;
  user_id?: string | undefined;
}

/** Whose data, and in which scope: a clinic's (organization id) or the whole platform (null). */
export interface Subject {
  userId: string;
  orgId: string | null;
  onBehalf: 'self' | 'organization' | 'platform';
}

/**
 * Who may act for whom (docs/decisions.md, "Consent"):
 * - no subject, or user_id = the caller: the data subject itself, platform-wide;
 * - patient_id: a patients row (live or not) of the organization in scope, by holders of `code` there
 *   (or superadmins with that organization in scope); the clinic's part of the data only;
 * - user_id of someone else: superadmins only (the platform operator), platform-wide.
 */
async function subjectOf(tx: Queryable, actor: Actor, input: SubjectInput, code: string): Promise<Subject> {
  const ctx = actor.ctx;
  if (input.patient_id && input.user_id) throw errors.validation({ user_id: 'give patient_id or user_id, not both' });
  if (input.patient_id) {
    if (!ctx.orgId || !hasPermission(ctx, code))
      throw errors.forbidden(`Acting for a clinic's patient needs the ${code} permission in the organization (X-Organization-ID).`);
    const userId = await gdprPatientUserId(tx, input.patient_id.toLowerCase());
    if (!userId) throw errors.notFound('No patient with this id in this organization.');
    return { userId, orgId: ctx.orgId, onBehalf: 'organization' };
  }
  const target = input.user_id?.toLowerCase();
  if (!target || target === ctx.principalId) return { userId: ctx.principalId, orgId: null, onBehalf: 'self' };
  if (!ctx.isSuperadmin)
    throw errors.forbidden('Only the data subject itself, or a platform superadmin, may name a user_id; clinics name their patient_id.');
  if (!(await userExists(tx, target))) throw errors.notFound('No user with this id.');
  return { userId: target, orgId: null, onBehalf: 'platform' };
}

// ---------------------------------------------------------------------------------------------
// Restriction (GDPR art. 18)

export interface RestrictInput extends SubjectInput {
  restricted?: boolean | undefined;
  reason?: string | null | undefined;
}

/**
 * POST /v1/gdpr/restrict: records (restricted true, the default) or lifts (false) a restriction of
 * processing in the subject's scope. Restricting twice keeps the active row; lifting when none is
 * active is 404. Audited as gdpr.processing_restricted / gdpr.restriction_lifted.
 */
export async function restrictProcessing(tx: Queryable, actor: Actor, input: RestrictInput): Promise<RestrictionRow> {
  const s = await subjectOf(tx, actor, input, 'gdpr.restrict_processing');
  const current = await activeRestriction(tx, s.userId, s.orgId);
  const restrict = input.restricted ?? true;
  let row: RestrictionRow;
  if (restrict) {
    if (current) return current;
    const inserted = await insertRestriction(tx, {
      userId: s.userId,
      orgId: s.orgId,
      reason: input.reason ?? null,
      by: actor.ctx.principalId,
    });
    if (!inserted) return (await activeRestriction(tx, s.userId, s.orgId))!;
    row = inserted;
  } else {
    if (!current) throw errors.notFound('No active restriction of processing for this subject in this scope.');
    row = await liftRestriction(tx, current.id, actor.ctx.principalId);
  }
  await recordChange(
    tx,
    actor,
    restrict ? 'gdpr.processing_restricted' : 'gdpr.restriction_lifted',
    { type: 'user', id: s.userId, organizationId: s.orgId },
    { restriction_id: row.id, on_behalf: s.onBehalf, reason: input.reason ?? null },
  );
  return row;
}

/** The 403 of a feature gate for a person whose data may not be processed (GDPR art. 18). */
export function processingRestricted(purpose: string): AppError {
  return new AppError(
    403,
    'processing_restricted',
    `Processing of this person's data is restricted (GDPR art. 18); the ${purpose} feature is unavailable until the restriction is lifted.`,
    {
      extra: { missing_purpose: purpose },
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Erasure

export interface EraseOutcome {
  user_id: string;
  organization_id: string | null;
  anonymised: boolean;
  withdrawn_consents: number;
  patient_records_deleted: number;
  memberships_removed: number;
}

/**
 * POST /v1/gdpr/erase: the subject itself or a superadmin erase the whole account (as DELETE
 * /v1/me); a clinic (gdpr.erase_data) erases its part, and the account only when nothing else links
 * the person to the platform. Ledger and audit trail are kept (ids, never emails). Records and
 * unsigned forms are emptied; signed forms are retained (docs/decisions.md, GDPR erasure of records
 * and forms), counted in the gdpr.erased entry; the person's telemetry goes (migration 0059). `assetKeys`
 * names the objects let go (form files, pose replays): the caller deletes them after commit (the orphan
 * sweeps catch any it misses).
 */
export async function eraseData(tx: Queryable, actor: Actor, input: SubjectInput): Promise<{ outcome: EraseOutcome; assetKeys: string[] }> {
  const s = await subjectOf(tx, actor, input, 'gdpr.erase_data');
  const r = await eraseUserRows(tx, s.userId, s.orgId, 'gdpr_erasure');
  await auditErasure(tx, actor, s.userId, r, 'user.erased', 'gdpr_erasure');
  const outcome: EraseOutcome = {
    user_id: s.userId,
    organization_id: s.orgId,
    anonymised: r.anonymised,
    withdrawn_consents: r.withdrawn.length,
    patient_records_deleted: r.patients_deleted.length,
    memberships_removed: r.memberships_removed.length,
  };

  await recordChange(
    tx,
    actor,
    'gdpr.erased',
    { type: 'user', id: s.userId, organizationId: s.orgId },
    {
      on_behalf: s.onBehalf,
      ...outcome,
      patient_records_cleared: r.patient_records_cleared?.length ?? 0,
      forms_erased: r.forms_erased?.length ?? 0,
      form_files_removed: r.form_files_removed?.length ?? 0,
      specialist_profiles_removed: r.specialists_removed?.length ?? 0,
      exercise_sessions_removed: r.exercise_sessions_removed?.length ?? 0,
      media_sessions_removed: r.media_sessions_removed ?? 0,
      appointment_files_removed: r.appointment_files_removed?.length ?? 0,
      appointment_reviews_removed: r.appointment_reviews_removed ?? 0,
      appointments_cancelled: r.appointments_cancelled?.length ?? 0,
      appointments_cleared: r.appointments_cleared ?? 0,
      documents_removed: r.documents_removed?.length ?? 0,
      plan_sessions_removed: r.plan_sessions_removed ?? 0,
      treatment_enrollments_removed: r.treatment_enrollments_removed?.length ?? 0,
      treatment_plans_removed: r.treatment_plans_removed?.length ?? 0,
      messages_cleared: r.messages_cleared ?? 0,
      automation_runs_cancelled: r.automation_runs_cancelled ?? 0,
      patient_tags_removed: r.patient_tags_removed ?? 0,
      segment_memberships_removed: r.segment_memberships_removed ?? 0,
      // Ids, so that the clinic can tell the person which records it keeps and why (art. 12(4)).
      signed_forms_retained: (r.signed_forms_retained ?? []).map((f) => f.id),
      documents_retained: (r.documents_retained ?? []).map((d) => d.id),
    },
  );
  return { outcome, assetKeys: erasedObjectKeys(r) };
}

// ---------------------------------------------------------------------------------------------
// Export

export interface ExportView {
  id: string;
  status: JobRow['status'];
  progress: number;
  subject_user_id: string;
  organization_id: string | null;
  requested_by_principal_id: string;
  error: string | null;
  file: JobRow['result'];
  download_url: string | null;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export function exportView(j: JobRow): ExportView {
  return {
    id: j.id,
    status: j.status,
    progress: j.progress,
    subject_user_id: j.payload.subject_user_id,
    organization_id: j.organization_id,
    requested_by_principal_id: j.requested_by_principal_id,
    error: j.error,
    file: j.result,
    download_url: j.status === 'done' ? `/v1/gdpr/exports/${j.id}/download` : null,
    expires_at: j.expires_at,
    created_at: j.created_at,
    updated_at: j.updated_at,
  };
}

/** POST /v1/gdpr/export: queues the archive job (202); the runner builds it. Audited as gdpr.export_requested. */
export async function requestExport(tx: Queryable, actor: Actor, input: SubjectInput): Promise<ExportView> {
  const s = await subjectOf(tx, actor, input, 'gdpr.export_data');
  const job = await insertExportJob(tx, { orgId: s.orgId, by: actor.ctx.principalId, subjectUserId: s.userId });
  await recordChange(
    tx,
    actor,
    'gdpr.export_requested',
    { type: 'user', id: s.userId, organizationId: s.orgId },
    { job_id: job.id, on_behalf: s.onBehalf },
  );
  return exportView(job);
}

export async function getExport(tx: Queryable, id: string): Promise<ExportView> {
  const job = await findExportJob(tx, id);
  if (!job) throw errors.notFound('No export job with this id.');
  return exportView(job);
}

/** The archive of a finished job: 409 export_not_ready before, 410 export_expired after its expiry. Audited. */
export async function downloadExport(tx: Queryable, actor: Actor, id: string): Promise<{ fileName: string; body: Buffer }> {
  const job = await findExportJob(tx, id);
  if (!job) throw errors.notFound('No export job with this id.');
  if (job.status !== 'done') {
    throw errors.conflict(
      'export_not_ready',
      job.status === 'failed'
        ? 'This export failed; request a new one.'
        : `This export is ${job.status} (${job.progress}%); poll GET /v1/gdpr/exports/${id}.`,
    );
  }
  if (job.expires_at && job.expires_at.getTime() < Date.now())
    throw new AppError(410, 'export_expired', 'This export has expired; request a new one.');
  const body = (await exportFile(tx, id))!;
  await recordChange(
    tx,
    actor,
    'gdpr.export_downloaded',
    { type: 'user', id: job.payload.subject_user_id, organizationId: job.organization_id },
    { job_id: id },
  );
  return { fileName: job.result?.file_name ?? `gdpr-export-${id}.json`, body };
}
