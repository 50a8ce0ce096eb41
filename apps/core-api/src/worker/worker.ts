import { createRateLimiter } from '@clinic/http-kit';
import type PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import { processDeliveryJobs, type DeliveryJob } from '../modules/webhooks/delivery.ts';
import { createWebhookSender, type WebhookSender } from '../modules/webhooks/sender.ts';
import type { Runtime } from '../platform/runtime.ts';
import { createBoss, executorOf } from './boss.ts';
import { dispatchPending } from './dispatcher.ts';
import { registerAllJobs } from './registry.ts';
import type { DomainEvent, WorkerRegistry } from './types.ts';

export interface Worker {
  boss: PgBoss;
  /** Runs one outbox pass now (tests, and the loop below). */
  dispatchNow(): Promise<void>;
  close(): Promise<void>;
}

export interface WorkerOptions {
  /** Extra registrations (tests); the modules' own come from registry.ts. */
  register?: (registry: WorkerRegistry) => void;
  /** Overrides the delivery HTTP client (benchmarks). */
  sender?: WebhookSender;
}

const DELIVERY_QUEUE = 'webhook-delivery';
const EVENT_QUEUE = 'domain-event';

/**
 * The worker (architecture section 1): pg-boss queues for webhook deliveries, internal event consumers and
 * scheduled jobs, fed by the outbox dispatcher loop. `npm run worker` runs it alone; on the embedded
 * default it runs inside the API process. Several workers may run at once: the outbox pass skips rows
 * another holds, pg-boss hands each job to one worker, and scheduled jobs are throttled to one per interval.
 */
