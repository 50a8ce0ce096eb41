import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import type { ComposerConfig } from './config.ts';
import { createDelivery } from './delivery/index.ts';
import type { DeliveryProvider } from './delivery/types.ts';
import * as q from './queries.ts';

/** The worker contract (apps/core-api/src/worker/types.ts), restated so the composer does not import the core API. */
interface Registry {
  every(name: string, intervalSeconds: number, run: (ctx: { logger: Logger }) => Promise<void>): void;
}

/**
 * Asks the provider about renders still processing and records the ones that became ready or
 * failed. The renderer follows its own uploads up in the background; this sweep is the safety net
 * for an instance that stopped meanwhile. Idempotent: settling only moves rows out of processing.
 */
export async function settleProcessingRenders(
  d: { db: Database; delivery: DeliveryProvider; logger: Logger },
  opts: { limit?: number; minAgeSeconds?: number } = {},
): Promise<number> {
  const rows = await q.asComposer(d.db, (tx) => q.listProcessing(tx, opts.limit ?? 100, opts.minAgeSeconds ?? 120));
  let settled = 0;
  for (const row of rows) {
    const v = await d.delivery.status(row.stream_video_id!).catch((err: Error) => {
      d.logger.warn({ render_id: row.id, err: err.message }, 'delivery status unavailable');
      return null;
    });
    if (v && v.state !== 'processing') {
      await q.asComposer(d.db, (tx) => q.settleProcessing(tx, row.id, v));
      settled++;
    }
  }
  return settled;
}

/**
 * Registered by apps/core-api/src/worker/registry.ts: the sweep every minute on one worker. The
 * composer's settings are read when the job first runs, so a worker deployed without them fails
 * this job (logged), not its own start. The worker needs the composer's COMPOSER_DELIVERY / STREAM_*.
 */
export function registerComposerJobs(registry: Registry, deps: { db: Database; logger: Logger; config: () => ComposerConfig }): void {
  let delivery: DeliveryProvider | null = null;
  registry.every('composer.settle_renders', 60, async ({ logger }) => {
    delivery ??= createDelivery(deps.config(), logger);
    const n = await settleProcessingRenders({ db: deps.db, delivery, logger });
    if (n) logger.info({ settled: n }, 'composer renders settled');
  });
}
