import type { Database } from '@clinic/db';
import { SUBSCRIBABLE_TYPES } from '../modules/events/catalog.ts';
import type { DomainEvent } from './types.ts';

/** What one dispatch pass made: the queue names it fed, so the worker can wake their local consumers. */
export interface DispatchResult {
  events: number;
  deliveries: number;
  internal: number;
  resends: number;
}

export interface DispatchDeps {
  db: Database;
  /** Event types with internal consumers (WorkerRegistry.onEvent). */
  internalTypes: () => ReadonlySet<string>;
  /** Inserts jobs through pg-boss inside the given transaction. */
  insertJobs: (tx: Parameters<Parameters<Database['transaction']>[0]>[0], jobs: { name: string; data: object }[]) => Promise<void>;
  batchSize?: number;
}

/**
 * One pass of the transactional outbox: takes undispatched events (skipping rows another worker holds),
 * creates one delivery per matching active subscription and one job per delivery and per internal
 * consumer, and stamps the events dispatched, all in one transaction. A crash anywhere leaves the events
 * undispatched and the pass runs again; deliveries are unique per (subscription, event), so a pass that
 * runs twice never sends twice.
 */
export async function dispatchPending(deps: DispatchDeps): Promise<DispatchResult> {
  const limit = deps.batchSize ?? 500;
  return deps.db.transaction(async (tx) => {
    const { rows: events } = await tx.query<DomainEvent>(
      `with ev as (
         select id from domain_events where dispatched_at is null order by id limit $1 for update skip locked
       )
       update domain_events e set dispatched_at = now() from ev where e.id = ev.id
       returning e.id, e.organization_id, e.type, e.data, e.principal_id, e.occurred_at`,
      [limit],
    );
    const jobs: { name: string; data: object }[] = [];
    let deliveries = 0;
    // Only catalog types reach webhooks: internal events (and types no module declared) stay inside.
    const deliverable = events.filter((e) => SUBSCRIBABLE_TYPES.has(e.type));
    if (deliverable.length) {
      const { rows } = await tx.query<{ id: string }>(
        `insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type)
         select s.organization_id, s.id, e.id, e.type
         from unnest($1::uuid[], $2::uuid[], $3::text[]) as e (id, organization_id, type)
         join webhook_subscriptions s on s.organization_id = e.organization_id and s.status = 'active'
           and (e.type = any (s.event_types) or '*' = any (s.event_types))
         order by e.id
         on conflict (subscription_id, event_id) do nothing
         returning id`,
        [deliverable.map((e) => e.id), deliverable.map((e) => e.organization_id), deliverable.map((e) => e.type)],
      );
      deliveries = rows.length;
      for (const r of rows) jobs.push({ name: 'webhook-delivery', data: { delivery_id: r.id, attempt: 1 } });
    }
    const internalTypes = deps.internalTypes();
    const internal = events.filter((e) => internalTypes.has(e.type));
    for (const e of internal) jobs.push({ name: 'domain-event', data: { event: e } });

    // Manual re-sends flagged by the API (webhooks/service.ts resendDelivery).
    const { rows: resends } = await tx.query<{ id: string; attempts: number }>(
      `with r as (
         select id from webhook_deliveries where resend_requested_at is not null order by resend_requested_at limit $1 for update skip locked
       )
       update webhook_deliveries d set resend_requested_at = null from r where d.id = r.id returning d.id, d.attempts`,
      [limit],
    );
    for (const r of resends)
      jobs.push({ name: 'webhook-delivery', data: { delivery_id: r.id, attempt: r.attempts + 1, trigger: 'resend' } });

    if (jobs.length) await deps.insertJobs(tx, jobs);
    return { events: events.length, deliveries, internal: internal.length, resends: resends.length };
  });
}
