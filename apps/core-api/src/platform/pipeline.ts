import type { Database, Queryable } from '@clinic/db';
import { NIL_UUID } from '@clinic/db';
import { bearerToken, errors, rateLimitHeaders, type RateLimiter } from '@clinic/http-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasOrgAccess, hasPermission, scopeOf, type RequestContext } from '../modules/identity/context.ts';
import { resolveContext, type IdentityDeps } from '../modules/identity/service.ts';

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
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface PipelineDeps extends IdentityDeps {
  db: Database;
  apiLimiter: RateLimiter;
}

/** X-Organization-ID, or the route's organization parameter; the nil UUID means no scope. */
function requestedOrganization(request: FastifyRequest): { requested: string | null; header: string | null } {
  const raw = request.headers['x-organization-id'];
  const headerValue = Array.isArray(raw) ? raw[0] : raw;
  let header: string | null = null;
  if (headerValue !== undefined && headerValue !== '') {
    if (!UUID.test(headerValue)) throw errors.validation({ 'X-Organization-ID': 'must be a uuid' }, 'The X-Organization-ID header is not a uuid.');
    header = headerValue.toLowerCase() === NIL_UUID ? null : headerValue.toLowerCase();
  }
  const param = request.routeOptions.config.orgParam;
  const fromPath = param ? (request.params as Record<string, string | undefined>)[param] : undefined;
  if (fromPath !== undefined) {
    if (!UUID.test(fromPath)) throw errors.notFound();
    return { requested: fromPath.toLowerCase(), header };
  }
  return { requested: header, header };
}

/**
 * The request pipeline of DESIGN.md section 2, up to the route gate: per-IP limit at the entry of /v1,
 * authentication, just-in-time provisioning and the organization context.
 */
export function installPipeline(app: FastifyInstance, deps: PipelineDeps): void {
  app.decorateRequest('ctx', null);
  app.decorateRequest('inTx', function <T>(this: FastifyRequest, fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (!this.ctx) throw new Error('inTx on a route without a request context');
    return deps.db.withScope(scopeOf(this.ctx), fn);
  });

  app.addHook('onRequest', async (request, reply) => {
    if (request.url.startsWith('/v1/')) {
      // Caps what an address can make us spend on token verification (spec 8, entry to /v1).
      const decision = await deps.apiLimiter.consume(`ip:${request.ip}`);
      reply.headers(rateLimitHeaders(decision));
      if (!decision.allowed) throw errors.rateLimited(decision.resetSeconds);
    }
    if (request.is404 || request.routeOptions.config.public || !request.url.startsWith('/v1/')) return;
    const rawToken = bearerToken(request.headers.authorization);
    if (!rawToken) throw errors.unauthorized();
    const { requested, header } = requestedOrganization(request);
    request.ctx = await resolveContext(deps, { rawToken, requestedOrgId: requested, headerOrgId: header, ip: request.ip, log: request.log });
  });
}

type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

function contextOf(request: FastifyRequest): RequestContext {
  if (!request.ctx) throw errors.unauthorized();
  return request.ctx;
}

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

/** Staff, patient or superadmin at the organization in scope. */
export function requireOrgAccess(): Gate {
  return async (request) => {
    if (!hasOrgAccess(contextOf(request))) throw errors.forbidden('You are not a member of this organization.');
  };
}
