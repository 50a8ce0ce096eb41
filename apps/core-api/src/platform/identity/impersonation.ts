import { createHash } from 'node:crypto';
import { AppError, errors } from '@clinic/http-kit';
import type { RequestContext } from './context.ts';
import { findImpersonation, loadContextByUserId } from './queries.ts';
import { type IdentityDeps, toContext } from './service.ts';

/** Impersonation tokens are opaque: this prefix and 32 random bytes (base64url); only their SHA-256 is stored. */
export const IMPERSONATION_PREFIX = 'imp_';

export const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * The context of a request made with an impersonation token: the patient's own, at the session's
 * organization only, as a patient (no staff membership, no permission codes, no superadmin), with the
 * session and the staff member behind it. A token whose session has ended or expired, whose patient
 * record is gone, or whose staff member no longer holds patients.impersonate is 401.
 */
export async function impersonationContext(deps: IdentityDeps, token: string, requestedOrgId: string | null): Promise<RequestContext> {
  const session = await findImpersonation(deps.db, tokenHash(token));
  if (!session?.live) {
    throw new AppError(401, 'unauthorized', 'This impersonation session has ended or expired; start a new one from the clinic app.');
  }
  if (requestedOrgId && requestedOrgId !== session.organization_id)
    throw errors.forbidden('An impersonation session acts only at the organization it was started in.');
  const row = await loadContextByUserId(deps.db, session.patient_user_id, session.organization_id, deps.consentGate !== false);
  if (!row) throw new AppError(401, 'unauthorized', 'The impersonated person no longer exists.');
  const patient = toContext(row, deps.permissionCatalog);
  return {
    ...patient,
    platformRoles: [],
    isSuperadmin: false,
    memberships: [],
    patientOrgIds: [session.organization_id],
    orgId: session.organization_id,
    roleId: null,
    roleCode: '',
    permissions: [],
    isStaff: false,
    isPatient: true,
    impersonation: { id: session.id, byPrincipalId: session.staff_user_id, patientId: session.patient_id },
  };
}
