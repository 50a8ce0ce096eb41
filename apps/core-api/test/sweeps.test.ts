import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { purgeExpiredExports, recoverStaleExports } from '../src/modules/gdpr/jobs.ts';
import { purgeOldDeliveries } from '../src/modules/webhooks/jobs.ts';
import type { WorkerRegistry } from '../src/worker/types.ts';
import { startWorker } from '../src/worker/worker.ts';
import { MODE, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

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
      // No deadline: when the second run comes depends on the machine's load.
      while (runs.length < 2) await new Promise((r) => setTimeout(r, 50));
      // Two workers propose every tick, the job system's throttle keeps one job per 2 s slot. The jobs
      // themselves are counted, not the gaps between runs: a late poller can run two slots' jobs close together.
      const { rows } = await t.db.query<{ slot: string; n: number }>(
        `select singleton_on::text as slot, count(*)::int as n
           from (select singleton_on from pgboss.job where name = 'every-test.tick'
                 union all select singleton_on from pgboss.archive where name = 'every-test.tick') j
          group by 1`,
      );
      assert.ok(rows.length >= 2, `two slots ran, got ${JSON.stringify(rows)}`);
      for (const r of rows) assert.equal(r.n, 1, `one job in slot ${r.slot}`);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('close() waits for a job still running after the job system stopped waiting, so the database outlives it', async () => {
    // The job system's graceful stop waits WEBHOOK_TIMEOUT_MS + 2 s at most (2.1 s here); this job runs past that.
    const short = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '100' } });
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let started = false;
    let finished: string | null = null;
    const w = await startWorker(short.rt, {
      register: (r) =>
        r.every('test.slow', 3600, async () => {
          started = true;
          await released;
          // After close() returned the database is closed: this query must come first.
          finished = (await short.db.query<{ ok: string }>(`select 'still open' as ok`)).rows[0]!.ok;
        }),
    });
    try {
      while (!started) await new Promise((r) => setTimeout(r, 20));
      const closing = w.close();
      // Released only after the job system's own wait has run out (not a deadline: a slower stop only
      // makes the job finish earlier in it).
      setTimeout(release, 2600);
      await closing;
      assert.equal(finished, 'still open', 'the job finished before close() returned');
    } finally {
      release();
      await short.close();
    }
  });

  it('close() waits for the completion pg-boss sends without awaiting it, so the database outlives that too (PostgreSQL)', {
    skip: MODE !== 'services' && 'a second connection holds the row lock; PGlite has one connection',
  }, async () => {
    const app = await startTestApp();
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let started = false;
    const w = await startWorker(app.rt, {
      register: (r) =>
        r.every('test.completion', 3600, async () => {
          started = true;
          await released;
        }),
    });
    let unlock!: () => void;
    const unlocked = new Promise<void>((r) => {
      unlock = r;
    });
    let locker: Promise<void> | null = null;
    try {
      while (!started) await new Promise((r) => setTimeout(r, 20));
      // Another connection locks the job's row, so pg-boss's completion (an UPDATE of it) waits for us.
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      locker = app.db.transaction(async (tx) => {
        await tx.query(`select id from pgboss.job where name = 'every-test.completion' and state = 'active' for update`);
        locked();
        await unlocked;
      });
      await isLocked;
      const stopped = new Promise<void>((r) => w.boss.once('stopped', () => r()));
      let closed = false;
      const closing = w.close().then(() => {
        closed = true;
      });
      release();
      // The completion is sent and now waits on the lock; the job system counts the job as done and stops.
      for (;;) {
        const { rows } = await app.db.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and query like '%completed_on%'`,
        );
        if (rows[0]!.n === 1) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await stopped;
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      assert.equal(closed, false, 'close() returned while the completion was still running');
      unlock();
      await closing;
      const { rows } = await app.db.query<{ state: string }>(`select state from pgboss.job where name = 'every-test.completion'`);
      assert.deepEqual(
        rows.map((r) => r.state),
        ['completed'],
      );
    } finally {
      release();
      unlock();
      await locker;
      await app.close();
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
