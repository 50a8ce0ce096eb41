import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { TestDatabase } from '@clinic/db';
import pg from 'pg';
import { freshDatabase, MODE, startTestApp, uniqueEmail, uniqueSlug, type TestApp } from './helpers.ts';

// Idempotency-Key across instances (spec 4.1, architecture section 1 "several instances behave exactly as
// one"): driven over real HTTP, POST /v1/organizations with a key on one instance, then the same key on
// another. Services mode runs two core API instances on one PostgreSQL database and one Redis with one
// key prefix; the embedded default has one process, so there it checks a single instance.

interface HttpResult {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json(): any;
}

async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function post(base: string, path: string, token: string, body: unknown, key: string): Promise<HttpResult> {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, json: () => JSON.parse(bytes.toString('utf8')) };
}

const newKey = () => `idem-${randomBytes(8).toString('hex')}`;

async function orgCount(t: TestApp, slug: string): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from organizations where slug = $1', [slug]);
  return rows[0]!.n;
}

describe('Idempotency-Key on one instance, over HTTP (both modes)', () => {
  let t: TestApp;
  let base: string;
  let su: string;
  before(async () => {
    t = await startTestApp();
    base = await listen(t);
    su = await t.superadmin(uniqueEmail('idem-su'));
  });
  after(() => t?.close());

  it('a retry replays the first response byte for byte, with Idempotency-Replayed: true, and creates nothing', async () => {
    const key = newKey();
    const body = { name: 'Idempotent clinic', slug: uniqueSlug('idem') };
    const first = await post(base, '/v1/organizations', su, body, key);
    assert.equal(first.status, 201, first.bytes.toString());
    assert.equal(first.headers.get('idempotency-replayed'), null);

    const again = await post(base, '/v1/organizations', su, body, key);
    assert.equal(again.status, 201, again.bytes.toString());
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.ok(again.bytes.equals(first.bytes), `replayed body differs:\n${first.bytes}\n${again.bytes}`);
    assert.equal(again.headers.get('content-type'), first.headers.get('content-type'));
    assert.equal(await orgCount(t, body.slug), 1);
  });

  it('the same key with a different body is 422 idempotency_key_reused and creates nothing', async () => {
    const key = newKey();
    const body = { name: 'Idempotent clinic', slug: uniqueSlug('idem') };
    assert.equal((await post(base, '/v1/organizations', su, body, key)).status, 201);
    const other = { ...body, slug: uniqueSlug('idem-other') };
    const res = await post(base, '/v1/organizations', su, other, key);
    assert.equal(res.status, 422, res.bytes.toString());
    assert.equal(res.json().error.code, 'idempotency_key_reused');
    assert.equal(res.headers.get('idempotency-replayed'), null);
    assert.equal(await orgCount(t, other.slug), 0);
  });
});

describe('Idempotency-Key across two instances sharing PostgreSQL and Redis', {
  skip:
    MODE !== 'services' ? 'needs TEST_MODE=services (PostgreSQL and Redis shared by two instances); embedded mode is one process' : false,
}, () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  let baseA: string;
  let baseB: string;
  let su: string;

  before(async () => {
    database = await freshDatabase();
    // One Redis key prefix for both, as two instances of one deployment have; one issuer, so a token is valid on both.
    const env = { REDIS_KEY_PREFIX: `test:${randomBytes(6).toString('hex')}:` };
    a = await startTestApp({ database, env });
    b = await startTestApp({ database, env, migrate: false, issuer: a.issuer });
    assert.ok(a.rt.redis && b.rt.redis && a.rt.redis !== b.rt.redis, 'each instance has its own Redis client (no shared memory store)');
    baseA = await listen(a);
    baseB = await listen(b);
    su = await a.superadmin(uniqueEmail('idem-su'));
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  it("the second instance replays the first one's response byte for byte; one organization exists", async () => {
    const key = newKey();
    const body = { name: 'Shared clinic', slug: uniqueSlug('idem') };
    const onA = await post(baseA, '/v1/organizations', su, body, key);
    assert.equal(onA.status, 201, onA.bytes.toString());
    assert.equal(onA.headers.get('idempotency-replayed'), null);

    const onB = await post(baseB, '/v1/organizations', su, body, key);
    assert.equal(onB.status, 201, onB.bytes.toString());
    assert.equal(onB.headers.get('idempotency-replayed'), 'true');
    assert.ok(onB.bytes.equals(onA.bytes), `replayed body differs:\n${onA.bytes}\n${onB.bytes}`);
    assert.notEqual(onB.headers.get('x-request-id'), onA.headers.get('x-request-id'), "the request id is the replaying request's own");
    assert.equal(await orgCount(a, body.slug), 1);
  });

  it('the same key with a different body on the other instance is 422 idempotency_key_reused', async () => {
    const key = newKey();
    const body = { name: 'Shared clinic', slug: uniqueSlug('idem') };
    assert.equal((await post(baseA, '/v1/organizations', su, body, key)).status, 201);
    const other = { ...body, slug: uniqueSlug('idem-other') };
    const res = await post(baseB, '/v1/organizations', su, other, key);
    assert.equal(res.status, 422, res.bytes.toString());
    assert.equal(res.json().error.code, 'idempotency_key_reused');
    assert.equal(await orgCount(a, body.slug), 1);
    assert.equal(await orgCount(a, other.slug), 0);
  });

  it('while the first request is still running, the same request on the other instance is 409 idempotency_key_in_use', async () => {
    // Deterministic "in flight": a transaction outside the app holds a lock that makes the INSERT into
    // organizations wait, so instance A has reserved the key and is stuck inside its handler.
    const locker = new pg.Client({ connectionString: database.url! });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table organizations in share mode'); // conflicts with INSERT, not with reads
      const key = newKey();
      const body = { name: 'Slow clinic', slug: uniqueSlug('idem') };
      const pending = post(baseA, '/v1/organizations', su, body, key);

      // Until instance A waits on the lock (no deadline: a hang is the test runner's time-out to stop).
      for (;;) {
        const { rows } = await locker.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
        );
        if (rows[0]!.n > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }

      const busy = await post(baseB, '/v1/organizations', su, body, key);
      assert.equal(busy.status, 409, busy.bytes.toString());
      assert.equal(busy.json().error.code, 'idempotency_key_in_use');
      assert.equal(busy.headers.get('idempotency-replayed'), null);

      await locker.query('rollback');
      const done = await pending;
      assert.equal(done.status, 201, done.bytes.toString());

      // The 409 was not stored: once A has finished, B replays A's result.
      const replay = await post(baseB, '/v1/organizations', su, body, key);
      assert.equal(replay.status, 201, replay.bytes.toString());
      assert.equal(replay.headers.get('idempotency-replayed'), 'true');
      assert.ok(replay.bytes.equals(done.bytes));
      assert.equal(await orgCount(a, body.slug), 1);
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
  });
});
