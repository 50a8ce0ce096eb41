import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { purgeExpiredExports, recoverStaleExports } from '../src/modules/gdpr/jobs.ts';
import { purgeOldDeliveries } from '../src/modules/webhooks/jobs.ts';
import type { WorkerRegistry } from '../src/worker/types.ts';
import { startWorker } from '../src/worker/worker.ts';
import { startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/** Scheduled jobs of the worker: the mechanism itself, GDPR export recovery and expiry, delivery retention. */
describe('scheduled jobs', () => {
  let t: TestApp;
  let orgId: string;
  let userId: string;

  before(async () => {
    t = await startTestApp();
    orgId = (await t.createOrg()).id;
    userId = (await t.addMember(orgId, uniqueEmail('sweeper'), 'admin')).userId;
  });
  after(async () => t?.close());

  it('every(): a registered job runs through the job system, once per interval across two workers', async () => {
    const runs: number[] = [];
    const register = (r: WorkerRegistry) => r.every('test.tick', 2, async () => void runs.push(Date.now()));
    const a = await startWorker(t.rt, { register });
    const b = await startWorker(t.rt, { register });
    try {
      const until = Date.now() + 15_000;
      while (runs.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      assert.ok(runs.length >= 2, `ran ${runs.length} times`);
      // Two workers propose every tick, the job system's throttle keeps one run per 2 s slot.
      for (let i = 1; i < runs.length; i++) assert.ok(runs[i]! - runs[i - 1]! > 500, 'never twice in one slot');
    } finally {
      await a.close();
      await b.close();
    }
  });

  const job = async (status: string, attempts: number, minutesAgo: number, extra = '') => {
    const { rows } = await t.db.query<{ id: string }>(
      `insert into jobs (kind, status, attempts, requested_by_principal_id, organization_id, updated_at ${extra ? ', file, expires_at' : ''})
       values ('gdpr_export', $1, $2, $3, $4, now() - make_interval(mins => $5) ${extra}) returning id`,
      [status, attempts, userId, orgId, minutesAgo],
    );
    return rows[0]!.id;
  };
  const statusOf = async (id: string) =>
    (await t.db.query<{ status: string; file: Buffer | null }>('select status, file from jobs where id = $1', [id])).rows[0]!;

  it('a running export whose runner died goes back to the queue; after three attempts it fails; live ones stay', async () => {
    const stale = await job('running', 1, 30);
    const exhausted = await job('running', 3, 30);
    const live = await job('running', 1, 1);
    const r = await recoverStaleExports(t.db);
    assert.ok(r.requeued >= 1 && r.failed >= 1);
    assert.equal((await statusOf(stale)).status, 'queued');
    assert.equal((await statusOf(exhausted)).status, 'failed');
    assert.equal((await statusOf(live)).status, 'running');
  });

  it('expired export archives are deleted, unexpired ones kept', async () => {
    const expired = await job('done', 1, 0, `, '\\x01'::bytea, now() - interval '1 hour'`);
    const fresh = await job('done', 1, 0, `, '\\x01'::bytea, now() + interval '1 day'`);
    assert.ok((await purgeExpiredExports(t.db)) >= 1);
    assert.equal((await statusOf(expired)).file, null);
    assert.notEqual((await statusOf(fresh)).file, null);
  });

  it('retention deletes old finished deliveries and dispatched events, never pending ones or what they need', async () => {
    const { rows: sub } = await t.db.query<{ id: string }>(
      `insert into webhook_subscriptions (organization_id, url, event_types, secret_sealed) values ($1, 'https://8.8.8.8/h', '{*}', 'v1.x.y.z.w') returning id`,
      [orgId],
    );
    const event = async (daysAgo: number) =>
      (
        await t.db.query<{ id: string }>(
          `insert into domain_events (organization_id, type, data, dispatched_at, occurred_at) values ($1, 'organization.updated', '{}', now() - make_interval(days => $2), now() - make_interval(days => $2)) returning id`,
          [orgId, daysAgo],
        )
      ).rows[0]!.id;
    const delivery = async (eventId: string, status: string, daysAgo: number) =>
      (
        await t.db.query<{ id: string }>(
          `insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type, status, updated_at) values ($1, $2, $3, 'organization.updated', $4, now() - make_interval(days => $5)) returning id`,
          [orgId, sub[0]!.id, eventId, status, daysAgo],
        )
      ).rows[0]!.id;
    const oldDone = await event(40);
    const oldPending = await event(40);
    const recent = await event(2);
    const d1 = await delivery(oldDone, 'delivered', 40);
    await t.db.query(
      `insert into webhook_delivery_attempts (organization_id, subscription_id, delivery_id, attempt, latency_ms) values ($1, $2, $3, 1, 5)`,
      [orgId, sub[0]!.id, d1],
    );
    const d2 = await delivery(oldPending, 'pending', 40);
    const d3 = await delivery(recent, 'failed', 2);
    await purgeOldDeliveries(t.db, 30);
    const exists = async (table: string, id: string) => (await t.db.query(`select 1 from ${table} where id = $1`, [id])).rows.length === 1;
    assert.equal(await exists('webhook_deliveries', d1), false);
    assert.equal((await t.db.query('select 1 from webhook_delivery_attempts where delivery_id = $1', [d1])).rows.length, 0);
    assert.equal(await exists('domain_events', oldDone), false);
    assert.equal(await exists('webhook_deliveries', d2), true, 'pending kept');
    assert.equal(await exists('domain_events', oldPending), true, 'its event kept');
    assert.equal(await exists('webhook_deliveries', d3), true, 'recent kept');
    assert.equal(await exists('domain_events', recent), true);
  });
});
