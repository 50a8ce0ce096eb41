import { randomUUID } from 'node:crypto';
import {
  createMemoryIdempotencyStore,
  createRedisIdempotencyStore,
  edgeServerOptions,
  installApiDocs,
  installErrorHandling,
  installIdempotency,
  installValidators,
  lazySerializerOptions,
} from '@clinic/http-kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { accountRoutes } from './modules/me/account-routes.ts';
import { auditLogRoutes } from './modules/audit/routes.ts';
import { breakGlassRoutes } from './modules/break-glass/routes.ts';
import { consoleRoutes } from './modules/console/routes.ts';
import { providerResolverOf, providerRoutes } from './modules/providers/routes.ts';
import { rateLimitRoutes } from './modules/rate-limits/routes.ts';
import { createRouteLimitCache } from './modules/rate-limits/service.ts';
import { consentRoutes } from './modules/consents/routes.ts';
import { customFieldRoutes } from './modules/custom-fields/routes.ts';
import { formTemplateRoutes } from './modules/form-templates/routes.ts';
import { formRoutes } from './modules/forms/routes.ts';
import { documentRoutes } from './modules/documents/routes.ts';
import { pdfTemplateRoutes } from './modules/pdf-templates/routes.ts';
import { patientRoutes } from './modules/patients/routes.ts';
import { specialistRoutes } from './modules/specialists/routes.ts';
import { installAccessLog } from './platform/access-hook.ts';
import { appointmentRoutes } from './modules/appointments/routes.ts';
import { schedulingRoutes } from './modules/scheduling/routes.ts';
import { calendarRoutes } from './modules/calendars/routes.ts';
import { caregiverRoutes } from './modules/caregivers/routes.ts';
import { impersonationRoutes } from './modules/impersonation/routes.ts';
import { pickerRoutes } from './modules/pickers/routes.ts';
import { publicDirectoryRoutes } from './modules/public-directory/routes.ts';
import { serviceCatalogRoutes } from './modules/services/routes.ts';
import { specialtyRoutes } from './modules/specialties/routes.ts';
import { availabilityRoutes } from './modules/availability/routes.ts';
import { domainRoutes } from './modules/domains/routes.ts';
import { createContextCache } from './platform/identity/context-cache.ts';
import { gdprRoutes } from './modules/gdpr/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { locationRoutes } from './modules/locations/routes.ts';
import { exerciseRoutes } from './modules/exercises/routes.ts';
import { exerciseSessionRoutes } from './modules/exercise-sessions/routes.ts';
import { treatmentPlanRoutes } from './modules/treatment-plans/routes.ts';
import { createComposerClient } from './modules/treatment-plans/composer-client.ts';
import { sessionSigner } from './modules/exercise-sessions/token.ts';
import { memberRoutes } from './modules/members/routes.ts';
import { roleRoutes } from './modules/roles/routes.ts';
import { userRoutes } from './modules/directory/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import { automationRoutes } from './modules/automations/routes.ts';
import { messageRoutes } from './modules/messages/routes.ts';
import { segmentRoutes } from './modules/segments/routes.ts';
import { createChannels } from './modules/messages/channels.ts';
import { webhooksSection } from './modules/events/openapi.ts';
import { meRoutes } from './modules/me/routes.ts';
import { organizationRoutes } from './modules/organizations/routes.ts';
import { systemInfoRoutes } from './modules/system-info/routes.ts';
import { operatorStatusRoutes } from './modules/operator-status/routes.ts';
import { installPipeline } from './platform/pipeline.ts';
import { installReferences } from './platform/references.ts';
import { limiterFactory, tenantLimits } from './platform/limits.ts';
import { installTimeouts } from './platform/timeouts.ts';
import type { Runtime } from './platform/runtime.ts';

