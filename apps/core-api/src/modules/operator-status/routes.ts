import { DataOf, errors, nullable, Timestamp, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireSuperadmin } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { errorSchemas, routesOf } from '../../platform/route.ts';
import { organizationExists } from '../break-glass/queries.ts';
import type { HealthDeps } from '../health/service.ts';
import { systemStatus, verifyAuditChain } from './service.ts';

const State = Type.Union([Type.Literal('up'), Type.Literal('degraded'), Type.Literal('down'), Type.Literal('not_configured')]);
const SystemStatus = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded'), Type.Literal('unhealthy')]),
  checked_at: Timestamp,
  services: Type.Array(
    Type.Object({
      name: Type.Union([
        Type.Literal('core_api'),
        Type.Literal('database'),
        Type.Literal('redis'),
        Type.Literal('telemetry'),
        Type.Literal('composer'),
        Type.Literal('worker'),
      ]),
      status: State,
      latency_ms: nullable(Type.Number()),
      detail: Type.Record(Type.String(), Type.Unknown()),
      error: nullable(Type.String()),
    }),
  ),
});

const ChainReport = Type.Object({
  chain: Type.String({ description: 'The organization id, or "platform"' }),
  ok: Type.Boolean(),
  checked: Type.Integer({ description: 'Entries whose hash and link were recomputed and found intact' }),
  from: Type.Optional(Type.Object({ checkpoint_id: Type.String(), cut_seq: Type.Number(), created_at: Timestamp })),
  broken: Type.Optional(Type.Object({ chain_seq: Type.Number(), id: nullable(Type.String()), reason: Type.String() })),
  verified_at: Timestamp,
});

/** The console's operator views of the platform itself (superadmin): every service's health, the audit chains. */
export function operatorStatusRoutes(app: FastifyInstance, rt: Runtime, health: HealthDeps): void {
  const r = routesOf(app, { tags: ['operator'], errors: errorSchemas(400, 401, 403, 404, 429) });
  const gate = [requireSuperadmin()];

  r.get(
    '/v1/admin/system-status',
    {
      onRequest: gate,
      schema: {
        operationId: 'getSystemStatus',
        summary: 'Every service as this core API instance sees it (superadmin)',
        description:
          'core_api (this instance), database (pool metrics and a ping), redis (a ping; not_configured on the embedded default), ' +
          'telemetry and composer (their /health; TELEMETRY_URL, COMPOSER_URL), worker (the outbox it drains: behind when the oldest undispatched event waits over 60 s). Always 200: a service that is down is reported, not thrown.',
        response: { 200: DataOf(SystemStatus) },
      },
    },
    async () => ({ data: await systemStatus(rt, health) }),
  );

  r.post(
    '/v1/admin/audit-chains/verify',
    {
      onRequest: gate,
      schema: {
        operationId: 'verifyAuditChain',
        summary: "Walk one audit chain and recompute every hash (superadmin): the platform's or an organization's",
        description:
          'What `npm run cli -- audit verify` does: from the latest valid retention checkpoint (or the genesis), each entry must sit at the ' +
          'next position, name the previous hash and hash to what it stores; the head must match the last entry. A broken chain is ' +
          '200 with ok false and the first broken link. organization_id null is the platform chain.',
        body: Type.Object({ organization_id: nullable(Uuid) }, { additionalProperties: false }),
        response: { 200: DataOf(ChainReport) },
      },
    },
    async (request) => {
      const orgId = request.body.organization_id?.toLowerCase() ?? null;
      if (orgId && !(await request.inTx((tx) => organizationExists(tx, orgId)))) throw errors.organizationNotFound();
      const report = await verifyAuditChain(rt, orgId);
      return { data: report };
    },
  );
}
