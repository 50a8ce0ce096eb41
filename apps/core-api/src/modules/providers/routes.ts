import { DataOf, ErrorResponse, errors, ListOf, listEnvelope, parsePagination, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireSuperadmin } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { listProviders } from './queries.ts';
import type { ProviderResolver } from './resolver.ts';
import { CAPABILITIES, CreateOverrideBody, Provider, Resolved, UpdateProviderBody, type Capability } from './schemas.ts';
import { checkProviders } from './health.ts';
import { createOverride, getProvider, toPublic, updateProviderRow } from './service.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 429);
const tags = ['operator'];
const BASE = '/v1/admin/platform-service-providers';

/**
 * The provider resolver of this instance (Runtime.providers): one cache per runtime, which the operator routes
 * invalidate after a change (spec 3.3: the writing instance drops its cached provider at once), so every module of
 * the instance, and its token verification and asset store, resolves through it. Two instances in one process
 * (tests) keep separate caches, as two processes would.
 */
export function providerResolverOf(rt: Runtime): ProviderResolver {
  return rt.providers;
}

/**
 * After the cache of a capability is dropped, the changed row is resolved again at once (after the transaction):
 * the asset store takes only fresh entries without querying (asset-provider.ts), so this is how the writing
 * instance's store moves at once (spec 3.3). A row in error is resolved too; its 502 is for its users.
 */
async function refill(resolver: ProviderResolver, row: { capability: Capability; organization_id: string | null }) {
  await resolver.resolve(row.capability, row.organization_id, { acceptFailing: true });
}

/** Operator surface (spec 2.11, 4.10): superadmin only. */
export function providerRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags, errors: errorResponses });
  const deps = { secrets: rt.secrets, allowPrivateEndpoints: rt.config.providers.allowPrivateEndpoints };
  const resolver = providerResolverOf(rt);
  const gate = [requireSuperadmin()];

  r.get(
    BASE,
    {
      onRequest: gate,
      schema: {
        operationId: 'listPlatformServiceProviders',
        summary: 'List provider rows (credentials masked)',
        description: 'Superadmin. Filters: capability, organization_id. Platform rows first.',
        querystring: Type.Object({
          page: Type.Optional(Type.String()),
          limit: Type.Optional(Type.String()),
          capability: Type.Optional(Type.Union(CAPABILITIES.map((c) => Type.Literal(c)))),
          organization_id: Type.Optional(Uuid),
        }),
        response: { 200: ListOf(Provider) },
      },
    },
    async (request) =>
      request.inTx(async (tx) => {
        const page = parsePagination(request.query);
        const { rows, total } = await listProviders(tx, request.query, page);
        return listEnvelope(
          rows.map((row) => toPublic(row, rt.secrets)),
          page,
          total,
        );
      }),
  );

  r.get(
    `${BASE}/resolve`,
    {
      onRequest: gate,
      schema: {
        operationId: 'resolvePlatformServiceProvider',
        summary: 'Which provider this instance uses for a capability (and organization)',
        description:
          "Superadmin. The organization's override, else the platform row, else the deployment default; inactive rows are skipped. A row in error answers 502 provider_unavailable and is never replaced silently. Served from this instance's cache (PROVIDER_CACHE_TTL_SECONDS, 5 minutes).",
        querystring: Type.Object({
          capability: Type.Union(CAPABILITIES.map((c) => Type.Literal(c))),
          organization_id: Type.Optional(Uuid),
        }),
        response: { 200: DataOf(Resolved), 502: ErrorResponse },
      },
    },
    async (request) => {
      const res = await resolver.resolve(request.query.capability as Capability, request.query.organization_id?.toLowerCase() ?? null);
      return {
        data: {
          capability: res.capability,
          source: res.source,
          provider_id: res.row?.id ?? null,
          provider: res.row?.provider ?? null,
          config: res.row?.config ?? null,
          updated_at: res.row?.updated_at ?? null,
        },
      };
    },
  );

  r.get(
    `${BASE}/:id`,
    {
      onRequest: gate,
      schema: {
        operationId: 'getPlatformServiceProvider',
        summary: 'Read a provider row (credentials masked)',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Provider) },
      },
    },
    async (request) => ({ data: toPublic(await request.inTx((tx) => getProvider(tx, request.params.id.toLowerCase())), rt.secrets) }),
  );

  r.post(
    BASE,
    {
      onRequest: gate,
      config: { idempotent: true },
      schema: {
        operationId: 'createPlatformServiceProvider',
        summary: 'Add a per-organization provider override',
        description:
          'Superadmin. Body shapes of spec 2.11 for the capability; the row is active at once and the health check watches it. 409 provider_exists when the organization has one.',
        body: CreateOverrideBody,
        response: { 201: DataOf(Provider), 409: ErrorResponse },
      },
    },
    async (request, reply) => {
      const row = await request.inTx((tx) =>
        createOverride(tx, actorOf(request), deps, request.body as Parameters<typeof createOverride>[3]),
      );
      resolver.invalidate(row.capability);
      await refill(resolver, row);
      return reply.status(201).send({ data: toPublic(row, rt.secrets) });
    },
  );

  r.patch(
    `${BASE}/:id`,
    {
      onRequest: gate,
      schema: {
        operationId: 'updatePlatformServiceProvider',
        summary: 'Rotate credentials, change config or (de)activate a provider row',
        description:
          "Superadmin (spec 4.10). credentials replace the stored set (sealed with AES-256-GCM); config keys merge and the result must match spec 2.11; status active or inactive. Bumps updated_at, audits the diff with credentials masked, and drops this instance's cache; other instances follow within PROVIDER_CACHE_TTL_SECONDS. Revoke the old credential only after the health check shows active.",
        params: Type.Object({ id: Uuid }),
        body: UpdateProviderBody,
        response: { 200: DataOf(Provider) },
      },
    },
    async (request) => {
      const row = await request.inTx((tx) => updateProviderRow(tx, actorOf(request), deps, request.params.id.toLowerCase(), request.body));
      resolver.invalidate(row.capability);
      await refill(resolver, row);
      return { data: toPublic(row, rt.secrets) };
    },
  );
  r.post(
    `${BASE}/:id/check`,
    {
      onRequest: gate,
      schema: {
        operationId: 'checkPlatformServiceProvider',
        summary: 'Run the health check of one provider row now (superadmin)',
        description:
          "The worker's scheduled check (spec 3.3) for this row alone: pings the provider with its stored credentials and moves active <-> error, setting last_error and last_health_check_at. Inactive rows and rows without credentials are not pinged and come back as they are. Drops this instance's cache when the status changed.",
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Provider) },
      },
    },
    async (request) => {
      const id = request.params.id.toLowerCase();
      const before = await request.inTx((tx) => getProvider(tx, id));
      const [result] = await checkProviders(
        {
          db: rt.db,
          secrets: rt.secrets,
          logger: request.log as never,
          pingTimeoutMs: rt.config.providers.pingTimeoutMs,
          allowPrivateEndpoints: rt.config.providers.allowPrivateEndpoints,
          healthIntervalSeconds: 0,
        },
        id,
      );
      if (result?.changed) resolver.invalidate(before.capability);
      return { data: toPublic(await request.inTx((tx) => getProvider(tx, id)), rt.secrets) };
    },
  );
  void errors;
}