export async function startWorker(rt: Runtime, opts: WorkerOptions = {}): Promise<Worker> {
  const { config } = rt;
  const logger: Logger = rt.logger.child({ component: 'worker' });
  const boss = createBoss(rt.db, config);
  boss.on('error', (err: Error) => logger.error({ err: err.message }, 'job system error'));
  await boss.start();

  const consumers = new Map<string, ((event: DomainEvent, ctx: { logger: Logger }) => Promise<void>)[]>();
  const scheduled: { name: string; intervalSeconds: number; run: (ctx: { logger: Logger }) => Promise<void> }[] = [];
  const registry: WorkerRegistry = {
    every: (name, intervalSeconds, run) => void scheduled.push({ name, intervalSeconds, run }),
    onEvent: (type, handle) => void consumers.set(type, [...(consumers.get(type) ?? []), handle]),
  };
  registerAllJobs(registry, rt);
  opts.register?.(registry);

  const sender = opts.sender ?? createWebhookSender(config.webhooks);
  const limiter = createRateLimiter({
    redis: rt.redis,
    keyPrefix: `${config.redisKeyPrefix}rl:webhook`,
    points: config.webhooks.rateLimit.limit,
    durationSeconds: config.webhooks.rateLimit.windowSeconds,
  });
  const insertJobs = async (tx: Parameters<typeof executorOf>[0], jobs: { name: string; data: object; startAfter?: string }[]) => {
    await boss.insert(jobs as PgBoss.JobInsert[], { db: executorOf(tx) } as never);
  };

  // Crashed deliveries come back once their expiry passes: one time-out for the requests of a batch plus margin.
  const expireInSeconds = Math.ceil(config.webhooks.timeoutMs / 1000) * 2 + 5;
  await boss.createQueue(DELIVERY_QUEUE, { name: DELIVERY_QUEUE, retryLimit: 20, retryDelay: 1, expireInSeconds });
  await boss.updateQueue(DELIVERY_QUEUE, { name: DELIVERY_QUEUE, retryLimit: 20, retryDelay: 1, expireInSeconds });
  await boss.createQueue(EVENT_QUEUE, { name: EVENT_QUEUE, retryLimit: 10, retryDelay: 5, retryBackoff: true, expireInSeconds: 300 });

  const batchSize = config.worker.deliveryBatch;
  let deliveryWorkerId = '';
  deliveryWorkerId = await boss.work<DeliveryJob>(DELIVERY_QUEUE, { batchSize, pollingIntervalSeconds: 0.5 }, async (jobs) => {
    await logFailure(logger, DELIVERY_QUEUE, () =>
      processDeliveryJobs(
        {
          db: rt.db,
          secrets: rt.secrets,
          sender,
          limiter,
          config: config.webhooks,
          logger,
          enqueue: (tx, next) =>
            insertJobs(
              tx,
              next.map((j) => ({
                name: DELIVERY_QUEUE,
                data: j.data,
                ...(j.startAfter ? { startAfter: j.startAfter.toISOString() } : {}),
              })),
            ),
        },
        jobs.map((j) => j.data),
      ),
    );
    // A full batch means more are waiting: fetch again at once instead of sleeping the polling interval.
    if (jobs.length === batchSize) boss.notifyWorker(deliveryWorkerId);
  });

  const eventWorkerId = await boss.work<{ event: DomainEvent }>(
    EVENT_QUEUE,
    { batchSize: 10, pollingIntervalSeconds: 0.5 },
    async (jobs) => {
      for (const job of jobs) {
        const { event } = job.data;
        for (const handle of consumers.get(event.type) ?? []) {
          await logFailure(logger, EVENT_QUEUE, () =>
            handle(event, { logger: logger.child({ event_id: event.id, event_type: event.type }) }),
          );
        }
      }
    },
  );

  // Scheduled jobs: every instance proposes a tick; pg-boss's throttle (singletonSeconds) keeps one per interval.
  const timers: NodeJS.Timeout[] = [];
  for (const s of scheduled) {
    const queue = `every-${s.name}`;
    await boss.createQueue(queue, { name: queue, retryLimit: 3, retryDelay: 5, expireInSeconds: Math.max(60, s.intervalSeconds * 2) });
    await boss.work(queue, { pollingIntervalSeconds: Math.min(2, Math.max(0.5, s.intervalSeconds / 2)) }, async () => {
      const started = Date.now();
      await logFailure(logger, queue, () => s.run({ logger: logger.child({ job: s.name }) }));
      logger.debug({ job: s.name, ms: Date.now() - started }, 'scheduled job finished');
    });
    const tick = () =>
      void boss
        .send(queue, {}, { singletonKey: s.name, singletonSeconds: s.intervalSeconds })
        .catch((err: Error) => logger.warn({ err: err.message, job: s.name }, 'could not schedule'));
    tick();
    timers.push(setInterval(tick, Math.max(1000, (s.intervalSeconds * 1000) / 2)));
  }

  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const dispatchNow = async () => {
    const r = await dispatchPending({ db: rt.db, internalTypes: () => new Set(consumers.keys()), insertJobs });
    if (r.deliveries || r.resends) boss.notifyWorker(deliveryWorkerId);
    if (r.internal) boss.notifyWorker(eventWorkerId);
    if (r.events || r.resends) logger.debug(r, 'outbox dispatched');
  };
  // The outbox loop: a full pass right after another (backlog), otherwise every dispatchIntervalMs.
  let loopTimer: NodeJS.Timeout | null = null;
  const loop = () => {
    if (stopped) return;
    running = dispatchNow()
      .catch((err: Error) => logger.error({ err: err.message }, 'outbox dispatch failed; retrying'))
      .finally(() => {
        if (!stopped) loopTimer = setTimeout(loop, config.worker.dispatchIntervalMs);
      });
  };
  loop();
  logger.info({ queues: [DELIVERY_QUEUE, EVENT_QUEUE, ...scheduled.map((s) => `every-${s.name}`)] }, 'worker started');

  return {
    boss,
    dispatchNow,
    async close() {
      stopped = true;
      if (loopTimer) clearTimeout(loopTimer);
      for (const t of timers) clearInterval(t);
      await running;
      await boss.stop({ graceful: true, wait: true, timeout: config.webhooks.timeoutMs + 2000 });
      if (!opts.sender) await sender.close();
    },
  };
}

/** A failed job is retried by pg-boss, which says nothing of it: log why, then let it fail. */
async function logFailure(logger: Logger, queue: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    logger.error({ queue, err: (err as Error).message, stack: (err as Error).stack }, 'job failed; it will be retried');
    throw err;
  }
}
