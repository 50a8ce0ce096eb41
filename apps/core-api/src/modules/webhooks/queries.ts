import type { Queryable } from '@clinic/db';
import { SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';
import type { SendResult } from './sender.ts';
import { pageOf } from '../../platform/page.ts';

/** A subscription as the API shows it: never a secret (spec 2.9: the secret appears only when created). */
export interface SubscriptionRow {
  id: string;
  organization_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  disabled_at: Date | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, organization_id, url, description, event_types, status, disabled_reason, disabled_at,
  previous_secret_expires_at, failing_since, created_at, updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function insertSubscription(
  tx: Queryable,
  orgId: string,
  input: { url: string; description: string | null; eventTypes: string[]; secretSealed: string; principalId: string },
): Promise<SubscriptionRow> {
  const { rows } = await tx.query<SubscriptionRow>(
    `insert into webhook_subscriptions (organization_id, url, description, event_types, secret_sealed, created_by_principal_id)
     values ($1, $2, $3, $4, $5, $6) returning ${COLUMNS}`,
    [orgId, input.url, input.description, input.eventTypes, input.secretSealed, input.principalId],
  );
  return rows[0]!;
}

export async function findSubscription(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<SubscriptionRow | null> {
  const { rows } = await tx.query<SubscriptionRow>(
    `select ${COLUMNS} from webhook_subscriptions where organization_id = $1 and id = $2 ${opts.forUpdate ? 'for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

/** The sealed secrets of a subscription (current first, then the previous one while its overlap lasts). */
export async function sealedSecrets(tx: Queryable, orgId: string, id: string): Promise<string[]> {
  const { rows } = await tx.query<{ secret_sealed: string; previous: string | null }>(
    `select secret_sealed, case when previous_secret_expires_at > now() then previous_secret_sealed end as previous
     from webhook_subscriptions where organization_id = $1 and id = $2`,
    [orgId, id],
  );
  const r = rows[0];
  return r ? [r.secret_sealed, ...(r.previous ? [r.previous] : [])] : [];
}

export async function listSubscriptions(
  tx: Queryable,
  orgId: string,
  filters: { status?: string; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: SubscriptionRow[]; total: number }> {
  const where = new SqlWhere();
  where.add('organization_id = ?', orgId);
  if (filters.status) where.add('status = ?', filters.status);
  where.dateRange('created_at', filters.created);
  const from = `from webhook_subscriptions where ${where.text}`;
  return pageOf<SubscriptionRow>(tx, `select ${COLUMNS}`, from, where, sort, page);
}

export async function updateSubscription(
  tx: Queryable,
  orgId: string,
  id: string,
  set: { url?: string; description?: string | null; eventTypes?: string[]; status?: 'active' | 'disabled' },
): Promise<SubscriptionRow> {
  const sets: string[] = [];
  const params: unknown[] = [orgId, id];
  const put = (col: string, v: unknown) => {
    params.push(v);
    sets.push(`${col} = $${params.length}`);
  };
  if (set.url !== undefined) put('url', set.url);
  if (set.description !== undefined) put('description', set.description);
  if (set.eventTypes !== undefined) put('event_types', set.eventTypes);
  if (set.status === 'active') sets.push(`status = 'active', disabled_reason = null, disabled_at = null, failing_since = null`);
  if (set.status === 'disabled') sets.push(`status = 'disabled', disabled_reason = 'manual', disabled_at = now()`);
  const { rows } = await tx.query<SubscriptionRow>(
    `update webhook_subscriptions set ${sets.join(', ')} where organization_id = $1 and id = $2 returning ${COLUMNS}`,
    params,
  );
  return rows[0]!;
}

export async function rotateSecret(
  tx: Queryable,
  orgId: string,
  id: string,
  newSealed: string,
  overlapSeconds: number,
): Promise<SubscriptionRow> {
  const { rows } = await tx.query<SubscriptionRow>(
    `update webhook_subscriptions
     set previous_secret_sealed = case when $4::int > 0 then secret_sealed end,
         previous_secret_expires_at = case when $4::int > 0 then now() + make_interval(secs => $4::int) end,
         secret_sealed = $3
     where organization_id = $1 and id = $2 returning ${COLUMNS}`,
    [orgId, id, newSealed, overlapSeconds],
  );
  return rows[0]!;
}

export async function deleteSubscription(tx: Queryable, orgId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('delete from webhook_subscriptions where organization_id = $1 and id = $2', [orgId, id]);
  return rowCount > 0;
}

/** One row of the delivery log (GET .../events): an attempt, with its delivery's event and state. */
export interface AttemptRow {
  id: string;
  delivery_id: string;
  event_id: string;
  event_type: string;
  delivery_status: string;
  attempt: number;
  trigger: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_body: string | null;
  next_attempt_at: Date | null;
  created_at: Date;
}

export async function listAttempts(
  tx: Queryable,
  orgId: string,
  subscriptionId: string,
  filters: { deliveryStatus?: string; eventType?: string; deliveryId?: string; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: AttemptRow[]; total: number }> {
  const where = new SqlWhere();
  where.add('a.organization_id = ?', orgId);
  where.add('a.subscription_id = ?', subscriptionId);
  if (filters.deliveryStatus) where.add('d.status = ?', filters.deliveryStatus);
  if (filters.eventType) where.add('d.event_type = ?', filters.eventType);
  if (filters.deliveryId) where.add('a.delivery_id = ?', filters.deliveryId);
  where.dateRange('a.created_at', filters.created);
  const from = `from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id where ${where.text}`;
  const select = `select a.id, a.delivery_id, d.event_id, d.event_type, d.status as delivery_status, a.attempt, a.trigger, a.status_code,
            a.latency_ms, a.error, a.response_body, a.next_attempt_at, a.created_at`;
  return pageOf<AttemptRow>(tx, select, from, where, sort, page);
}

export interface DeliveryRow {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
}

export async function findDelivery(tx: Queryable, orgId: string, subscriptionId: string, id: string): Promise<DeliveryRow | null> {
  const { rows } = await tx.query<DeliveryRow>(
    `select id, subscription_id, event_id, event_type, status, attempts from webhook_deliveries
     where organization_id = $1 and subscription_id = $2 and id = $3 for update`,
    [orgId, subscriptionId, id],
  );
  return rows[0] ?? null;
}

/**
 * One delivery per active subscription of the event's organization that wants the event's type (or
 * "*"); unique per (subscription, event), so a pass that runs twice creates nothing new. Returns the new ids.
 */
export async function insertDeliveries(
  tx: Queryable,
  events: { id: string; organization_id: string | null; type: string }[],
): Promise<{ id: string; failing: boolean }[]> {
  const { rows } = await tx.query<{ id: string; failing: boolean }>(
    `with d as (
       insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type)
       select s.organization_id, s.id, e.id, e.type
       from unnest($1::uuid[], $2::uuid[], $3::text[]) as e (id, organization_id, type)
       join webhook_subscriptions s on s.organization_id = e.organization_id and s.status = 'active'
         and (e.type = any (s.event_types) or '*' = any (s.event_types))
       order by e.id
       on conflict (organization_id, subscription_id, event_id) do nothing
       returning id, subscription_id
     )
     select d.id, s.failing_since is not null as failing from d join webhook_subscriptions s on s.id = d.subscription_id`,
    [events.map((e) => e.id), events.map((e) => e.organization_id), events.map((e) => e.type)],
  );
  return rows;
}

/** Takes up to `limit` manual re-sends flagged by the API (resendDelivery), clearing the flag. */
export async function claimResends(tx: Queryable, limit: number): Promise<{ id: string; attempts: number }[]> {
  const { rows } = await tx.query<{ id: string; attempts: number }>(
    `with r as (
       select id from webhook_deliveries where resend_requested_at is not null order by resend_requested_at limit $1 for update skip locked
     )
     update webhook_deliveries d set resend_requested_at = null from r where d.id = r.id returning d.id, d.attempts`,
    [limit],
  );
  return rows;
}

/**
 * Retention of the outbox and the delivery log: dispatched events and finished deliveries (with their
 * attempts) older than `days` are deleted. Pending deliveries and the events they need are kept whatever
 * their age, so a delivery can always be sent or re-sent while it exists.
 */
export async function deleteOldDeliveries(tx: Queryable, days: number): Promise<{ deliveries: number; events: number }> {
  const d = await tx.query(`delete from webhook_deliveries where status <> 'pending' and updated_at < now() - make_interval(days => $1)`, [
    days,
  ]);
  const e = await tx.query(
    `delete from domain_events e where e.dispatched_at < now() - make_interval(days => $1)
       and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')`,
    [days],
  );
  return { deliveries: d.rowCount, events: e.rowCount };
}

/** A delivery with what sending it needs: its subscription's URL and secrets, and the event's data. */
export interface Loaded {
  id: string;
  organization_id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  url: string;
  sub_status: string;
  secret_sealed: string;
  previous_sealed: string | null;
  failing_since: Date | null;
  event_data: Record<string, unknown> | null;
}

export async function loadDeliveries(db: Queryable, ids: string[]): Promise<Loaded[]> {
  const { rows } = await db.query<Loaded>(
    `select d.id, d.organization_id, d.subscription_id, d.event_id, d.event_type, d.status, d.attempts,
            s.url, s.status as sub_status, s.secret_sealed,
            case when s.previous_secret_expires_at > now() then s.previous_secret_sealed end as previous_sealed,
            s.failing_since, e.data as event_data
     from webhook_deliveries d
     join webhook_subscriptions s on s.id = d.subscription_id
     left join domain_events e on e.id = d.event_id
     where d.id = any($1::uuid[])`,
    [ids],
  );
  return rows;
}

/** A pending delivery that can no longer be sent (its subscription disabled, or its event gone) fails. */
export async function failUndeliverable(tx: Queryable, id: string, subscriptionDisabled: boolean): Promise<void> {
  await tx.query(
    `update webhook_deliveries set status = 'failed', next_attempt_at = null,
       last_error = case when $2 then 'the subscription is disabled' else 'the event no longer exists' end
     where id = $1 and status = 'pending'`,
    [id, subscriptionDisabled],
  );
}

/** A success ends a run of failures. */
export async function clearFailingSince(tx: Queryable, subscriptionIds: string[]): Promise<void> {
  await tx.query('update webhook_subscriptions set failing_since = null where id = any($1::uuid[]) and failing_since is not null', [
    subscriptionIds,
  ]);
}

/** Marks a subscription failing (if it was not already) and returns since when. */
export async function markFailing(tx: Queryable, subscriptionId: string): Promise<Date | undefined> {
  const { rows } = await tx.query<{ since: Date }>(
    `update webhook_subscriptions set failing_since = coalesce(failing_since, now()) where id = $1 returning failing_since as since`,
    [subscriptionId],
  );
  return rows[0]?.since;
}

/** Disables an active subscription; false when it was not active (another worker got there first). */
export async function disableSubscriptionRow(tx: Queryable, subscriptionId: string, reason: 'gone' | 'failing'): Promise<boolean> {
  const { rowCount } = await tx.query(
    `update webhook_subscriptions set status = 'disabled', disabled_reason = $2, disabled_at = now() where id = $1 and status = 'active'`,
    [subscriptionId, reason],
  );
  return rowCount > 0;
}

export interface AttemptOutcome {
  d: { id: string; organization_id: string; subscription_id: string };
  attempt: number;
  trigger: 'event' | 'test' | 'resend';
  result: SendResult;
  nextAttemptAt: Date | null;
}

/**
 * Writes the attempts' log rows and moves their deliveries on: two set-based statements for a whole batch
 * (a row per attempt would cost a round trip each). Shared with the test route.
 */
export async function recordAttempts(tx: Queryable, items: AttemptOutcome[]): Promise<void> {
  if (!items.length) return;
  const col = <T>(f: (o: AttemptOutcome) => T) => items.map(f);
  await tx.query(
    `insert into webhook_delivery_attempts
       (organization_id, subscription_id, delivery_id, attempt, trigger, status_code, latency_ms, error, response_body, next_attempt_at)
     select a.org, a.sub, a.delivery, a.attempt, a.trigger, a.status_code, a.latency, a.error, left(a.body, 1024), a.next_at
     from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::text[], $6::int[], $7::int[], $8::text[], $9::text[], $10::timestamptz[])
       as a (org, sub, delivery, attempt, trigger, status_code, latency, error, body, next_at)
     on conflict (organization_id, delivery_id, attempt) do nothing`,
    [
      col((o) => o.d.organization_id),
      col((o) => o.d.subscription_id),
      col((o) => o.d.id),
      col((o) => o.attempt),
      col((o) => o.trigger),
      col((o) => o.result.statusCode),
      col((o) => o.result.latencyMs),
      col((o) => o.result.error),
      col((o) => o.result.responseBody),
      col((o) => o.nextAttemptAt),
    ],
  );
  await tx.query(
    `update webhook_deliveries d set attempts = greatest(d.attempts, u.attempt),
       status = case when u.ok then 'delivered' when u.next_at is null then 'failed' else 'pending' end,
       delivered_at = case when u.ok then now() else d.delivered_at end,
       next_attempt_at = u.next_at, last_status_code = u.status_code, last_error = u.error
     from unnest($1::uuid[], $2::int[], $3::bool[], $4::timestamptz[], $5::int[], $6::text[]) as u (id, attempt, ok, next_at, status_code, error)
     where d.id = u.id`,
    [
      col((o) => o.d.id),
      col((o) => o.attempt),
      col((o) => o.result.ok),
      col((o) => o.nextAttemptAt),
      col((o) => o.result.statusCode),
      col((o) => o.result.error),
    ],
  );
}

/** A new id for an event that is not in the outbox (a test delivery's own). */
export async function newEventId(tx: Queryable): Promise<string> {
  const { rows } = await tx.query<{ id: string }>('select app.uuid_v7() as id');
  return rows[0]!.id;
}

/** The delivery row of a test delivery (POST .../test), whose attempt is then recorded like any other. */
export async function insertTestDelivery(tx: Queryable, orgId: string, subscriptionId: string, eventId: string): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(
    `insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type, status) values ($1, $2, $3, 'webhook.test', 'pending') returning id`,
    [orgId, subscriptionId, eventId],
  );
  return rows[0]!.id;
}

/** Flags a delivery for a manual re-send: the next outbox pass queues it (claimResends). */
export async function requestResend(tx: Queryable, deliveryId: string): Promise<void> {
  await tx.query(`update webhook_deliveries set status = 'pending', resend_requested_at = now(), next_attempt_at = now() where id = $1`, [
    deliveryId,
  ]);
}

/** Every subscription's sealed secrets, for re-sealing under a new master key. */
export async function sealedWebhookSecrets(
  db: Queryable,
): Promise<{ id: string; secret_sealed: string; previous_secret_sealed: string | null }[]> {
  const { rows } = await db.query<{ id: string; secret_sealed: string; previous_secret_sealed: string | null }>(
    'select id, secret_sealed, previous_secret_sealed from webhook_subscriptions order by id',
  );
  return rows;
}

/** Compare-and-set of one sealed secret: false when the value changed meanwhile (another re-seal or a rotation). */
export async function resealWebhookSecret(
  db: Queryable,
  id: string,
  column: 'secret_sealed' | 'previous_secret_sealed',
  from: string,
  to: string,
): Promise<boolean> {
  const res = await db.query(`update webhook_subscriptions set ${column} = $3 where id = $1 and ${column} = $2`, [id, from, to]);
  return res.rowCount > 0;
}
