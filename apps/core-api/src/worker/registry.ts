import type { Runtime } from '../platform/runtime.ts';
import type { WorkerRegistry } from './types.ts';
import { registerExerciseSessionJobs } from '../modules/exercise-sessions/jobs.ts';
import { registerAuditJobs } from '../modules/audit/retention.ts';
import { composerConfigFromEnv, registerComposerJobs } from '@clinic/composer';
import { registerFormJobs } from '../modules/forms/jobs.ts';
import { registerAppointmentJobs } from '../modules/appointments/jobs.ts';
import { registerDocumentJobs } from '../modules/documents/jobs.ts';
import { registerProviderJobs } from '../modules/providers/health.ts';
import { registerGdprJobs } from '../modules/gdpr/jobs.ts';
import { registerWebhookJobs } from '../modules/webhooks/jobs.ts';
import { registerSchedulingJobs } from '../modules/scheduling/jobs.ts';
import { registerAutomationJobs } from '../modules/automations/jobs.ts';
import { registerSegmentJobs } from '../modules/segments/jobs.ts';

/**
 * Every module's queues, outbox steps, scheduled jobs and internal event consumers, registered with the
 * worker at start (the worker itself knows no module).
 * Add one line per module: `registerXJobs(registry, rt);`.
 */
export function registerAllJobs(registry: WorkerRegistry, rt: Runtime): void {
  registerWebhookJobs(registry, {
    db: rt.db,
    secrets: rt.secrets,
    redis: rt.redis,
    redisKeyPrefix: rt.config.redisKeyPrefix,
    config: rt.config.webhooks,
    batchSize: rt.config.worker.deliveryBatch,
  });
  registerGdprJobs(registry, { db: rt.db });
  registerSchedulingJobs(registry, { db: rt.db, noShowGraceMinutes: rt.config.scheduling.noShowGraceMinutes });
  registerExerciseSessionJobs(registry, { db: rt.db, assets: rt.assets, logger: rt.logger, retention: rt.config.retention });
  registerAuditJobs(registry, { db: rt.db, secrets: rt.secrets, months: rt.config.retention.auditMonths });
  registerComposerJobs(registry, { db: rt.db, logger: rt.logger, config: composerConfigFromEnv });
  registerFormJobs(registry, { db: rt.db, assets: rt.assets, logger: rt.logger });
  registerAppointmentJobs(registry, { db: rt.db, assets: rt.assets, logger: rt.logger });
  registerDocumentJobs(registry, {
    db: rt.db,
    assets: rt.assets,
    logger: rt.logger,
    maxPages: rt.config.documents.maxPages,
    renderTimeoutMs: rt.config.documents.renderTimeoutMs,
    renderWorkers: rt.config.documents.renderWorkers,
  });
  registerAutomationJobs(registry, { db: rt.db, secrets: rt.secrets, logger: rt.logger, config: rt.config });
  registerSegmentJobs(registry, { db: rt.db, chunkSize: rt.config.segments.chunkSize });
  registerProviderJobs(registry, {
    db: rt.db,
    secrets: rt.secrets,
    logger: rt.logger,
    pingTimeoutMs: rt.config.providers.pingTimeoutMs,
    allowPrivateEndpoints: rt.config.providers.allowPrivateEndpoints,
    healthIntervalSeconds: rt.config.providers.healthIntervalSeconds,
  });
}
