import type { Queryable } from '@clinic/db';
import type { Logger } from 'pino';

/** A row of the domain-event outbox (migration 0012), as handed to its consumers. */
export interface DomainEvent {
  id: string;
  organization_id: string | null;
  type: string;
  data: Record<string, unknown>;
  principal_id: string | null;
  occurred_at: string;
}

/** A job to put on a queue, inside the transaction that decided it. */
export interface QueuedJob {
  name: string;
  data: object;
  startAfter?: Date;
  /** Higher runs first (pg-boss fetches by priority, then age); default 0. */
  priority?: number;
}

/** The settings of a module's own queue (pg-boss). */
export interface QueueOptions {
  retryLimit: number;
  retryDelay: number;
  retryBackoff?: boolean;
  /** A job not finished this long after it started is taken to have crashed, and runs again. */
  expireInSeconds: number;
  /** Jobs handed to the handler at once; a full batch is followed at once by the next. */
  batchSize: number;
  pollingIntervalSeconds?: number;
}

/** What a queue's handler gets besides its jobs. */
export interface QueueContext<T> {
  logger: Logger;
  /** Queues follow-up jobs on the same queue, inside the given transaction. */
  enqueue(tx: Queryable, jobs: { data: T; startAfter?: Date; priority?: number }[]): Promise<void>;
}

/**
 * One step of every outbox pass, in its transaction: the events the pass claimed (possibly none) become
 * jobs of the module's queues (and the step may also pick up rows of its own, such as manual re-sends).
 */
export type FanOut = (tx: Queryable, events: DomainEvent[], ctx: { limit: number }) => Promise<QueuedJob[]>;

/**
 * What a module registers with the worker (`npm run worker`; in-process on the embedded default).
 * Each module exports a `register...Jobs(registry, deps)` function that apps/core-api/src/worker/registry.ts
 * calls; the worker itself knows no module.
 */
export interface WorkerRegistry {
  /**
   * A scheduled job: runs about every `intervalSeconds` on ONE worker instance at a time (the job
   * system's singleton), durably: a run cut short by a crash runs again. `run` must be idempotent.
   */
  every(name: string, intervalSeconds: number, run: (ctx: { logger: Logger }) => Promise<void>): void;
  /**
   * An internal consumer of a domain event type (emitted with `select app.emit_event(org, type, data)` in
   * the transaction of the change). Delivered at least once, through a durable job with retries:
   * handlers must be idempotent (key on event.id or on the data's own ids).
   */
  onEvent(type: string, handle: (event: DomainEvent, ctx: { logger: Logger }) => Promise<void>): void;
  /** A queue of the module's own, its jobs handled in batches (at least once: handlers must be idempotent). */
  queue<T extends object>(name: string, options: QueueOptions, handle: (jobs: T[], ctx: QueueContext<T>) => Promise<void>): void;
  /** A step of every outbox pass (see FanOut). */
  fanOut(step: FanOut): void;
  /** Runs when the worker stops, after its queues have drained (close clients the module opened). */
  onClose(close: () => Promise<void>): void;
}
