import { randomUUID } from 'node:crypto';
import {
  createMemoryIdempotencyStore,
  createRateLimiter,
  createRedisIdempotencyStore,
  edgeServerOptions,
  installApiDocs,
  installErrorHandling,
  installIdempotency,
  installValidators,
} from '@clinic/http-kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { accountRoutes } from './modules/me/account-routes.ts';
import { auditLogRoutes } from './modules/audit/routes.ts';
import { breakGlassRoutes } from './modules/break-glass/routes.ts';
import { consoleRoutes } from './modules/console/routes.ts';
import { providerRoutes } from './modules/providers/routes.ts';
import { consentRoutes } from './modules/consents/routes.ts';
import { customFieldRoutes } from './modules/custom-fields/routes.ts';
import { formTemplateRoutes } from './modules/form-templates/routes.ts';
import { formRoutes } from './modules/forms/routes.ts';
import { patientRoutes } from './modules/patients/routes.ts';
import { specialistRoutes } from './modules/specialists/routes.ts';
import { domainRoutes } from './modules/domains/routes.ts';
import { createContextCache } from './platform/identity/context-cache.ts';
import { gdprRoutes } from './modules/gdpr/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { locationRoutes } from './modules/locations/routes.ts';
import { exerciseRoutes } from './modules/exercises/routes.ts';
import { exerciseSessionRoutes } from './modules/exercise-sessions/routes.ts';
import { memberRoutes } from './modules/members/routes.ts';
import { roleRoutes } from './modules/roles/routes.ts';
import { userRoutes } from './modules/directory/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import { webhooksSection } from './modules/events/openapi.ts';
import { meRoutes } from './modules/me/routes.ts';
import { organizationRoutes } from './modules/organizations/routes.ts';
import { systemInfoRoutes } from './modules/system-info/routes.ts';
import { installPipeline } from './platform/pipeline.ts';
import type { Runtime } from './platform/runtime.ts';

/** The core API as a Fastify instance; `listen` is the caller's business (main.ts, tests, benches). */
export async function buildApp(rt: Runtime): Promise<FastifyInstance> {
  const { config } = rt;
  const app = Fastify({
    loggerInstance: rt.logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9_-]{8,128}$/.test(given) ? given : randomUUID();
    },
    requestTimeout: 30_000,
    // Statuses the server produces itself (router and connection errors, 503 while closing) get the envelope too.
    ...edgeServerOptions,
    routerOptions: { ignoreTrailingSlash: true },
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  installValidators(app);
  installErrorHandling(app);
  // Bodies are JSON only: a text/plain body gets 415 instead of a confusing schema error.
  app.removeContentTypeParser('text/plain');

  await installApiDocs(app, {
    title: 'Clinic Platform core API',
    version: config.systemInfo.version,
    description: 'Multi-tenant backend for clinics. Errors use the envelope { error: { code, message, fields? } }.',
    serverUrl: config.publicUrl,
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    // Deliveries the platform sends (spec 6.1; docs/events.md): one entry per event type.
    extra: { webhooks: webhooksSection() },
  });

  const limiter = (keyPrefix: string, l: { limit: number; windowSeconds: number }) =>
    createRateLimiter({ redis: rt.redis, keyPrefix: config.redisKeyPrefix + keyPrefix, points: l.limit, durationSeconds: l.windowSeconds });

  installPipeline(app, {
    db: rt.db,
    verifier: rt.verifier,
    profile: rt.profile,
    permissionCatalog: rt.permissionCatalog,
    consentGate: config.consentGate,
    contextCache: createContextCache(),
    apiLimiter: limiter('rl:api', config.rateLimits.api),
  });

  // Routes that opt in with config.idempotent get Idempotency-Key handling (spec 4.1); it must be
  // installed before they are declared. Results are scoped by organization and principal.
  installIdempotency(app, {
    store: rt.redis
      ? createRedisIdempotencyStore(rt.redis, { keyPrefix: `${config.redisKeyPrefix}idem:` })
      : createMemoryIdempotencyStore(),
    scopeOf: (request) => `${request.ctx?.orgId ?? 'none'}:${request.ctx?.principalId ?? 'anonymous'}`,
    ttlSeconds: config.idempotencyTtlSeconds,
  });

  healthRoutes(app, { db: rt.db, redis: rt.redis, startedAt: Date.now() });
  systemInfoRoutes(app, config.systemInfo);
  meRoutes(app);
  organizationRoutes(app, { db: rt.db, resolveLimiter: limiter('rl:resolve', config.rateLimits.publicResolve) });
  memberRoutes(app, rt);
  roleRoutes(app, rt);
  domainRoutes(app, rt);
  locationRoutes(app, rt);
  exerciseRoutes(app, rt);
  exerciseSessionRoutes(app, rt);
  userRoutes(app, rt);
  consentRoutes(app, rt);
  accountRoutes(app, rt);
  gdprRoutes(app, rt);
  webhookRoutes(app, rt);
  auditLogRoutes(app, rt);
  breakGlassRoutes(app, rt);
  consoleRoutes(app, rt);
  providerRoutes(app, rt);
  customFieldRoutes(app);
  formTemplateRoutes(app);
  await formRoutes(app, rt);
  patientRoutes(app);
  specialistRoutes(app);

  return app;
}
