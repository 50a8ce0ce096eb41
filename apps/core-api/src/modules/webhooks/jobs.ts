import type { Database } from '@clinic/db';
import { createRateLimiter } from '@clinic/http-kit';
import type { Redis } from 'ioredis';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../../platform/secrets.ts';
import type { WorkerRegistry } from '../../worker/types.ts';
import { SUBSCRIBABLE_TYPES } from '../events/catalog.ts';
import { type DeliveryJob, FAILING_PRIORITY, processDeliveryJobs } from './delivery.ts';
import { claimResends, deleteOldDeliveries, insertDeliveries } from './queries.ts';
import { createWebhookSender } from './sender.ts';

/** The queue of webhook delivery attempts: one job per attempt. */
export const DELIVERY_QUEUE = 'webhook-delivery';

/** Retention of the outbox and the delivery log (see deleteOldDeliveries), in one transaction. */
export function purgeOldDeliveries(db: Database, days: number): Promise<{ deliveries: number; events: number }> {
  return db.transaction((tx) => deleteOldDeliveries(tx, days));
}

export interface WebhookJobDeps {
  db: Database;
  secrets: SecretBox;
  redis: Redis | null;
  redisKeyPrefix: string;
  config: Config['webhooks'];
  /** Deliveries fetched and sent at once (WORKER_DELIVERY_BATCH). */
  batchSize: number;
}

/**
 * Webhooks on the worker: the delivery queue and its sender, the outbox step that turns subscribable
 * events (and manual re-sends) into delivery jobs, and the retention sweep.
 */
export function registerWebhookJobs(registry: WorkerRegistry, deps: WebhookJobDeps): void {
  const { config } = deps;
  const sender = createWebhookSender(config);
  registry.onClose(() => sender.close());
  const limiter = createRateLimiter({
    redis: deps.redis,
    keyPrefix: `${deps.redisKeyPrefix}rl:webhook`,
    points: config.rateLimit.limit,
    durationSeconds: config.rateLimit.windowSeconds,
  });

  registry.queue<DeliveryJob>(
    DELIVERY_QUEUE,
    {
      retryLimit: 20,
      retryDelay: 1,
      // Crashed deliveries come back once their expiry passes: one time-out for the requests of a batch plus margin.
      expireInSeconds: Math.ceil(config.timeoutMs / 1000) * 2 + 5,
      batchSize: deps.batchSize,
      pollingIntervalSeconds: 0.5,
    },
    (jobs, ctx) =>
      processDeliveryJobs({ db: deps.db, secrets: deps.secrets, sender, limiter, config, logger: ctx.logger, enqueue: ctx.enqueue }, jobs),
  );

  // Only catalog types reach webhooks: internal events (and types no module declared) stay inside.
  registry.fanOut(async (tx, events, { limit }) => {
    const deliverable = events.filter((e) => SUBSCRIBABLE_TYPES.has(e.type));
    const created = deliverable.length ? await insertDeliveries(tx, deliverable) : [];
    const resends = await claimResends(tx, limit);
    return [
      ...created.map((d) => ({
        name: DELIVERY_QUEUE,
        data: { delivery_id: d.id, attempt: 1 } satisfies DeliveryJob,
        priority: d.failing ? FAILING_PRIORITY : 0,
      })),
      ...resends.map((r) => ({
        name: DELIVERY_QUEUE,
        data: { delivery_id: r.id, attempt: r.attempts + 1, trigger: 'resend' } satisfies DeliveryJob,
      })),
    ];
  });

  registry.every('webhooks.retention', 3600, async ({ logger }) => {
    const r = await purgeOldDeliveries(deps.db, config.retentionDays);
    if (r.deliveries || r.events) logger.info(r, 'old deliveries and events deleted');
  });
}
