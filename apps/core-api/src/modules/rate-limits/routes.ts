import { DataOf, Timestamp, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireSuperadmin } from '../../platform/gates.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { clearRouteLimit, getRouteLimit, type RouteLimitCache, setRouteLimit } from './service.ts';

const PATH = '/v1/admin/organizations/:id/rate-limits';

const RouteLimit = Type.Object({
  organization_id: Uuid,
  route_limit: Type.Integer({ description: 'Requests per route and window that this organization gets now.' }),
  window_seconds: Type.Integer({ description: 'The window (RATELIMIT_TENANT_WINDOW), the same for every organization.' }),
  source: Type.Union([Type.Literal('organization'), Type.Literal('platform')], {
    description: "organization: the operator set this clinic's own figure; platform: RATELIMIT_TENANT_LIMIT applies.",
  }),
  platform_route_limit: Type.Integer({ description: 'RATELIMIT_TENANT_LIMIT, what every other organization gets.' }),
  reason: Type.Union([Type.String(), Type.Null()]),
  updated_at: Type.Union([Timestamp, Type.Null()]),
});

const SetRouteLimit = Type.Object(
  {
    route_limit: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Requests per route and window.' }),
    reason: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()], { description: 'Why (a plan, an incident).' })),
  },
  { additionalProperties: false },
);

/**
 * The operator's per-organization limits (spec 8): a clinic on a bigger plan gets more requests
 * per route and window than RATELIMIT_TENANT_LIMIT. Superadmin only; the pipeline reads the figures through
 * `cache`, which this instance reloads at once after a change (others within RATELIMIT_TENANT_REFRESH_SECONDS).
 */
export function rateLimitRoutes(app: FastifyInstance, rt: Runtime, cache: RouteLimitCache): void {
  const r = routesOf(app, { tags: ['operator'], errors: errorSchemas(400, 401, 403, 404, 429) });
  const platform = rt.config.rateLimits.tenant;
  const onRequest = [requireSuperadmin()];
  const params = Type.Object({ id: Uuid });

  r.get(
    PATH,
    {
      onRequest,
      schema: {
        operationId: 'getOrganizationRateLimit',
        summary: "An organization's per-route rate limit and where it comes from",
        description: "Superadmin. The figure in force: the organization's own when the operator set one, else the platform's.",
        params,
        response: { 200: DataOf(RouteLimit) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getRouteLimit(tx, request.params.id.toLowerCase(), platform)) }),
  );

  r.put(
    PATH,
    {
      onRequest,
      schema: {
        operationId: 'setOrganizationRateLimit',
        summary: "Set an organization's own per-route rate limit",
        description:
          "Superadmin. Every authenticated route of the organization gets route_limit requests per window (the window is the platform's), counted across its users and instances. Audited with the figure before and after. Takes effect at once on this instance and within RATELIMIT_TENANT_REFRESH_SECONDS on the others.",
        params,
        body: SetRouteLimit,
        response: { 200: DataOf(RouteLimit) },
      },
    },
    async (request) => {
      const view = await request.inTx((tx) => setRouteLimit(tx, actorOf(request), request.params.id.toLowerCase(), request.body, platform));
      await cache.reload();
      return { data: view };
    },
  );

  r.delete(
    PATH,
    {
      onRequest,
      schema: {
        operationId: 'clearOrganizationRateLimit',
        summary: 'Put an organization back on the platform rate limit',
        description: 'Superadmin. Idempotent: 204 whether or not the organization had its own figure; audited when it had.',
        params,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await request.inTx((tx) => clearRouteLimit(tx, actorOf(request), request.params.id.toLowerCase()));
      await cache.reload();
      return reply.status(204).send(null);
    },
  );
}
