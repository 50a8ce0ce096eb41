import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MIGRATIONS_DIR, migrate, openPglite, type Database, type TestDatabase } from '@clinic/db';
import { createSecretBox, parseMasterKeys } from '../src/platform/secrets.ts';
import { freshDatabase, MODE, uniqueSlug } from './helpers.ts';
import { exited, spawnWorkerProcess } from './support/processes.ts';
import { startReceiver, type Receiver } from './support/webhook-receiver.ts';

/*
 * Crash test: the worker PROCESS (`npm run worker`'s entry) is killed with SIGKILL in the middle
 * of a burst of 1,000 events; a new worker process finishes the job. Every event reaches the receiver,
 * which de-duplicates on the id, exactly once; the only repeats are deliveries that had reached the
 * receiver before the kill without their outcome being recorded (in flight), at most one batch.
 * Embedded mode runs the worker on a PGlite folder (the test closes it first: one process per folder);
 * services mode on this file's PostgreSQL database.
 */
const EVENTS = 1000;
const BATCH = 50;

describe('a worker killed mid-burst loses nothing', () => {
  let rx: Receiver;
  let dataDir: string | null = null;
  let pgTest: TestDatabase | null = null;
  const masterKeys = `crash:${randomBytes(32).toString('base64')}`;
  let subscriptionId = '';
  const children: ChildProcess[] = [];

  const openDb = async (): Promise<Database> => (pgTest ? pgTest.db : openPglite(join(dataDir!, 'pgdata')));

  before(async () => {
    rx = await startReceiver();
    let db: Database;
    // A data folder in both modes: the worker keeps its development keys there, never in the checkout's .data.
    dataDir = await mkdtemp(join(tmpdir(), 'crash-worker-'));
    if (MODE === 'services') {
      pgTest = await freshDatabase();
      db = pgTest.db;
    } else {
      db = await openPglite(join(dataDir, 'pgdata'));
    }
    await migrate(db, MIGRATIONS_DIR);
    const { rows: org } = await db.query<{ id: string }>(
      `insert into organizations (slug, name) values ($1, 'Crash clinic') returning id`,
      [uniqueSlug('crash')],
    );
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const { rows: sub } = await db.query<{ id: string }>(
      `insert into webhook_subscriptions (organization_id, url, event_types, secret_sealed) values ($1, $2, '{organization.updated}', $3) returning id`,
      [org[0]!.id, rx.url('/crash'), createSecretBox(parseMasterKeys(masterKeys)).seal(secret)],
    );
    subscriptionId = sub[0]!.id;
    rx.setSecrets('/crash', [secret]);
    await db.query(
      `select app.emit_event($1::uuid, 'organization.updated', jsonb_build_object('organization_id', $1::text, 'n', n)) from generate_series(1, $2::int) n`,
      [org[0]!.id, EVENTS],
    );
    if (!pgTest) await db.close();
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await rx?.close();
    await pgTest?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  function startWorkerProcess(): ChildProcess {
    const child = spawnWorkerProcess({
      MASTER_KEYS: masterKeys,
      DATA_DIR: dataDir!,
      ...(pgTest ? { DATABASE_URL: pgTest.url! } : {}),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: rx.caFile,
      // Generous: on a loaded machine a 1 s time-out retries deliveries that were merely slow, which
      // would blur what this test counts (repeats caused by the kill).
      WEBHOOK_TIMEOUT_MS: '5000',
      WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1',
      WEBHOOK_RATE_LIMIT: '100000',
      WORKER_DELIVERY_BATCH: String(BATCH),
      WORKER_DISPATCH_INTERVAL_MS: '50',
      WORKER_MAINTENANCE_INTERVAL_SECONDS: '1',
    });
    children.push(child);
    return child;
  }

  it('after SIGKILL and a restart, all 1,000 events arrive; only in-flight deliveries repeat', async () => {
    // Slow answers keep a batch on the wire when the kill lands.
    rx.respond = () => ({ status: 200, delayMs: 5 });
    const first = startWorkerProcess();
    await rx.waitFor(() => rx.received.length >= 300, '300 deliveries before the kill');
    first.kill('SIGKILL');
    await exited(first);
    const beforeKill = new Set(rx.received.map((r) => r.id));
    assert.ok(rx.accepted('/crash').length < EVENTS, 'the kill landed mid-burst');

    const second = startWorkerProcess();
    await rx.waitFor(() => rx.accepted('/crash').length === EVENTS, 'every event after the restart');
    // The batch that was on the wire at the kill reached the receiver, but its outcome was never
    // recorded: those jobs come back when their lease expires (2 x time-out + 5 s) and are sent again.
    // Wait until the receiver has been quiet for longer than that, then stop the worker cleanly.
    let seen = rx.received.length;
    let quietSince = Date.now();
    await rx.waitFor(() => {
      if (rx.received.length !== seen) [seen, quietSince] = [rx.received.length, Date.now()];
      return Date.now() - quietSince > 18_000;
    }, 'the re-sent in-flight batch');
    second.kill('SIGTERM');
    await exited(second);

    const ids = rx.received.map((r) => r.id);
    assert.equal(new Set(ids).size, EVENTS, 'every event delivered');
    assert.ok(
      rx.received.every((r) => r.hexValid && r.standardValid),
      'every delivery signed',
    );
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);

    const db = await openDb();
    let retried: Set<string>;
    try {
      const { rows } = await db.query<{ status: string; n: number }>(
        `select status, count(*)::int as n from webhook_deliveries where subscription_id = $1 group by status`,
        [subscriptionId],
      );
      assert.deepEqual(rows, [{ status: 'delivered', n: EVENTS }], 'every delivery recorded as delivered');
      // On a loaded machine an answer can miss the time-out: such a delivery is retried by design, and its
      // failed attempt is in the log. Those repeats are not the crash's.
      const failed = await db.query<{ event_id: string }>(
        `select distinct d.event_id from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
         where a.subscription_id = $1 and (a.status_code is null or a.status_code >= 300)`,
        [subscriptionId],
      );
      retried = new Set(failed.rows.map((r) => r.event_id));
      const log = await db.query<{ n: number; attempts: number }>(
        `select (select count(*)::int from webhook_delivery_attempts where subscription_id = $1) as n,
                (select sum(attempts)::int from webhook_deliveries where subscription_id = $1) as attempts`,
        [subscriptionId],
      );
      assert.equal(log.rows[0]!.n, log.rows[0]!.attempts, 'one log row per recorded attempt: none recorded twice');
      const pending = await db.query<{ n: number }>('select count(*)::int as n from domain_events where dispatched_at is null');
      assert.equal(pending.rows[0]!.n, 0);
    } finally {
      if (!pgTest) await db.close();
    }

    const repeatedByCrash = [...counts].filter(([id, n]) => n > 1 && !retried.has(id)).map(([id]) => id);
    assert.ok(repeatedByCrash.length <= BATCH, `${repeatedByCrash.length} repeats; at most one batch (${BATCH}) was in flight`);
    assert.ok(
      repeatedByCrash.every((id) => beforeKill.has(id)),
      'only deliveries that were on the wire at the kill are repeated',
    );
    assert.ok(
      repeatedByCrash.every((id) => counts.get(id) === 2),
      'a repeat happens once',
    );
    assert.ok(retried.size < EVENTS / 10, `${retried.size} deliveries needed a retry: the time-out is far too short for this machine`);
  });
});
