import type { Database } from '@clinic/db';
import type { WorkerRegistry } from '../../worker/types.ts';

/**
 * Retention of the outbox and the delivery log: dispatched events and finished deliveries (with their
 * attempts) older than `days` are deleted. Pending deliveries and the events they need are kept whatever
 * their age, so a delivery can always be sent or re-sent while it exists.
 */
export async function purgeOldDeliveries(db: Database, days: number): Promise<{ deliveries: number; events: number }> {
  return db.transaction(async (tx) => {
    const d = await tx.query(
      `delete from webhook_deliveries where status <> 'pending' and updated_at < now() - make_interval(days => $1)`,
      [days],
    );
    const e = await tx.query(
      `delete from domain_events e where e.dispatched_at < now() - make_interval(days => $1)
         and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')`,
      [days],
    );
    return { deliveries: d.rowCount, events: e.rowCount };
  });
}

export function registerWebhookJobs(registry: WorkerRegistry, deps: { db: Database; retentionDays: number }): void {
  registry.every('webhooks.retention', 3600, async ({ logger }) => {
    const r = await purgeOldDeliveries(deps.db, deps.retentionDays);
    if (r.deliveries || r.events) logger.info(r, 'old deliveries and events deleted');
  });
}
