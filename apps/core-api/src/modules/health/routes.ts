import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { readiness, shallowHealth, type HealthDeps } from './service.ts';

const PoolMetrics = Type.Object({
  total_conns: Type.Integer(),
  acquired_conns: Type.Integer(),
  idle_conns: Type.Integer(),
  max_conns: Type.Integer(),
  utilization_pct: Type.Number(),
});

const Health = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded'), Type.Literal('unhealthy')]),
  checks: Type.Object({
    postgresql: Type.Object({ status: Type.String(), metrics: PoolMetrics }),
    redis: Type.Object({ status: Type.String({ description: 'up, down, or not_configured (embedded default: in-memory counters)' }) }),
  }),
  uptime_seconds: Type.Integer(),
});

const Dependency = Type.Object({ status: Type.String(), latency_ms: Type.Optional(Type.Number()), error: Type.Optional(Type.String()) });
const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
  checks: Type.Object({ postgresql: Dependency, redis: Dependency }),
  uptime_seconds: Type.Integer(),
});

export function healthRoutes(app: FastifyInstance, deps: HealthDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/health',
    {
      config: { public: true },
      schema: {
        operationId: 'getHealth',
        tags: ['public'],
        summary: 'Shallow health for the load balancer: 200 when healthy or degraded, 503 when no database connection works',
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      const health = await shallowHealth(deps);
      return reply.status(health.status === 'unhealthy' ? 503 : 200).send(health);
    },
  );
  r.get(
    '/health/ready',
    {
      config: { public: true },
      schema: {
        operationId: 'getReadiness',
        tags: ['public'],
        summary: 'Deep readiness for monitoring tools: pings PostgreSQL and Redis; 503 unless every dependency answers',
        response: { 200: Readiness, 503: Readiness },
      },
    },
    async (_request, reply) => {
      const ready = await readiness(deps);
      return reply.status(ready.status === 'ready' ? 200 : 503).send(ready);
    },
  );
}
