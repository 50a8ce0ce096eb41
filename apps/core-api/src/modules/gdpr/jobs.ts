import type { Database } from '@clinic/db';
import type { WorkerRegistry } from '../../worker/types.ts';
import { emptyExpiredExports, requeueStaleExports } from './queries.ts';

/** A running export whose job row has not moved for this long lost its runner (the process died). */
export const STALE_EXPORT_MINUTES = 10;
const MAX_EXPORT_ATTEMPTS = 3;

/**
 * Export jobs that a dead API instance left `running` go back to the queue (or fail after three attempts),
 * so a crash never strands a data-subject request. Progress updates touch updated_at, so a live job never
 * looks stale. Returns how many jobs were requeued and failed.
 */
export async function recoverStaleExports(
  db: Database,
  staleMinutes = STALE_EXPORT_MINUTES,
): Promise<{ requeued: number; failed: number }> {
  const rows = await requeueStaleExports(db, staleMinutes, MAX_EXPORT_ATTEMPTS);
  return { requeued: rows.filter((r) => r.status === 'queued').length, failed: rows.filter((r) => r.status === 'failed').length };
}

/** Expired archives are deleted; the job row stays (downloads answer 410 export_expired). */
export async function purgeExpiredExports(db: Database): Promise<number> {
  return emptyExpiredExports(db);
}

export function registerGdprJobs(registry: WorkerRegistry, deps: { db: Database }): void {
  registry.every('gdpr.export_recovery', 60, async ({ logger }) => {
    const r = await recoverStaleExports(deps.db);
    if (r.requeued || r.failed) logger.warn(r, 'stale gdpr exports recovered');
  });
  registry.every('gdpr.export_expiry', 3600, async ({ logger }) => {
    const n = await purgeExpiredExports(deps.db);
    if (n) logger.info({ purged: n }, 'expired gdpr export archives deleted');
  });
}
