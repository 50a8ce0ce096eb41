import { ErrorResponse, errors } from '@clinic/http-kit';
import type { FastifyRequest } from 'fastify';
import type { Actor } from './actor.ts';
import type { RequestContext } from './identity/context.ts';

/**
 * The route kit: what every routes file would otherwise repeat. A module's routes.ts keeps only what is
 * particular to it (operation id, summary, schemas, gate, which error statuses it can answer).
 */

/** OpenAPI security of every authenticated route: a bearer token (spec 5.1). */
export const bearer = [{ bearerAuth: [] }];

/** The response schemas of the error statuses a route can answer, each the spec's envelope (spec 2.2). */
export function errorSchemas<S extends number>(...statuses: S[]): Record<S, typeof ErrorResponse> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorResponse])) as Record<S, typeof ErrorResponse>;
}

/** The request context; the pipeline sets it on every authenticated route, so its absence is a 401. */
export function contextOf(request: FastifyRequest): RequestContext {
  if (!request.ctx) throw errors.unauthorized();
  return request.ctx;
}

/** The caller as services take it: context and address. */
export function actorOf(request: FastifyRequest): Actor {
  return { ctx: contextOf(request), ip: request.ip };
}

/**
 * The organization in scope (X-Organization-ID or the route's organization parameter). A superadmin
 * acting without one is told to name it.
 */
export function orgIdOf(request: FastifyRequest): string {
  const { orgId } = contextOf(request);
  if (!orgId) throw errors.validation({ 'X-Organization-ID': 'required: name the organization this acts on' }, 'No organization in scope.');
  return orgId;
}
