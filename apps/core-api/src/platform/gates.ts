import { errors } from '@clinic/http-kit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { breakGlassExpired, breakGlassRequired } from '../modules/break-glass/service.ts';
import { latestSession, organizationExists, type SessionRow } from '../modules/break-glass/queries.ts';
import type { BreakGlassScope } from '../modules/break-glass/schemas.ts';
import { featureConsentMissing } from '../modules/consents/service.ts';
import { findPurpose, hasActiveConsent } from '../modules/consents/queries.ts';
import { isRestricted } from '../modules/gdpr/queries.ts';
import { processingRestricted } from '../modules/gdpr/service.ts';
import { hasOrgAccess, hasPermission } from './identity/context.ts';
import { contextOf } from './route.ts';

/**
 * Every route gate, in one place: permission codes (never role names, spec 5.10), superadmin, staff or
 * any access at the organization in scope, feature-level consent and break-glass sessions. A gate runs
 * in onRequest after the pipeline has set the request context.
 */

type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** The default route gate: a permission code at the organization in scope. Superadmins pass. */
export function requirePermission(code: string): Gate {
  return async (request) => {
    const ctx = contextOf(request);
    if (!hasPermission(ctx, code)) throw errors.forbidden(`This needs the ${code} permission in the organization.`);
  };
}

export function requireSuperadmin(): Gate {
  return async (request) => {
    if (!contextOf(request).isSuperadmin) throw errors.forbidden('Only platform superadmins can do this.');
  };
}

/**
 * Staff of the organization in scope (a membership row there, spec 5.7) or a superadmin; patients are
 * refused. Staff access is not a permission, so requirePermission cannot express it.
 */
export function requireStaff(message = 'This is readable by staff members of the organization.'): Gate {
  return async (request) => {
    const ctx = contextOf(request);
    if (!(ctx.isSuperadmin || ctx.isStaff)) throw errors.forbidden(message);
  };
}

/** Staff, patient or superadmin at the organization in scope. */
export function requireOrgAccess(): Gate {
  return async (request) => {
    if (!hasOrgAccess(contextOf(request))) throw errors.forbidden('You are not a member of this organization.');
  };
}

/**
 * Feature-level gate (spec 4.6 rule 4): 403 consent_required with `missing_purpose` unless the caller
 * has an active grant of `purpose`, at the organization in scope for an organization-scope purpose.
 * Superadmins pass (they act on no data of their own). A person whose processing is restricted
 * (platform-wide, or at the organization in scope) gets 403 processing_restricted instead.
 */
export function requireConsent(purpose: string) {
  return async (request: FastifyRequest, _reply?: FastifyReply): Promise<void> => {
    const ctx = request.ctx;
    if (!ctx) throw featureConsentMissing(purpose);
    if (ctx.isSuperadmin) return;
    const ok = await request.inTx(async (tx) => {
      // A restriction of processing (GDPR art. 18, POST /v1/gdpr/restrict) wins over any consent.
      if (await isRestricted(tx, ctx.principalId, ctx.orgId)) throw processingRestricted(purpose);
      const p = await findPurpose(tx, purpose);
      if (!p) return false;
      const orgId = p.scope === 'org' ? ctx.orgId : null;
      if (p.scope === 'org' && !orgId) return false;
      return hasActiveConsent(tx, ctx.principalId, orgId, purpose);
    });
    if (!ok) throw featureConsentMissing(purpose);
  };
}

/** The open session behind each console request, set by the gate. */
const sessions = new WeakMap<FastifyRequest, SessionRow>();

export function sessionOf(request: FastifyRequest): SessionRow {
  const s = sessions.get(request);
  if (!s) throw new Error('console route without its break-glass gate');
  return s;
}

/**
 * The gate of the console routes (spec 4.7): a superadmin with an open session of their own for the
 * path's organization and this scope. Otherwise 403 break_glass_required (with the form), or 410
 * break_glass_expired when their latest such session has run out.
 */
export function requireBreakGlass(scope: BreakGlassScope, orgParam = 'org_id') {
  return async (request: FastifyRequest): Promise<void> => {
    const ctx = request.ctx;
    if (!ctx) throw errors.unauthorized();
    if (!ctx.isSuperadmin) throw errors.forbidden('The console is for platform superadmins.');
    const orgId = (request.params as Record<string, string>)[orgParam]!;
    const session = await request.inTx(async (tx) => {
      if (!(await organizationExists(tx, orgId))) throw errors.organizationNotFound();
      return latestSession(tx, ctx.principalId, orgId, scope);
    });
    if (!session) throw breakGlassRequired(orgId, scope);
    if (session.status !== 'open') throw breakGlassExpired(session);
    sessions.set(request, session);
  };
}
