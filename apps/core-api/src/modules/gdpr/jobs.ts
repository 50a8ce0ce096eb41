import type { Database } from '@clinic/db';
import type { WorkerRegistry } from '../../worker/types.ts';

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
  const { rows } = await db.query<{ status: string }>(
    `update jobs set status = case when attempts >= $2 then 'failed' else 'queued' end,
            error = case when attempts >= $2 then 'The export failed repeatedly; request a new one.' else error end,
            progress = 0
     where kind = 'gdpr_export' and status = 'running' and updated_at < now() - make_interval(mins => $1)
     returning status`,
    [staleMinutes, MAX_EXPORT_ATTEMPTS],
  );
  return { requeued: rows.filter((r) => r.status === 'queued').length, failed: rows.filter((r) => r.status === 'failed').length };
}

/** Expired archives are deleted; the job row stays (downloads answer 410 export_expired). */
export async function purgeExpiredExports(db: Database): Promise<number> {
  const { rowCount } = await db.query(`update jobs set file = null where kind = 'gdpr_export' and file is not null and expires_at < now()`);
  return rowCount;
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
