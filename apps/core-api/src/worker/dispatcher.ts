import type { Database, Queryable } from '@clinic/db';
import { claimPendingEvents } from './queries.ts';
import type { FanOut, QueuedJob } from './types.ts';

/** What one dispatch pass made: how many events it claimed and how many jobs it queued, per queue. */
export interface DispatchResult {
  events: number;
  jobs: Record<string, number>;
}

export interface DispatchDeps {
  db: Database;
  /** Event types with internal consumers (WorkerRegistry.onEvent). */
  internalTypes: () => ReadonlySet<string>;
  /** The modules' outbox steps (WorkerRegistry.fanOut), run in the pass's transaction. */
  fanOuts: readonly FanOut[];
  /** Inserts jobs through pg-boss inside the given transaction. */
  insertJobs: (tx: Queryable, jobs: QueuedJob[]) => Promise<void>;
  batchSize?: number;
}

/** The queue of internal event consumers. */
export const EVENT_QUEUE = 'domain-event';

/**
 * One pass of the transactional outbox: takes undispatched events (skipping rows another worker holds),
 * lets every module's fan-out step turn them into jobs (webhook deliveries, for one), adds one job per
 * event with internal consumers, and stamps the events dispatched, all in one transaction. A crash
 * anywhere leaves the events undispatched and the pass runs again; the steps make their rows idempotent
 * (deliveries are unique per subscription and event), so a pass that runs twice never sends twice.
 */
export async function dispatchPending(deps: DispatchDeps): Promise<DispatchResult> {
  const limit = deps.batchSize ?? 500;
  return deps.db.transaction(async (tx) => {
    const events = await claimPendingEvents(tx, limit);
    const jobs: QueuedJob[] = [];
    for (const step of deps.fanOuts) jobs.push(...(await step(tx, events, { limit })));
    const internalTypes = deps.internalTypes();
    for (const e of events) if (internalTypes.has(e.type)) jobs.push({ name: EVENT_QUEUE, data: { event: e } });
    if (jobs.length) await deps.insertJobs(tx, jobs);
    const counts: Record<string, number> = {};
    for (const j of jobs) counts[j.name] = (counts[j.name] ?? 0) + 1;
    return { events: events.length, jobs: counts };
  });
}
