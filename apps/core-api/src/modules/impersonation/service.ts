import { randomBytes } from 'node:crypto';
import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { IMPERSONATION_PREFIX, tokenHash } from '../../platform/identity/impersonation.ts';
import * as q from './queries.ts';

export const DEFAULT_MINUTES = 15;
export const MAX_MINUTES = 60;

const present = (s: q.SessionRow) => ({
  id: s.id,
  organization_id: s.organization_id,
  patient_id: s.patient_id,
  staff_user_id: s.staff_user_id,
  reason: s.reason,
  started_at: s.started_at,
  expires_at: s.expires_at,
  ended_at: s.ended_at,
});

/**
 * POST /v1/patients/{id}/impersonate: a session acting as the patient in the portal, for a reason, for
 * a few minutes. The token is returned once and kept only as its SHA-256. Staff only: a superadmin
 * reaches patient data through a break-glass session instead, and an impersonation cannot start another.
 */
export async function startImpersonation(tx: Queryable, actor: OrgActor, patientId: string, body: { reason: string; minutes?: number }) {
  if (actor.ctx.isSuperadmin) throw errors.forbidden('Superadmins do not impersonate patients; open a break-glass session instead.');
  const reason = body.reason.trim();
  if (reason.length < 3)
    throw errors.validation({ reason: 'say why (at least 3 characters): it is shown to the patient and the auditors' });
  const person = await q.findPatientPerson(tx, actor.orgId, patientId);
  if (!person) throw errors.notFound('No patient with this id in this organization.');
  if (person.user_id === actor.ctx.principalId) throw errors.validation({ id: 'you cannot impersonate yourself' });
  const token = IMPERSONATION_PREFIX + randomBytes(32).toString('base64url');
  const session = await q.insertSession(tx, {
    orgId: actor.orgId,
    patientId,
    patientUserId: person.user_id,
    staffUserId: actor.ctx.principalId,
    reason,
    tokenHash: tokenHash(token),
    minutes: body.minutes ?? DEFAULT_MINUTES,
  });
  await audit(tx, actor, 'patient.impersonation_started', 'patient', patientId, {
    impersonation_id: session.id,
    reason,
    expires_at: session.expires_at,
  });
  return { ...present(session), token };
}

/** DELETE /v1/impersonation-sessions/{id}: its staff member ends it early; the token stops working at once. */
export async function endImpersonation(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const ended = await q.endSession(tx, actor.orgId, id, actor.ctx.principalId);
  if (!ended) {
    const seen = await q.findSession(tx, actor.orgId, id);
    if (!seen) throw errors.notFound('No impersonation session with this id in this organization.');
    if (seen.staff_user_id !== actor.ctx.principalId) throw errors.forbidden('Only the staff member who started a session ends it.');
    throw errors.conflict('session_ended', 'This impersonation session has already ended.');
  }
  await audit(tx, actor, 'patient.impersonation_ended', 'patient', ended.patient_id, { impersonation_id: ended.id });
}
