import type { Database } from '@clinic/db';
import type { WorkerRegistry } from '../../worker/types.ts';
import { markNoShows } from '../appointments/service.ts';
import { sweepHolds } from './service.ts';

/** Registered by apps/core-api/src/worker/registry.ts: expired holds and appointments nobody attended. */
export function registerSchedulingJobs(registry: WorkerRegistry, deps: { db: Database; noShowGraceMinutes: number }): void {
  registry.every('scheduling.expired_holds', 60, async ({ logger }) => {
    const ended = await sweepHolds(deps.db);
    if (ended.length) logger.info({ holds: ended.length }, 'expired holds ended');
  });
  registry.every('appointments.no_show', 300, async ({ logger }) => {
    const n = await deps.db.transaction((tx) => markNoShows(tx, deps.noShowGraceMinutes));
    if (n) logger.info({ appointments: n }, 'appointments marked no_show');
  });
}
