import { AppError, errors, type TokenVerifier, type VerifiedToken } from '@clinic/http-kit';
import type { Database } from '@clinic/db';
import type { FastifyBaseLogger } from 'fastify';
import type { ProfileSource } from '../../platform/auth/profile-source.ts';
import { insertAudit } from '../audit/queries.ts';
import type { RequestContext } from './context.ts';
import { linkPatient, loadContext, provisionUser, type ContextRow } from './queries.ts';

export interface IdentityDeps {
  db: Database;
  verifier: TokenVerifier;
  profile: ProfileSource;
  /** Every permission code, for superadmins in an organization scope (they pass every check). */
  permissionCatalog: readonly string[];
}

export interface ContextRequest {
  rawToken: string;
  /** Organization asked for by path or X-Organization-ID, already validated as a uuid. */
  requestedOrgId: string | null;
  /** X-Organization-ID only: what the patient portal sends on a first sign-in. */
  headerOrgId: string | null;
  ip: string | null;
  log: FastifyBaseLogger;
}

function toContext(row: ContextRow, catalog: readonly string[]): RequestContext {
  const isSuperadmin = row.platform_roles.includes('superadmin');
  const isStaff = row.org_id !== null && row.memberships.some((m) => m.organization_id === row.org_id);
  return {
    principalId: row.id,
    email: row.email,
    kind: row.kind,
    confirmed: row.confirmed,
    lastActivity: row.last_activity,
    preferredLanguage: row.preferred_language,
    platformRoles: row.platform_roles,
    isSuperadmin,
    memberships: row.memberships,
    patientOrgIds: row.patient_org_ids,
    orgId: row.org_id,
    roleId: row.role_id,
    roleCode: row.role_code ?? '',
    permissions: isSuperadmin && row.org_id !== null ? [...catalog] : row.permissions,
    isStaff,
    isPatient: row.org_id !== null && row.patient_org_ids.includes(row.org_id),
  };
}

/**
 * Spec 5.4, steps 2 to 4: fetch the profile, insert the user ignoring conflicts, audit on a
 * best-effort basis, and link a patient when the portal named an organization.
 */
async function provision(deps: IdentityDeps, token: VerifiedToken, req: ContextRequest): Promise<void> {
  const email = (await deps.profile.primaryEmail(token, req.rawToken)).trim().toLowerCase();
  const user = await provisionUser(deps.db, token.subject, email);
  // Nothing inserted: a concurrent first request of the same user won, or the email belongs to
  // another identity. The caller's second context load tells which.
  if (!user) return;
  const bestEffort = (what: string, work: Promise<unknown>) =>
    work.catch((err: unknown) => req.log.warn({ err, userId: user.id }, `${what} audit entry failed; continuing`));
  await bestEffort(
    'provisioning',
    insertAudit(deps.db, {
      organizationId: null,
      actorUserId: user.id,
      action: user.created ? 'user.provisioned' : 'user.linked',
      entityType: 'user',
      entityId: user.id,
      ip: req.ip,
    }),
  );
  if (req.headerOrgId) {
    const patientId = await linkPatient(deps.db, req.headerOrgId, user.id);
    if (patientId) {
      await bestEffort(
        'patient link',
        insertAudit(deps.db, {
          organizationId: req.headerOrgId,
          actorUserId: user.id,
          action: 'patient.linked',
          entityType: 'patient',
          entityId: patientId,
          data: { source: 'just_in_time_provisioning' },
          ip: req.ip,
        }),
      );
    }
  }
}

export async function resolveContext(deps: IdentityDeps, req: ContextRequest): Promise<RequestContext> {
  const token = await deps.verifier.verify(req.rawToken);
  let row = await loadContext(deps.db, token.subject, req.requestedOrgId);
  if (!row) {
    await provision(deps, token, req);
    row = await loadContext(deps.db, token.subject, req.requestedOrgId);
    if (!row) {
      throw new AppError(409, 'identity_conflict', 'This email is already linked to another sign-in identity; contact support to merge them.');
    }
  }
  if (!row.org_exists) throw errors.organizationNotFound();
  return toContext(row, deps.permissionCatalog);
}
