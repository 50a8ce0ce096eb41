import type { Database, Queryable } from '@clinic/db';
import type { RateLimiter } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../../platform/secrets.ts';
import { insertAudit } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { WebhookSender, SendResult } from './sender.ts';
import { signDelivery } from './signing.ts';

/** The data of one durable delivery job: which delivery, and which attempt this job is. */
export interface DeliveryJob {
  delivery_id: string;
  attempt: number;
  /** 'resend' for a manual re-send (the log says so); absent for the event's own attempts. */
  trigger?: 'resend';
}

/** Queues follow-up jobs inside the given transaction (the worker passes pg-boss's transactional insert). */
export type Enqueue = (tx: Queryable, jobs: { data: DeliveryJob; startAfter?: Date }[]) => Promise<void>;

export interface DeliveryEngineDeps {
  db: Database;
  secrets: SecretBox;
  sender: WebhookSender;
  /** Per-subscription limiter: spec 8, 50 deliveries per 5 seconds. */
  limiter: RateLimiter;
  config: Config['webhooks'];
  logger: Logger;
  enqueue: Enqueue;
}

interface Loaded {
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

/** Delay before the attempt after `attempt` (1-based) failed, with ±10% jitter; null when attempts are used up. */
export function retryDelaySeconds(schedule: readonly number[], attempt: number, random = Math.random): number | null {
  const base = schedule[attempt - 1];
  if (base === undefined) return null;
  return Math.max(0, base * (0.9 + 0.2 * random()));
}

/**
 * Runs one batch of delivery jobs: loads them in one statement, applies the per-subscription rate limit,
 * sends the allowed ones concurrently, then records every outcome, schedules retries, and disables
 * subscriptions whose endpoint is gone (410) or has failed for too long, all in one transaction.
 * A job whose attempt is already recorded (the worker died after recording, before completing the job)
 * is skipped, so a crash repeats only requests that were on the wire.
 */
export async function processDeliveryJobs(deps: DeliveryEngineDeps, jobs: DeliveryJob[]): Promise<void> {
  if (!jobs.length) return;
  const { rows } = await deps.db.query<Loaded>(
    `select d.id, d.organization_id, d.subscription_id, d.event_id, d.event_type, d.status, d.attempts,
            s.url, s.status as sub_status, s.secret_sealed,
            case when s.previous_secret_expires_at > now() then s.previous_secret_sealed end as previous_sealed,
            s.failing_since, e.data as event_data
     from webhook_deliveries d
     join webhook_subscriptions s on s.id = d.subscription_id
     left join domain_events e on e.id = d.event_id
     where d.id = any($1::uuid[])`,
    [jobs.map((j) => j.delivery_id)],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const deferred: { data: DeliveryJob; startAfter: Date }[] = [];
  const dropped: Loaded[] = [];
  const sending: { job: DeliveryJob; d: Loaded }[] = [];
  const candidates: { job: DeliveryJob; d: Loaded }[] = [];
  for (const job of jobs) {
    const d = byId.get(job.delivery_id);
    // Gone (subscription deleted), finished, or this attempt already recorded: nothing to do.
    if (d?.status !== 'pending' || d.attempts >= job.attempt) continue;
    if (d.sub_status !== 'active' || !d.event_data) dropped.push(d);
    else candidates.push({ job, d });
  }
  // One limiter call per delivery, all at once (a Redis round trip each when shared).
  const decisions = await Promise.all(candidates.map((c) => deps.limiter.consume(c.d.subscription_id)));
  candidates.forEach((c, i) => {
    const decision = decisions[i]!;
    if (decision.allowed) sending.push(c);
    // Over the subscription's rate: the same attempt later, not counted as a failure.
    else deferred.push({ data: c.job, startAfter: new Date(Date.now() + decision.resetSeconds * 1000 + Math.random() * 250) });
  });

  const results = await Promise.all(
    sending.map(async ({ job, d }) => {
      const secrets = [d.secret_sealed, ...(d.previous_sealed ? [d.previous_sealed] : [])].map((s) => deps.secrets.open(s));
      const signed = signDelivery({ id: d.event_id, type: d.event_type, data: d.event_data! }, secrets);
      return { job, d, result: await deps.sender.send(d.url, signed) };
    }),
  );

  await deps.db.transaction(async (tx) => {
    for (const d of dropped) {
      await tx.query(
        `update webhook_deliveries set status = 'failed', next_attempt_at = null,
           last_error = case when $2 then 'the subscription is disabled' else 'the event no longer exists' end
         where id = $1 and status = 'pending'`,
        [d.id, d.sub_status !== 'active'],
      );
    }
    const next: { data: DeliveryJob; startAfter: Date }[] = [...deferred];
    const outcomes = results.map(({ job, d, result }) => ({
      d,
      attempt: job.attempt,
      trigger: job.trigger ?? ('event' as const),
      result,
      nextAttemptAt: outcome(deps.config, job.attempt, result),
    }));
    await recordAttempts(tx, outcomes);
    for (const o of outcomes)
      if (o.nextAttemptAt) next.push({ data: { delivery_id: o.d.id, attempt: o.attempt + 1 }, startAfter: o.nextAttemptAt });
    const succeeded = [...new Set(outcomes.filter((o) => o.result.ok).map((o) => o.d.subscription_id))];
    if (succeeded.length) {
      await tx.query('update webhook_subscriptions set failing_since = null where id = any($1::uuid[]) and failing_since is not null', [
        succeeded,
      ]);
    }
    const disabled = new Set<string>();
    for (const { d, result } of outcomes) {
      if (result.ok || disabled.has(d.subscription_id)) continue;
      const reason = await failureDisables(tx, deps.config, d, result);
      if (reason) {
        disabled.add(d.subscription_id);
        await disableSubscription(tx, d, reason, result);
        deps.logger.warn({ subscription_id: d.subscription_id, reason, status_code: result.statusCode }, 'webhook subscription disabled');
      }
    }
    if (next.length) await deps.enqueue(tx, next);
  });
}

/** When the next attempt runs after this one, or null when there is none (success, 410, or attempts used up). */
function outcome(config: Config['webhooks'], attempt: number, r: SendResult): Date | null {
  if (r.ok || r.statusCode === 410) return null;
  const delay = retryDelaySeconds(config.retryScheduleSeconds, attempt);
  return delay === null ? null : new Date(Date.now() + delay * 1000);
}

interface AttemptOutcome {
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
     on conflict (delivery_id, attempt) do nothing`,
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

/**
 * A 410 Gone means the receiver removed the endpoint: stop at once. Otherwise a subscription is disabled
 * when its endpoint has failed, with no success in between, for longer than the configured threshold.
 */
async function failureDisables(tx: Queryable, config: Config['webhooks'], d: Loaded, r: SendResult): Promise<'gone' | 'failing' | null> {
  if (r.statusCode === 410) return 'gone';
  const { rows } = await tx.query<{ since: Date }>(
    `update webhook_subscriptions set failing_since = coalesce(failing_since, now()) where id = $1 returning failing_since as since`,
    [d.subscription_id],
  );
  const since = rows[0]?.since;
  // failing_since predates this attempt: this failure continues an earlier run of failures.
  if (since && d.failing_since && Date.now() - new Date(since).getTime() >= config.disableAfterSeconds * 1000) return 'failing';
  return null;
}

async function disableSubscription(tx: Queryable, d: Loaded, reason: 'gone' | 'failing', r: SendResult): Promise<void> {
  const { rowCount } = await tx.query(
    `update webhook_subscriptions set status = 'disabled', disabled_reason = $2, disabled_at = now() where id = $1 and status = 'active'`,
    [d.subscription_id, reason],
  );
  if (!rowCount) return;
  await insertAudit(tx, {
    organizationId: d.organization_id,
    actorUserId: null,
    action: 'webhook_subscription.disabled',
    entityType: 'webhook_subscription',
    entityId: d.subscription_id,
    actionContext: 'system',
    data: { reason, status_code: r.statusCode, error: r.error, failing_since: d.failing_since },
  });
  await emitEvent(tx, {
    organizationId: d.organization_id,
    type: 'webhook_subscription.disabled',
    data: { organization_id: d.organization_id, subscription_id: d.subscription_id, reason },
  });
}
