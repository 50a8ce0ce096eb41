import type { Database, Queryable } from '@clinic/db';
import { NIL_UUID } from '@clinic/db';
import { AppError, bearerToken, enforceLimit, errors, type TokenVerifier, isUuid } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hasOrgAccess, scopeOf, type RequestContext } from './identity/context.ts';
import { resolveContext, type IdentityDeps } from './identity/service.ts';
import { actAsCaregiver, patientConsentRequired } from './identity/caregiver.ts';
import { IMPERSONATION_PREFIX, impersonationContext } from './identity/impersonation.ts';
import { PUBLIC_PREFIX, type PipelineLimits } from './limits.ts';
import { takeReferences } from './references.ts';
import { queryBudget, type Timeouts } from './timeouts.ts';
import { patientDataGate } from './gates.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the pipeline on every authenticated route; null on public routes. */
    ctx: RequestContext | null;
    /** Runs fn in ONE transaction that has set this caller's role and tenant settings. */
    inTx<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  }
  interface FastifyContextConfig {
    /** Public route: no token, narrowly scoped queries (spec 5.2, 5.3). */
    public?: boolean;
    /** Path parameter naming the organization the route acts on; it wins over X-Organization-ID. */
    orgParam?: string;
    /**
     * Reachable while the re-consent gate would answer 412 (spec 4.6 rule 3): the routes a caller needs
     * to read what to accept and to accept it.
     */
    consentExempt?: boolean;
    /**
     * A write that an impersonation token may make for the patient (editing its record or profile,
     * filling a form): its audit entry carries action_context impersonation. Other writes are 403.
     */
    impersonable?: boolean;
  }
}

export interface PipelineDeps extends IdentityDeps {
  db: Database;
  verifier: TokenVerifier;
  limits: PipelineLimits;
  /** The statement time-out of a route's transactions (QUERY_TIMEOUT_MS, or LONG_OPERATION_TIMEOUT_MS). */
  timeouts: Timeouts;
}

/**
 * The organization a request asks for: the route's organization parameter, else X-Organization-ID.
 * An explicit nil UUID in the header asks for no scope (spec 2.1) and is passed on as such, so the
 * stored and first organizations do not apply; `header` is null then (no patient link to make).
 */
function requestedOrganization(request: FastifyRequest): { requested: string | null; header: string | null } {
  const raw = request.headers['x-organization-id'];
  const headerValue = Array.isArray(raw) ? raw[0] : raw;
  let requestedByHeader: string | null = null;
  if (headerValue !== undefined && headerValue !== '') {
    if (!isUuid(headerValue))
      throw errors.validation({ 'X-Organization-ID': 'must be a uuid' }, 'The X-Organization-ID header is not a uuid.');
    requestedByHeader = headerValue.toLowerCase();
  }
  const header = requestedByHeader === NIL_UUID ? null : requestedByHeader;
  const param = request.routeOptions.config.orgParam;
  const fromPath = param ? (request.params as Record<string, string | undefined>)[param] : undefined;
  if (fromPath !== undefined) {
    if (!isUuid(fromPath)) throw errors.notFound();
    // No organization has the nil id: a path naming it names nothing.
    if (fromPath === NIL_UUID) throw errors.organizationNotFound();
    return { requested: fromPath.toLowerCase(), header };
  }
  return { requested: requestedByHeader, header };
}

/**
 * Routes of other modules that stay reachable while consents are missing: who the caller is and its
 * preferences (language to read the texts in) and clinics. Marked here, as the routes are added, so
 * that their modules need not know about consent; the consent module marks its own routes.
 */
const CONSENT_EXEMPT_ROUTES = new Set(['GET /v1/me', 'PATCH /v1/me', 'GET /v1/me/clinics']);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const impersonationForbidden = () =>
  new AppError(
    403,
    'impersonation_forbidden',
    "This cannot be done while impersonating a patient (consents, signatures, bookings and account changes are the patient's own); do it as staff, where the clinic app records it as such.",
  );

/** The 412 of the re-consent gate: every missing purpose with the version to accept. */
function consentRequired(missing: RequestContext['missingConsents']): AppError {
  const codes = missing.map((m) => (m.organization_id ? `${m.purpose_code} (organization ${m.organization_id})` : m.purpose_code));
  return new AppError(
    412,
    'consent_required',
    `Accept the latest version of: ${codes.join(', ')}. Read them at GET /v1/consent-purposes and accept them with POST /v1/me/consents.`,
    { extra: { missing } },
  );
}

