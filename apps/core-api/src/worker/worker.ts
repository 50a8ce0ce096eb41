import type PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import type { Runtime } from '../platform/runtime.ts';
import { createBoss, executorOf } from './boss.ts';
import { inFlight } from './in-flight.ts';
import { dispatchPending, EVENT_QUEUE } from './dispatcher.ts';
import { registerAllJobs } from './registry.ts';
import type { DomainEvent, FanOut, QueueContext, QueuedJob, QueueOptions, WorkerRegistry } from './types.ts';

export interface Worker {
  boss: PgBoss;
  /** Runs one outbox pass now (tests, and the loop below). */
  dispatchNow(): Promise<void>;
  close(): Promise<void>;
}

export interface WorkerOptions {
  /** Extra registrations (tests); the modules' own come from registry.ts. */
  register?: (registry: WorkerRegistry) => void;
}

interface ModuleQueue {
  name: string;
  options: QueueOptions;
  handle: (jobs: object[], ctx: QueueContext<object>) => Promise<void>;
}

/**
 * The worker (architecture section 1): pg-boss queues registered by the modules, internal event consumers
 * and scheduled jobs, fed by the outbox dispatcher loop. It knows no module: each registers what it needs
 * in registry.ts. `npm run worker` runs it alone; on the embedded default it runs inside the API process.
 * Several workers may run at once: the outbox pass skips rows another holds, pg-boss hands each job to
 * one worker, and scheduled jobs are throttled to one per interval.
 */
