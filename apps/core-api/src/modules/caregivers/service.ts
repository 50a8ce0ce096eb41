import type { Queryable } from '@clinic/db';
import { errors, normalizeEmail } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { emit } from '../events/emit.ts';
import * as q from './queries.ts';

const patientNotFound = () => errors.notFound('No patient with this id in this organization.');

/** Staff of the organization with patients.update_org, or the patient itself (its own record, not as a caregiver). */
function approverOf(actor: OrgActor, patient: { user_id: string }): 'staff' | 'patient' | null {
  if (hasPermission(actor.ctx, 'patients.update_org')) return 'staff';
  if (!actor.ctx.isStaff && !actor.ctx.actingForPatientId && patient.user_id === actor.ctx.principalId) return 'patient';
  return null;
}

/** GET /v1/patients/{id}/caregivers: the active links, for staff who read patients, the patient and its caregivers. */
export async function listCaregivers(tx: Queryable, orgId: string, patientId: string) {
  const patient = await q.findPatient(tx, orgId, patientId);
  if (!patient) throw patientNotFound();
  return q.listLinks(tx, orgId, patientId);
}

/**
 * POST /v1/patients/{id}/caregivers: the person named by email may act for the patient (X-Patient-ID).
 * An unknown email gets a user row without identity, which its first sign-in with that email binds
 * (provisioning links rows by email), so the answer never says whether the person had an account.
 * Added by the patient (its approval) or by staff with patients.update_org (the clinic's); a caregiver
 * never adds itself or another.
 */
export async function addCaregiver(
  tx: Queryable,
  actor: OrgActor,
  patientId: string,
  body: { email: string; relationship?: string | null },
) {
  const patient = await q.findPatient(tx, actor.orgId, patientId);
  if (!patient) throw patientNotFound();
  const approvedBy = approverOf(actor, patient);
  if (!approvedBy) throw errors.forbidden('A caregiver is added by the patient itself or by staff with patients.update_org.');
  const checked = normalizeEmail(body.email);
  if (!checked.ok) throw errors.validation({ email: checked.problem });
  const caregiver = await q.ensureCaregiverUser(tx, checked.email);
  if (!caregiver)
    throw errors.conflict('principal_not_allowed', 'This email belongs to an agent or a service account, which cannot be a caregiver.');
  if (caregiver === patient.user_id) throw errors.validation({ email: 'a patient is not its own caregiver' });
  const id = await q.insertLink(tx, {
    orgId: actor.orgId,
    patientId,
    caregiverUserId: caregiver,
    relationship: body.relationship ?? null,
    approvedBy,
    by: actor.ctx.principalId,
  });
  await audit(tx, actor, 'patient.caregiver_added', 'patient', patientId, {
    link_id: id,
    caregiver_user_id: caregiver,
    approved_by: approvedBy,
  });
  await emit(tx, actor.orgId, 'caregiver_link.created', { id, patient_id: patientId, caregiver_user_id: caregiver });
  // The address as it was given, whether or not the person had an account (and however it spelled it):
  // an invitation that binds when the person signs in with that email, the same answer either way.
  return { ...(await q.findLink(tx, actor.orgId, patientId, id))!, caregiver_email: checked.email };
}

/** DELETE /v1/patients/{id}/caregivers/{linkId}: by staff with patients.update_org, the patient, or the caregiver itself. */
export async function removeCaregiver(tx: Queryable, actor: OrgActor, patientId: string, linkId: string): Promise<void> {
  const link = await q.findLink(tx, actor.orgId, patientId, linkId);
  if (!link || link.revoked_at) throw errors.notFound('No active caregiver link with this id for this patient.');
  const patient = await q.findPatient(tx, actor.orgId, patientId);
  const allowed =
    hasPermission(actor.ctx, 'patients.update_org') ||
    link.caregiver_user_id === actor.ctx.principalId ||
    (patient !== null && patient.user_id === actor.ctx.principalId);
  if (!allowed) throw errors.forbidden('A caregiver link is removed by staff with patients.update_org, the patient or the caregiver.');
  await q.revokeLink(tx, actor.orgId, linkId, actor.ctx.principalId);
  await audit(tx, actor, 'patient.caregiver_removed', 'patient', patientId, { link_id: linkId, caregiver_user_id: link.caregiver_user_id });
  await emit(tx, actor.orgId, 'caregiver_link.revoked', { id: linkId, patient_id: patientId, caregiver_user_id: link.caregiver_user_id });
}

export const myCaregiving = (tx: Queryable) => q.myCaregiving(tx);
