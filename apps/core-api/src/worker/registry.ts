import type { Runtime } from '../platform/runtime.ts';
import type { WorkerRegistry } from './types.ts';
import { registerExerciseSessionJobs } from '../modules/exercise-sessions/jobs.ts';
import { composerConfigFromEnv, registerComposerJobs } from '@clinic/composer';
import { registerFormJobs } from '../modules/forms/jobs.ts';
import { registerProviderJobs } from '../modules/providers/health.ts';
import { registerGdprJobs } from '../modules/gdpr/jobs.ts';
import { registerWebhookJobs } from '../modules/webhooks/jobs.ts';

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
  registerExerciseSessionJobs(registry, { db: rt.db, assets: rt.assets, logger: rt.logger });
  registerComposerJobs(registry, { db: rt.db, logger: rt.logger, config: composerConfigFromEnv });
  registerFormJobs(registry, { db: rt.db, assets: rt.assets, logger: rt.logger });
  registerProviderJobs(registry, {
    db: rt.db,
    secrets: rt.secrets,
    logger: rt.logger,
    pingTimeoutMs: rt.config.providers.pingTimeoutMs,
    allowPrivateEndpoints: rt.config.providers.allowPrivateEndpoints,
    healthIntervalSeconds: rt.config.providers.healthIntervalSeconds,
  });
}