/**
 * The request pipeline of architecture section 2, up to the route gate: per-IP limit at the entry of /v1
 * (and the public routes' own), authentication, just-in-time provisioning, the organization context, the
 * per-user limit, the re-consent gate and the break-glass gate of the patient-data routes.
 */
export function installPipeline(app: FastifyInstance, deps: PipelineDeps): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.some((m) => CONSENT_EXEMPT_ROUTES.has(`${m} ${route.url}`))) route.config = { ...route.config, consentExempt: true };
  });
  app.decorateRequest('ctx', null);
  app.decorateRequest('inTx', function <T>(this: FastifyRequest, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (!this.ctx) throw new Error('inTx on a route without a request context');
    const check = takeReferences(this);
    const run = check
      ? async (tx: Queryable) => {
          await check(tx);
          return fn(tx);
        }
      : fn;
    return deps.db.withScope({ ...scopeOf(this.ctx), statementTimeoutMs: queryBudget(this.routeOptions.config, deps.timeouts) }, run);
  });

  app.addHook('onRequest', async (request, reply) => {
    // Decided on the route pattern, not the raw URL: the router decodes paths, so `/%761/me` or an
    // absolute-form URL reaches /v1 routes while the raw URL does not start with /v1/.
    const path = request.routeOptions.url ?? request.url;
    const underV1 = path.startsWith('/v1/');
    // Caps what an address can make us spend on token verification (spec 8, entry to /v1).
    if (underV1) await enforceLimit(deps.limits.entry, `ip:${request.ip}`, reply);
    // Every public route, one budget per address (spec 8: 100 per minute); a route may add a stricter one.
    if (path.startsWith(PUBLIC_PREFIX)) await enforceLimit(deps.limits.public, `ip:${request.ip}`, reply);
    if (request.is404 || request.routeOptions.config.public || !underV1) return;
    const rawToken = bearerToken(request.headers.authorization);
    if (!rawToken) throw errors.unauthorized();
    let patientMissing: RequestContext['missingConsents'] = [];
    if (rawToken.startsWith(IMPERSONATION_PREFIX)) {
      request.ctx = await impersonationContext(deps, rawToken, requestedOrganization(request).requested);
      // Under impersonation a write is refused unless its route says it may be done for the patient
      // (and then its audit entry says it was): never a consent, a signature or a booking unannounced.
      if (!SAFE_METHODS.has(request.method) && !request.routeOptions.config.impersonable) throw impersonationForbidden();
    } else {
      // Verify before looking at headers: a caller without a valid token learns nothing but 401.
      const token = await deps.verifier.verify(rawToken);
      const { requested, header } = requestedOrganization(request);
      request.ctx = await resolveContext(deps, {
        token,
        rawToken,
        requestedOrgId: requested,
        headerOrgId: header,
        ip: request.ip,
        log: request.log,
      });
      const actingFor = request.headers['x-patient-id'];
      if (typeof actingFor === 'string') {
        const acting = await actAsCaregiver(deps.db, request.ctx, actingFor, deps.consentGate !== false);
        request.ctx = acting.ctx;
        patientMissing = acting.patientMissing;
      }
    }
    // Per principal, whatever address it comes from (spec 8: 1,000 per minute per user).
    await enforceLimit(deps.limits.user, `principal:${request.ctx.principalId}`, reply);
    // Per organization and endpoint, counted only for callers with access to it: an outsider naming a
    // clinic in X-Organization-ID must not spend that clinic's budget.
    const ctx = request.ctx;
    if (hasOrgAccess(ctx) && ctx.orgId !== null && ctx.orgId !== NIL_UUID) {
      const route = `${request.method} ${request.routeOptions.url ?? request.url}`;
      await enforceLimit(await deps.limits.tenant(ctx.orgId), `${ctx.orgId}:${route}`, reply);
    }
    // Re-consent gate (spec 4.6 rule 3): computed by the context statement, so no extra round trip.
    if (deps.consentGate !== false && request.ctx.missingConsents.length && !request.routeOptions.config.consentExempt)
      throw consentRequired(request.ctx.missingConsents);
    // A caregiver acting for a patient: the patient's acceptance of the clinic's purposes governs its data.
    if (patientMissing.length && ctx.actingForPatientId && !request.routeOptions.config.consentExempt)
      throw patientConsentRequired(ctx.actingForPatientId, patientMissing);
    // Identifiable patient data of an organization the superadmin is not staff of: break-glass only.
    await patientDataGate(request);
  });
}
