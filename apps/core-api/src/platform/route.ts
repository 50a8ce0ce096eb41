import { ErrorResponse, errors } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from 'fastify';
import type { TSchema } from 'typebox';
import type { Actor, OrgActor } from './actor.ts';
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

/** The caller acting on the organization in scope: what services of org-scoped modules take. */
export function orgActorOf(request: FastifyRequest): OrgActor {
  return { ctx: contextOf(request), ip: request.ip, orgId: orgIdOf(request) };
}

type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
/** The route methods of a module, typed by its TypeBox schemas. */
export type ModuleRoutes = Pick<TypedApp, 'get' | 'post' | 'put' | 'patch' | 'delete'>;

/**
 * A module's route methods with what every route of the module shares filled in: its OpenAPI `tags`,
 * the bearer `security` (left out on routes with `config.public`) and the error responses the module's
 * routes can answer, each in the spec's envelope. A route names only what is particular to it; a status
 * it adds (`422: ErrorResponse`) or sets itself wins over the module's.
 */
export function routesOf(app: FastifyInstance, kit: { tags: string[]; errors: Record<number, TSchema> }): ModuleRoutes {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const fill = (opts: RouteShorthandOptions): RouteShorthandOptions => {
    const schema: FastifySchema & { tags?: readonly string[]; security?: unknown } = { ...opts.schema };
    schema.tags ??= kit.tags;
    if (!(opts.config as { public?: boolean } | undefined)?.public) schema.security ??= bearer;
    schema.response = { ...kit.errors, ...(schema.response as object | undefined) };
    return { ...opts, schema };
  };
  const method = (name: keyof ModuleRoutes) => (path: string, opts: RouteShorthandOptions, handler: RouteHandlerMethod) =>
    (r[name] as (p: string, o: RouteShorthandOptions, h: RouteHandlerMethod) => TypedApp)(path, fill(opts), handler);
  return {
    get: method('get'),
    post: method('post'),
    put: method('put'),
    patch: method('patch'),
    delete: method('delete'),
  } as unknown as ModuleRoutes;
}
