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

/**
 * What a module registers with the worker (`npm run worker`; in-process on the embedded default).
 * Each module exports a `register...Jobs(registry, rt)` function that apps/core-api/src/worker/registry.ts calls.
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
}