export async function startWorker(rt: Runtime, opts: WorkerOptions = {}): Promise<Worker> {
  const { config } = rt;
  const logger: Logger = rt.logger.child({ component: 'worker' });
  const { boss, statements } = createBoss(rt.db, config);
  boss.on('error', (err: Error) => logger.error({ err: err.message }, 'job system error'));
  await boss.start();

  const consumers = new Map<string, ((event: DomainEvent, ctx: { logger: Logger }) => Promise<void>)[]>();
  const scheduled: { name: string; intervalSeconds: number; run: (ctx: { logger: Logger }) => Promise<void> }[] = [];
  const queues: ModuleQueue[] = [];
  const fanOuts: FanOut[] = [];
  const closers: (() => Promise<void>)[] = [];
  const registry: WorkerRegistry = {
    every: (name, intervalSeconds, run) => void scheduled.push({ name, intervalSeconds, run }),
    onEvent: (type, handle) => void consumers.set(type, [...(consumers.get(type) ?? []), handle]),
    queue: (name, options, handle) => void queues.push({ name, options, handle: handle as ModuleQueue['handle'] }),
    fanOut: (step) => void fanOuts.push(step),
    onClose: (close) => void closers.push(close),
  };
  registerAllJobs(registry, rt);
  opts.register?.(registry);

  const insertJobs = async (tx: Parameters<typeof executorOf>[0], jobs: QueuedJob[]) => {
    const rows = jobs.map((j) => ({
      name: j.name,
      data: j.data,
      ...(j.startAfter ? { startAfter: j.startAfter.toISOString() } : {}),
      ...(j.priority ? { priority: j.priority } : {}),
    }));
    await boss.insert(rows as PgBoss.JobInsert[], { db: executorOf(tx) } as never);
  };

  // Handlers still running. pg-boss's graceful stop gives up waiting after its timeout, and a handler it left
  // running would then use the database after our caller closed it: close() waits for these itself.
  const handlers = inFlight();
  const tracked = (work: () => Promise<void>): Promise<void> => handlers.track(work());

  // The modules' queues; the id of each one's worker, to wake it when the outbox fed it.
  const workerIds = new Map<string, string>();
  for (const q of queues) {
    const { batchSize, pollingIntervalSeconds, ...settings } = q.options;
    await boss.createQueue(q.name, { name: q.name, ...settings });
    await boss.updateQueue(q.name, { name: q.name, ...settings });
    let id = '';
    const ctx: QueueContext<object> = {
      logger,
      enqueue: (tx, next) =>
        insertJobs(
          tx,
          next.map((j) => ({ name: q.name, ...j })),
        ),
    };
    id = await boss.work<object>(q.name, { batchSize, pollingIntervalSeconds: pollingIntervalSeconds ?? 0.5 }, (jobs) =>
      tracked(async () => {
        await logFailure(logger, q.name, () =>
          q.handle(
            jobs.map((j) => j.data),
            ctx,
          ),
        );
        // A full batch means more are waiting: fetch again at once instead of sleeping the polling interval.
        if (jobs.length === batchSize) boss.notifyWorker(id);
      }),
    );
    workerIds.set(q.name, id);
  }

  await boss.createQueue(EVENT_QUEUE, { name: EVENT_QUEUE, retryLimit: 10, retryDelay: 5, retryBackoff: true, expireInSeconds: 300 });
  const eventWorkerId = await boss.work<{ event: DomainEvent }>(EVENT_QUEUE, { batchSize: 10, pollingIntervalSeconds: 0.5 }, (jobs) =>
    tracked(async () => {
      // Each event stands alone: a consumer that fails sends only its own job back for a retry. (A
      // throw here would fail the whole batch, so one bad event held back, and re-ran, every event
      // fetched with it.) pg-boss then completes only the jobs still active.
      for (const job of jobs) {
        const { event } = job.data;
        try {
          for (const handle of consumers.get(event.type) ?? []) {
            await handle(event, { logger: logger.child({ event_id: event.id, event_type: event.type }) });
          }
        } catch (err) {
          logger.error(
            { queue: EVENT_QUEUE, event_id: event.id, event_type: event.type, err: (err as Error).message, stack: (err as Error).stack },
            'event consumer failed; this event will be retried',
          );
          await boss.fail(EVENT_QUEUE, job.id, { message: (err as Error).message });
        }
      }
    }),
  );
  workerIds.set(EVENT_QUEUE, eventWorkerId);

  // Scheduled jobs: every instance proposes a tick; pg-boss's throttle (singletonSeconds) keeps one per interval.
  const timers: NodeJS.Timeout[] = [];
  for (const s of scheduled) {
    const queue = `every-${s.name}`;
    await boss.createQueue(queue, { name: queue, retryLimit: 3, retryDelay: 5, expireInSeconds: Math.max(60, s.intervalSeconds * 2) });
    await boss.work(queue, { pollingIntervalSeconds: Math.min(2, Math.max(0.5, s.intervalSeconds / 2)) }, () =>
      tracked(async () => {
        const started = Date.now();
        await logFailure(logger, queue, () => s.run({ logger: logger.child({ job: s.name }) }));
        logger.debug({ job: s.name, ms: Date.now() - started }, 'scheduled job finished');
      }),
    );
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
    const r = await dispatchPending({ db: rt.db, internalTypes: () => new Set(consumers.keys()), fanOuts, insertJobs });
    for (const queue of Object.keys(r.jobs)) {
      const id = workerIds.get(queue);
      if (id) boss.notifyWorker(id);
    }
    if (r.events || Object.keys(r.jobs).length) logger.debug(r, 'outbox dispatched');
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
  logger.info({ queues: [...workerIds.keys(), ...scheduled.map((s) => `every-${s.name}`)] }, 'worker started');

  return {
    boss,
    dispatchNow,
    async close() {
      stopped = true;
      if (loopTimer) clearTimeout(loopTimer);
      for (const t of timers) clearInterval(t);
      await running;
      await boss.stop({ graceful: true, wait: true, timeout: config.webhooks.timeoutMs + 2000 });
      // Quiet means no handler and no pg-boss statement still running. A fetch in flight when stop() was asked
      // still hands its jobs to a handler, and each handler's end sends a completion that pg-boss does not
      // await, so look again after each wave until nothing new started. Bounded by the longest budget a job
      // has (LONG_OPERATION_TIMEOUT_MS); each job is idempotent and comes back if cut short.
      let timer: NodeJS.Timeout | undefined;
      let outOfTime = false;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          outOfTime = true;
          resolve();
        }, config.timeouts.longMs);
      });
      do {
        if (handlers.size) logger.info({ running: handlers.size }, 'waiting for running jobs before stopping');
        await Promise.race([handlers.settled().then(statements.settled), bound]);
        // What a handler's end or a late fetch starts (a completion, the next handler) begins within this turn.
        await new Promise((resolve) => setImmediate(resolve));
      } while (!outOfTime && (handlers.size || statements.size));
      clearTimeout(timer);
      for (const close of closers) await close();
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
