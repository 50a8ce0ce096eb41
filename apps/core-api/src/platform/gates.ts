import { errors } from '@clinic/http-kit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { auditUnderSession, breakGlassExpired, breakGlassRequired } from '../modules/break-glass/service.ts';
import { latestSession, organizationExists, type SessionRow } from '../modules/break-glass/queries.ts';
import type { BreakGlassScope } from '../modules/break-glass/schemas.ts';
import { featureConsentMissing } from '../modules/consents/service.ts';
import { findPurpose, hasActiveConsent } from '../modules/consents/queries.ts';
import { isRestricted } from '../modules/gdpr/queries.ts';
import { processingRestricted } from '../modules/gdpr/service.ts';
import { hasOrgAccess, hasPermission } from './identity/context.ts';
import { actorOf, contextOf } from './route.ts';

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

/**
 * The ordinary routes that answer identifiable patient data (spec 4.7), by route pattern: every route
 * under these paths, whatever module adds it. A superadmin who is not a member of the organization in
 * scope reads them only under a break-glass session (see patientDataGate).
 */
const PATIENT_DATA_ROUTES: RegExp[] = [
  /^\/v1\/patients(\/|$)/,
  /^\/v1\/organizations\/:org_id\/patients\//,
  /^\/v1\/appointments(\/|$)/,
  /^\/v1\/appointment-documents\//,
  /^\/v1\/forms(\/|$)/,
  /^\/v1\/documents\//,
  /^\/v1\/exercise-sessions(\/|$)/,
  /^\/v1\/treatment-plans\/(enrollments|sessions|today|analytics)(\/|$)/,
  /^\/v1\/treatment-plans\/:id\/enrollments$/,
  /^\/v1\/messages(\/|$)/,
  /^\/v1\/segments\/:id\/(members|evaluate)$/,
  /^\/v1\/gdpr\/(export|erase|restrict)$/,
];

/**
 * The session scope an ordinary route needs, or null when it answers no identifiable patient data. A
 * read over the organization's rows (no record named in the path) needs patient_list; a read or change
 * of one named record needs patient_detail, as the console's two patient routes do.
 */
export function breakGlassScopeOf(method: string, url: string): BreakGlassScope | null {
  if (!PATIENT_DATA_ROUTES.some((r) => r.test(url))) return null;
  const namesRecord = /\/:(?!org_id\b)\w+/.test(url);
  return method === 'GET' && !namesRecord ? 'patient_list' : 'patient_detail';
}

/** The session an ordinary route was served under, set by patientDataGate. */
const ordinarySessions = new WeakMap<FastifyRequest, SessionRow>();

export function breakGlassSessionOf(request: FastifyRequest): SessionRow | undefined {
  return ordinarySessions.get(request);
}

/**
 * Break-glass on the ordinary routes (spec 4.7): a superadmin bypasses row-level isolation, so a
 * superadmin who is not staff of the organization in scope gets its identifiable patient data only under
 * an open session of their own for that organization and the route's scope (the audit log keeps its own
 * gate, which sends superadmins to the console's audit_full route): otherwise the console's
 * refusals, 403 break_glass_required with the elevation form or 410 break_glass_expired. Runs in the
 * pipeline for every authenticated route, so no route can forget it.
 */
export async function patientDataGate(request: FastifyRequest): Promise<void> {
  const ctx = request.ctx;
  if (!ctx?.isSuperadmin || ctx.isStaff || !ctx.orgId || ctx.impersonation) return;
  const scope = breakGlassScopeOf(request.method, request.routeOptions.url ?? '');
  if (!scope) return;
  const orgId = ctx.orgId;
  const session = await request.inTx((tx) => latestSession(tx, ctx.principalId, orgId, scope));
  if (!session) throw breakGlassRequired(orgId, scope);
  if (session.status !== 'open') throw breakGlassExpired(session);
  ordinarySessions.set(request, session);
}

/**
 * The audit entry of a request served under a break-glass session by an ordinary route: the route, the
 * status and the patients the handler said it read, in the organization's trail with the session's id.
 */
export function recordBreakGlassRead(request: FastifyRequest, session: SessionRow, status: number, patientIds: string[]): Promise<void> {
  return request.inTx((tx) =>
    auditUnderSession(
      tx,
      actorOf(request),
      session,
      'break_glass.read',
      { type: 'route', id: null },
      { method: request.method, route: request.routeOptions.url ?? null, status, patient_ids: patientIds },
    ),
  );
}
