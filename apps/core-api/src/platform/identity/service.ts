import { AppError, errors, normalizeEmail, type VerifiedToken } from '@clinic/http-kit';
import { NIL_UUID, type Database } from '@clinic/db';
import type { FastifyBaseLogger } from 'fastify';
import type { ProfileSource } from '../auth/profile-source.ts';
import { insertAudit } from '../audit.ts';
import type { RequestContext } from './context.ts';
import { contextCacheKey, type ContextCache } from './context-cache.ts';
import { contextVersions, linkPatient, loadContext, provisionUser, recordActivity, userIdBySubject, type ContextRow } from './queries.ts';

const ACTIVITY_RESOLUTION_MS = 60_000;

export interface IdentityDeps {
  db: Database;
  profile: ProfileSource;
  /** Every permission code, for superadmins in an organization scope (they pass every check). */
  permissionCatalog: readonly string[];
  /** The re-consent gate (config consentGate); off skips its part of the context statement. */
  consentGate?: boolean;
  /** Contexts this instance loaded, checked against their versions before each use. */
  contextCache?: ContextCache;
}

export interface ContextRequest {
  /** The bearer token, already verified by the caller (verified once per request). */
  token: VerifiedToken;
  /** The same token as sent: the profile source may need to present it (OIDC userinfo). */
  rawToken: string;
  /** Organization asked for by path or X-Organization-ID, already validated as a uuid; the nil UUID asks for no scope. */
  requestedOrgId: string | null;
  /** X-Organization-ID only: what the patient portal sends on a first sign-in. */
  headerOrgId: string | null;
  ip: string | null;
  log: FastifyBaseLogger;
}

export function toContext(row: ContextRow, catalog: readonly string[]): RequestContext {
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
    missingConsents: row.missing_consents,
    impersonation: null,
    actingForPatientId: null,
  };
}

/**
 * Spec 5.4, steps 2 to 4: fetch the profile, insert the user ignoring conflicts, link a patient
 * when the portal named an organization, and audit both on a best-effort basis.
 */
async function provision(deps: IdentityDeps, token: VerifiedToken, req: ContextRequest): Promise<void> {
  const checked = normalizeEmail(await deps.profile.primaryEmail(token, req.rawToken));
  if (!checked.ok) {
    throw new AppError(
      401,
      'unauthorized',
      `The email address of this account ${checked.problem}; correct it at the identity provider and sign in again.`,
    );
  }
  const email = checked.email;
  const orgId = req.headerOrgId && req.headerOrgId !== NIL_UUID ? req.headerOrgId : null;
  // User and patient link commit together: a concurrent request that already sees the user must
  // also see the link, or its response would say "no patient" while the winner's says "patient".
  const { user, userId, patientId } = await deps.db.transaction(async (tx) => {
    const user = await provisionUser(tx, token.subject, email);
    if (!orgId) return { user, userId: user?.id ?? null, patientId: null };
    // Nothing inserted: either a concurrent first request of the same identity won (its row is
    // committed, since the conflicting insert waited for it), or the email belongs to another
    // identity (no row has this subject; the caller answers 409). The loser links the patient too,
    // so the link does not depend on which request of the race carried the header.
    const userId = user?.id ?? (await userIdBySubject(tx, token.subject));
    // Idempotent: only the request that inserted the link gets its id (and writes the audit entry).
    const patientId = userId ? await linkPatient(tx, orgId, userId) : null;
    return { user, userId, patientId };
  });
  const bestEffort = (what: string, work: Promise<unknown>) =>
    work.catch((err: unknown) => req.log.warn({ err, userId }, `${what} audit entry failed; continuing`));
  if (user) {
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
  }
  if (orgId && userId && patientId) {
    await bestEffort(
      'patient link',
      insertAudit(deps.db, {
        organizationId: orgId,
        actorUserId: userId,
        action: 'patient.linked',
        entityType: 'patient',
        entityId: patientId,
        data: { source: 'just_in_time_provisioning' },
        ip: req.ip,
      }),
    );
  }
}

/** The context row of the caller: the cached one if its versions still match, else freshly loaded. */
async function contextRow(deps: IdentityDeps, subject: string, requestedOrgId: string | null): Promise<ContextRow | null> {
  const gate = deps.consentGate !== false;
  const key = contextCacheKey(subject, requestedOrgId, gate);
  const cached = deps.contextCache?.get(key);
  if (cached) {
    const current = await contextVersions(deps.db, subject);
    if (current && current.id === cached.id && current.version === cached.context_version && current.epoch === cached.context_epoch) {
      return cached;
    }
  }
  const row = await loadContext(deps.db, subject, requestedOrgId, gate);
  if (row) deps.contextCache?.set(key, row);
  return row;
}

export async function resolveContext(deps: IdentityDeps, req: ContextRequest): Promise<RequestContext> {
  const { token } = req;
  let row = await contextRow(deps, token.subject, req.requestedOrgId);
  if (!row) {
    await provision(deps, token, req);
    row = await contextRow(deps, token.subject, req.requestedOrgId);
    if (!row) {
      throw new AppError(
        409,
        'identity_conflict',
        'This email is already linked to another sign-in identity; contact support to merge them.',
      );
    }
  }
  if (!row.org_exists) throw errors.organizationNotFound();
  // At most one write a minute per user: the hot path stays read-only. (last_activity is not part of
  // the context's version, so the cached row is updated in place.)
  if (!row.last_activity || Date.now() - row.last_activity.getTime() > ACTIVITY_RESOLUTION_MS) {
    row.last_activity = await recordActivity(deps.db, row.id);
  }
  return toContext(row, deps.permissionCatalog);
}