/** The core API as a Fastify instance; `listen` is the caller's business (main.ts, tests, benches). */
export async function buildApp(rt: Runtime): Promise<FastifyInstance> {
  const { config } = rt;
  const app = Fastify({
    loggerInstance: rt.logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    genReqId: (req) => {
      // A caller's id is kept if it fits where request ids are stored (patient_access_log.request_id, at most 100).
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9_-]{8,100}$/.test(given) ? given : randomUUID();
    },
    requestTimeout: 30_000,
    // Statuses the server produces itself (router and connection errors, 503 while closing) get the envelope too.
    ...edgeServerOptions,
    ...lazySerializerOptions,
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

  const limiter = limiterFactory(rt.redis, config.redisKeyPrefix);
  // The operator's per-organization figures, shared by the pipeline (reads) and the operator routes (writes).
  const routeLimits = createRouteLimitCache({ db: rt.db, ttlMs: config.rateLimits.tenant.refreshSeconds * 1000, logger: rt.logger });

  // Before the pipeline and every route: the budget covers authentication, and long routes are marked as declared.
  installTimeouts(app, config.timeouts);
  installPipeline(app, {
    timeouts: config.timeouts,
    db: rt.db,
    verifier: rt.verifier,
    profile: rt.profile,
    permissionCatalog: rt.permissionCatalog,
    consentGate: config.consentGate,
    contextCache: createContextCache(),
    limits: {
      entry: limiter('rl:api', config.rateLimits.api),
      // One per-IP budget for every /v1/public/... route (directory, availability, holds, bookings, feeds, ...).
      public: limiter('rl:public', config.rateLimits.publicBooking),
      user: limiter('rl:user', config.rateLimits.user),
      tenant: tenantLimits(limiter, config.rateLimits.tenant, routeLimits.limitOf),
    },
  });

  installAccessLog(app, rt.accessLog);
  // Ids in bodies that routes declare (config.references) must name the organization's rows.
  installReferences(app);

  // Routes that opt in with config.idempotent get Idempotency-Key handling (spec 4.1); it must be
  // installed before they are declared. Results are scoped by organization and principal.
  installIdempotency(app, {
    store: rt.redis
      ? createRedisIdempotencyStore(rt.redis, { keyPrefix: `${config.redisKeyPrefix}idem:` })
      : createMemoryIdempotencyStore(),
    scopeOf: (request) => `${request.ctx?.orgId ?? 'none'}:${request.ctx?.principalId ?? 'anonymous'}`,
    ttlSeconds: config.idempotencyTtlSeconds,
  });

  const healthDeps = { db: rt.db, redis: rt.redis, startedAt: Date.now() };
  healthRoutes(app, healthDeps);
  systemInfoRoutes(app, config.systemInfo);
  meRoutes(app);
  organizationRoutes(app, { db: rt.db, resolveLimiter: limiter('rl:resolve', config.rateLimits.publicResolve) });
  memberRoutes(app, rt);
  roleRoutes(app, rt);
  domainRoutes(app, rt);
  locationRoutes(app, rt);
  exerciseRoutes(app, rt);
  exerciseSessionRoutes(app, rt);
  treatmentPlanRoutes(app, {
    composer: createComposerClient({
      url: config.telerehab.composerUrl,
      secret: config.telerehab.composerSecret,
      timeoutMs: config.telerehab.composeTimeoutMs,
    }),
    signer: () => sessionSigner(config),
    systemInfo: config.systemInfo,
  });
  userRoutes(app, rt);
  consentRoutes(app, rt);
  accountRoutes(app, rt);
  gdprRoutes(app, rt);
  webhookRoutes(app, rt);
  // Messages sent by the API itself (a template's test send) go through the same channel layer as the worker's.
  const channels = createChannels({
    resolver: providerResolverOf(rt),
    outboxDir: config.messages.outboxDir,
    defaultFrom: config.messages.from,
    host: new URL(config.publicUrl).hostname,
    allowPrivate: config.providers.allowPrivateEndpoints,
    timeoutMs: config.messages.timeoutMs,
    maxConnections: 1,
    logger: rt.logger,
  });
  app.addHook('onClose', async () => channels.close());
  messageRoutes(app, { channels });
  automationRoutes(app);
  segmentRoutes(app, { syncLimit: config.segments.syncLimit });
  auditLogRoutes(app, rt);
  breakGlassRoutes(app, rt);
  consoleRoutes(app, rt);
  providerRoutes(app, rt);
  operatorStatusRoutes(app, rt, healthDeps);
  rateLimitRoutes(app, rt, routeLimits);
  customFieldRoutes(app);
  formTemplateRoutes(app);
  await formRoutes(app, rt);
  await pdfTemplateRoutes(app, { assets: rt.assets, logoMaxBytes: config.documents.logoMaxBytes });
  documentRoutes(app, rt);
  patientRoutes(app);
  impersonationRoutes(app);
  caregiverRoutes(app);
  pickerRoutes(app);
  // Calendar entries (appointment .ics and feeds) are named <appointment id>@<this host>.
  const calendarHost = new URL(config.publicUrl).hostname;
  calendarRoutes(app, {
    db: rt.db,
    publicUrl: config.publicUrl,
    calendarHost,
  });
  await appointmentRoutes(app, { assets: rt.assets, fileLimits: config.formFiles, calendarHost });
  schedulingRoutes(app, {
    db: rt.db,
    holdsPerIp: limiter('rl:holds-ip', config.scheduling.holdsPerIp),
    holdsPerOrg: limiter('rl:holds-org', config.scheduling.holdsPerOrg),
    holdMinutes: config.scheduling.holdMinutes,
    holdStreams: {
      perIp: config.scheduling.holdStreamsPerIp,
      listenUrl: rt.db.kind === 'postgres' ? config.databaseUrl : null,
    },
  });
  specialistRoutes(app);
  specialtyRoutes(app);
  availabilityRoutes(app);
  serviceCatalogRoutes(app);
  publicDirectoryRoutes(app, { db: rt.db });

  return app;
}
