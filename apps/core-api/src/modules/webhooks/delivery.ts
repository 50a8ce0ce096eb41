import type { Database, Queryable } from '@clinic/db';
import type { RateLimiter } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../../platform/secrets.ts';
import { insertAudit } from '../audit/queries.ts';
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
  for (const job of jobs) {
    const d = byId.get(job.delivery_id);
    // Gone (subscription deleted), finished, or this attempt already recorded: nothing to do.
    if (!d || d.status !== 'pending' || d.attempts >= job.attempt) continue;
    if (d.sub_status !== 'active' || !d.event_data) {
      dropped.push(d);
      continue;
    }
    const decision = await deps.limiter.consume(d.subscription_id);
    if (!decision.allowed) {
      // Over the subscription's rate: the same attempt later, not counted as a failure.
      deferred.push({ data: job, startAfter: new Date(Date.now() + decision.resetSeconds * 1000 + Math.random() * 250) });
      continue;
    }
    sending.push({ job, d });
  }

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
    const disabled = new Set<string>();
    for (const { job, d, result } of results) {
      const retry = outcome(deps.config, job.attempt, result);
      await recordAttempt(tx, d, job.attempt, job.trigger ?? 'event', result, retry);
      if (retry) next.push({ data: { delivery_id: d.id, attempt: job.attempt + 1 }, startAfter: retry });
      if (result.ok) {
        await tx.query('update webhook_subscriptions set failing_since = null where id = $1 and failing_since is not null', [d.subscription_id]);
        continue;
      }
      if (disabled.has(d.subscription_id)) continue;
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

/** Writes the attempt's log row and moves the delivery on. Shared with the test and resend routes. */
export async function recordAttempt(
  tx: Queryable,
  d: { id: string; organization_id: string; subscription_id: string },
  attempt: number,
  trigger: 'event' | 'test' | 'resend',
  r: SendResult,
  nextAttemptAt: Date | null,
): Promise<void> {
  await tx.query(
    `insert into webhook_delivery_attempts
       (organization_id, subscription_id, delivery_id, attempt, trigger, status_code, latency_ms, error, response_body, next_attempt_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, left($9, 1024), $10)
     on conflict (delivery_id, attempt) do nothing`,
    [d.organization_id, d.subscription_id, d.id, attempt, trigger, r.statusCode, r.latencyMs, r.error, r.responseBody, nextAttemptAt],
  );
  await tx.query(
    `update webhook_deliveries set attempts = greatest(attempts, $2),
       status = case when $3 then 'delivered' when $4::timestamptz is null then 'failed' else 'pending' end,
       delivered_at = case when $3 then now() else delivered_at end,
       next_attempt_at = $4, last_status_code = $5, last_error = $6
     where id = $1`,
    [d.id, attempt, r.ok, nextAttemptAt, r.statusCode, r.error],
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
