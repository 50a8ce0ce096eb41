import { createRateLimiter, DataOf, errors, rateLimitHeaders, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import { requireSuperadmin } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { BreakGlassSession, OpenSessionBody } from './schemas.ts';
import { endOwnSession, openSession } from './service.ts';
import { contextOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 429);

/** POST /v1/break-glass/sessions (spec 3.4, 4.7). */
export function breakGlassRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags: ['console'], errors: errorResponses });
  const { config } = rt;
  // Per superadmin, shared by every instance through Redis when there is one (architecture section 1).
  const limiter = createRateLimiter({
    redis: rt.redis,
    keyPrefix: `${config.redisKeyPrefix}rl:break-glass`,
    points: config.breakGlass.rateLimit,
    durationSeconds: config.breakGlass.rateWindowSeconds,
  });

  r.post(
    '/v1/break-glass/sessions',
    {
      config: { idempotent: true },
      onRequest: [requireSuperadmin()],
      preHandler: async (request, reply) => {
        const decision = await limiter.consume(`principal:${contextOf(request).principalId}`);
        reply.headers(rateLimitHeaders(decision));
        if (!decision.allowed) throw errors.rateLimited(decision.resetSeconds);
      },
      schema: {
        operationId: 'openBreakGlassSession',
        summary: 'Open a break-glass session (superadmin)',
        description:
          "Elevates the caller for one organization and one scope, default 60 minutes, at most 240. Audit-logged in the organization's own trail; rate-limited per superadmin (BREAK_GLASS_RATE_LIMIT per BREAK_GLASS_RATE_WINDOW). Honours Idempotency-Key.",
        body: OpenSessionBody,
        response: { 201: DataOf(BreakGlassSession) },
      },
    },
    async (request, reply) => {
      const session = await request.inTx((tx) => openSession(tx, { ctx: contextOf(request), ip: request.ip }, request.body));
      return reply.status(201).send({ data: session });
    },
  );

  r.post(
    '/v1/break-glass/sessions/:id/end',
    {
      onRequest: [requireSuperadmin()],
      schema: {
        operationId: 'endBreakGlassSession',
        summary: 'End one of your break-glass sessions now (superadmin)',
        description:
          "Only the superadmin who opened it; another's is 404. The session's reads stop at once (410 break_glass_expired naming the end). Audited as break_glass.ended in the organization's trail. Ending a session that already ended or expired changes nothing and answers it as it is.",
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(BreakGlassSession) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => endOwnSession(tx, { ctx: contextOf(request), ip: request.ip }, request.params.id.toLowerCase())),
    }),
  );
}
