import type { AssetStore } from '@clinic/assets';
import type { FastifyBaseLogger } from 'fastify';
import type { Queryable } from '@clinic/db';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { Actor } from '../../platform/actor.ts';
import { eraseUserRows, leaveClinicRows, type EraseResult, type WithdrawnRow } from './account-queries.ts';

/** One consent_changed entry per withdrawn ledger row (spec 6.2), in the row's own scope. */
export async function auditWithdrawals(tx: Queryable, actor: Actor, rows: WithdrawnRow[], cascade: string): Promise<void> {
  for (const row of rows) {
    await recordChange(
      tx,
      actor,
      'consent_changed',
      { type: 'consent', id: row.id, organizationId: row.organization_id },
      {
        change: 'withdrawn',
        cascade,
        patient_profile_id: row.patient_profile_id,
        purpose_code: row.purpose_code,
        purpose_version: row.purpose_version,
        source: row.source,
        withdrawal_reason: row.withdrawal_reason,
      },
    );
  }
}

export interface LeaveClinicResult {
  organization_id: string;
  patient_id: string;
  withdrawn_consent_ids: string[];
}

/**
 * POST /v1/me/clinics/{org_id}/leave (spec 3.2): in one transaction, the caller's patients row there
 * is soft-deleted and every consent it holds there withdrawn (org_terms and org_privacy_notice
 * included, reason left_clinic); one consent_changed entry per row and a patient.left entry.
 */
export async function leaveClinic(tx: Queryable, actor: Actor, orgId: string): Promise<LeaveClinicResult> {
  const result = await leaveClinicRows(tx, orgId);
  await auditWithdrawals(tx, actor, result.withdrawn, 'left_clinic');
  await recordChange(
    tx,
    actor,
    'patient.left',
    { type: 'patient', id: result.patient_id, organizationId: orgId },
    { user_id: actor.ctx.principalId, withdrawn_consents: result.withdrawn.length },
  );
  await emitEvent(tx, { organizationId: orgId, type: 'patient.left', data: { organization_id: orgId, patient_id: result.patient_id } });
  return { organization_id: orgId, patient_id: result.patient_id, withdrawn_consent_ids: result.withdrawn.map((w) => w.id) };
}

/**
 * The audit entries of an erasure: consent_changed per withdrawn row, patient.deleted and
 * member.removed in each organization concerned (so that each clinic's log shows it), and
 * `action` (user.deleted, user.erased) on the user in platform scope when the account was anonymised.
 */
export async function auditErasure(
  tx: Queryable,
  actor: Actor,
  userId: string,
  r: EraseResult,
  action: string,
  cascade: string,
): Promise<void> {
  await auditWithdrawals(tx, actor, r.withdrawn, cascade);
  for (const p of r.patients_deleted) {
    await recordChange(
      tx,
      actor,
      'patient.deleted',
      { type: 'patient', id: p.id, organizationId: p.organization_id },
      { user_id: userId, cascade },
    );
  }
  for (const m of r.memberships_removed) {
    await recordChange(
      tx,
      actor,
      'member.removed',
      { type: 'member', id: userId, organizationId: m.organization_id },
      { role_id: m.role_id, cascade },
    );
  }
  if (r.anonymised) {
    await recordChange(
      tx,
      actor,
      action,
      { type: 'user', id: userId, organizationId: null },
      {
        cascade,
        withdrawn_consents: r.withdrawn.length,
        patient_records_deleted: r.patients_deleted.length,
        memberships_removed: r.memberships_removed.length,
      },
    );
  }
}

/**
 * DELETE /v1/me (spec 3.2): ends platform_terms and platform_privacy_notice and every other consent,
 * anonymises the account across all organizations, in one transaction. The last administrator of an
 * organization is refused (409 last_admin) until someone else can manage its members.
 */
export async function deleteMe(tx: Queryable, actor: Actor): Promise<EraseResult> {
  const userId = actor.ctx.principalId;
  const result = await eraseUserRows(tx, userId, null, 'account_deleted');
  await auditErasure(tx, actor, userId, result, 'user.deleted', 'account_deleted');
  return result;
}

/**
 * Deletes the stored objects an erasure let go (erasedObjectKeys), after its commit: never inside the
 * transaction, which could still roll back. One that fails here is left for the orphan sweeps
 * (forms.orphan_files, telemetry.orphan_replays).
 */
export async function deleteErasedObjects(assets: AssetStore, keys: string[], log: FastifyBaseLogger): Promise<void> {
  for (const key of keys) {
    await assets.delete(key).catch((err: unknown) => log.warn({ err, key }, 'erased object left for the orphan sweep'));
  }
}
