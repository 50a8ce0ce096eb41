import type { Database, Queryable } from '@clinic/db';
import type { RateLimiter } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../../platform/secrets.ts';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { WebhookSender, SendResult } from './sender.ts';
import { signDelivery } from './signing.ts';
import {
  clearFailingSince,
  disableSubscriptionRow,
  failUndeliverable,
  type Loaded,
  loadDeliveries,
  markFailing,
  recordAttempts,
} from './queries.ts';

/** The data of one durable delivery job: which delivery, and which attempt this job is. */
export interface DeliveryJob {
  delivery_id: string;
  attempt: number;
  /** 'resend' for a manual re-send (the log says so); absent for the event's own attempts. */
  trigger?: 'resend';
}

/** Queues follow-up jobs inside the given transaction (the worker passes pg-boss's transactional insert). */
export type Enqueue = (tx: Queryable, jobs: { data: DeliveryJob; startAfter?: Date; priority?: number }[]) => Promise<void>;

/**
 * Fair scheduling between endpoints (as Svix does): a subscription whose endpoint is failing must not
 * delay healthy ones. Its jobs (new ones, retries, deferrals) run at a lower priority, so the queue
 * serves every healthy delivery first whatever the failing one's backlog; and a batch sends at most
 * FAILING_PROBES_PER_BATCH of its deliveries, deferring the rest a moment, so a slow or dead endpoint
 * holds a batch's time-out with one request, not with fifty.
 */
export const FAILING_PRIORITY = -10;
export const FAILING_PROBES_PER_BATCH = 1;

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
  const rows = await loadDeliveries(
    deps.db,
    jobs.map((j) => j.delivery_id),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const deferred: { data: DeliveryJob; startAfter: Date; priority?: number }[] = [];
  const dropped: Loaded[] = [];
  const sending: { job: DeliveryJob; d: Loaded }[] = [];
  const candidates: { job: DeliveryJob; d: Loaded }[] = [];
  const probes = new Map<string, number>();
  for (const job of jobs) {
    const d = byId.get(job.delivery_id);
    // Gone (subscription deleted), finished, or this attempt already recorded: nothing to do.
    if (d?.status !== 'pending' || d.attempts >= job.attempt) continue;
    if (d.sub_status !== 'active' || !d.event_data) {
      dropped.push(d);
      continue;
    }
    if (d.failing_since) {
      const sent = probes.get(d.subscription_id) ?? 0;
      if (sent >= FAILING_PROBES_PER_BATCH) {
        // The same attempt a little later, behind every healthy delivery; not counted as a failure.
        deferred.push({ data: job, startAfter: new Date(Date.now() + 500 + Math.random() * 1000), priority: FAILING_PRIORITY });
        continue;
      }
      probes.set(d.subscription_id, sent + 1);
    }
    candidates.push({ job, d });
  }
  // One limiter call per delivery, all at once (a Redis round trip each when shared).
  const decisions = await Promise.all(candidates.map((c) => deps.limiter.consume(c.d.subscription_id)));
  candidates.forEach((c, i) => {
    const decision = decisions[i]!;
    if (decision.allowed) sending.push(c);
    // Over the subscription's rate: the same attempt later, not counted as a failure.
    else
      deferred.push({
        data: c.job,
        startAfter: new Date(Date.now() + decision.resetSeconds * 1000 + Math.random() * 250),
        priority: c.d.failing_since ? FAILING_PRIORITY : 0,
      });
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
      await failUndeliverable(tx, d.id, d.sub_status !== 'active');
    }
    const next: { data: DeliveryJob; startAfter: Date; priority?: number }[] = [...deferred];
    const outcomes = results.map(({ job, d, result }) => ({
      d,
      attempt: job.attempt,
      trigger: job.trigger ?? ('event' as const),
      result,
      nextAttemptAt: outcome(deps.config, job.attempt, result),
    }));
    await recordAttempts(tx, outcomes);
    // A retry follows a failure: the endpoint is failing now, so it waits behind healthy deliveries.
    for (const o of outcomes)
      if (o.nextAttemptAt)
        next.push({ data: { delivery_id: o.d.id, attempt: o.attempt + 1 }, startAfter: o.nextAttemptAt, priority: FAILING_PRIORITY });
    const succeeded = [...new Set(outcomes.filter((o) => o.result.ok).map((o) => o.d.subscription_id))];
    if (succeeded.length) {
      await clearFailingSince(tx, succeeded);
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

/**
 * A 410 Gone means the receiver removed the endpoint: stop at once. Otherwise a subscription is disabled
 * when its endpoint has failed, with no success in between, for longer than the configured threshold.
 */
async function failureDisables(tx: Queryable, config: Config['webhooks'], d: Loaded, r: SendResult): Promise<'gone' | 'failing' | null> {
  if (r.statusCode === 410) return 'gone';
  const since = await markFailing(tx, d.subscription_id);
  // failing_since predates this attempt: this failure continues an earlier run of failures.
  if (since && d.failing_since && Date.now() - new Date(since).getTime() >= config.disableAfterSeconds * 1000) return 'failing';
  return null;
}

async function disableSubscription(tx: Queryable, d: Loaded, reason: 'gone' | 'failing', r: SendResult): Promise<void> {
  if (!(await disableSubscriptionRow(tx, d.subscription_id, reason))) return;
  await recordChange(
    tx,
    null,
    'webhook_subscription.disabled',
    { type: 'webhook_subscription', id: d.subscription_id, organizationId: d.organization_id },
    { reason, status_code: r.statusCode, error: r.error, failing_since: d.failing_since },
    { actionContext: 'system' },
  );
  await emitEvent(tx, {
    organizationId: d.organization_id,
    type: 'webhook_subscription.disabled',
    data: { organization_id: d.organization_id, subscription_id: d.subscription_id, reason },
  });
}
