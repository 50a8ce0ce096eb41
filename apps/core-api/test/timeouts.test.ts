import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { installErrorHandling, toAppError } from '@clinic/http-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { LONG_OPERATION_ROUTES, installTimeouts, type Schedule } from '../src/platform/timeouts.ts';
import { assertError, freshDatabase, MODE, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

/**
 * The time-outs of spec 8 (platform/timeouts.ts): a request 30 s, a statement 5 s, a long operation
 * (exports, renders, segment evaluation) 2 minutes, each answering 504 `timeout` in the error envelope.
 * No test waits on a deadline: the request timer runs on a clock the test moves, and the statement
 * time-out is made tiny against a statement that waits on a lock the test holds.
 */

/** A clock the test moves: timers fire when `advance` passes their time. */
function manualClock() {
  let now = 0;
  let timers: { at: number; fn: () => void; live: boolean }[] = [];
  const schedule: Schedule = (fn, ms) => {
    const timer = { at: now + ms, fn, live: true };
    timers.push(timer);
    return () => {
      timer.live = false;
    };
  };
  return {
    schedule,
    pending: () => timers.filter((x) => x.live).length,
    advance(ms: number) {
      now += ms;
      const due = timers.filter((x) => x.live && x.at <= now);
      timers = timers.filter((x) => !due.includes(x));
      for (const x of due) x.fn();
    },
  };
}

describe('request time-out (REQUEST_TIMEOUT_MS, LONG_OPERATION_TIMEOUT_MS)', () => {
  let app: FastifyInstance;
  const clock = manualClock();
  let release: () => void = () => undefined;
  before(async () => {
    app = Fastify();
    installErrorHandling(app);
    installTimeouts(app, { requestMs: 30_000, queryMs: 5000, longMs: 120_000 }, clock.schedule);
    // A handler that answers only when the test says so; one of them a named long operation.
    const slow = async () => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { data: 'late' };
    };
    app.get('/v1/slow', slow);
    app.get('/v1/audit-logs/export', slow);
    app.get('/v1/fast', async () => ({ data: 'ok' }));
    await app.ready();
  });
  after(() => app?.close());

  it('a request past its budget answers 504 timeout in the error envelope', async () => {
    const pending = app.inject({ method: 'GET', url: '/v1/slow' });
    await new Promise((r) => setImmediate(r));
    clock.advance(29_999);
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'still within its 30 s');
    clock.advance(1);
    const res = await pending;
    const err = assertError(res, 504, 'timeout');
    assert.match(err.message, /30 seconds/);
    release();
  });

  it('a named long operation has 2 minutes', async () => {
    const pending = app.inject({ method: 'GET', url: '/v1/audit-logs/export' });
    await new Promise((r) => setImmediate(r));
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    clock.advance(30_000);
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'past 30 s, within 2 minutes');
    clock.advance(90_000);
    assertError(await pending, 504, 'timeout');
    release();
  });

  it('an answer in time cancels its timer', async () => {
    const before = clock.pending();
    assert.equal((await app.inject({ method: 'GET', url: '/v1/fast' })).statusCode, 200);
    assert.equal(clock.pending(), before);
  });
});

describe('the long operations of the core API', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t?.close());

  // That a named route gets the long budget is shown above (the marking by name) and, on PostgreSQL,
  // below with the export waiting past QUERY_TIMEOUT_MS; here: every name is a route of the app.
  it('are routes of the app', () => {
    for (const name of LONG_OPERATION_ROUTES) {
      const [method, url] = name.split(' ') as [string, string];
      assert.ok(t.app.hasRoute({ method: method as 'GET', url }), `${name} is a route`);
    }
  });

  it('a statement time-out (PostgreSQL query_canceled) renders as 504 timeout', () => {
    const e = toAppError(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }));
    assert.deepEqual([e.statusCode, e.code], [504, 'timeout']);
  });
});

describe('statement time-out (QUERY_TIMEOUT_MS) on PostgreSQL', {
  skip: MODE !== 'services' && 'PGlite cannot enforce statement_timeout (docs/operations.md)',
}, () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let t: TestApp;
  let locker: pg.Client;
  let orgId: string;
  let admin: string;
  before(async () => {
    database = await freshDatabase();
    t = await startTestApp({ database, env: { QUERY_TIMEOUT_MS: '200', LONG_OPERATION_TIMEOUT_MS: '600000' } });
    locker = new pg.Client({ connectionString: database.url! });
    await locker.connect();
    orgId = (await t.createOrg()).id;
    admin = (await t.addMember(orgId, uniqueEmail('admin'), 'admin')).token;
  });
  after(async () => {
    await locker?.end();
    await t?.close();
    await database?.drop();
  });

  it('a route whose statement waits past the budget answers 504 timeout; a long operation waits on', async () => {
    const list = () => t.call('GET', '/v1/audit-logs', { token: admin, org: orgId });
    assert.equal((await list()).statusCode, 200, 'answers while nothing blocks it');
    await locker.query('begin');
    await locker.query('lock table audit_logs in access exclusive mode');
    const lockWaiters = async () =>
      (
        await t.db.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
        )
      ).rows[0]!.n;
    try {
      // The export (a long operation) starts waiting on the lock first ...
      let settled = false;
      const exporting = t.call('GET', '/v1/audit-logs/export', { token: admin, org: orgId }).finally(() => {
        settled = true;
      });
      while ((await lockWaiters()) === 0) await new Promise((r) => setTimeout(r, 20));
      // ... an ordinary route that starts waiting after it is stopped at QUERY_TIMEOUT_MS ...
      assertError(await list(), 504, 'timeout');
      // ... while the export, waiting longer already, is still there.
      assert.equal(settled, false);
      assert.equal(await lockWaiters(), 1);
      await locker.query('commit');
      const res = await exporting;
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /text\/csv/);
    } finally {
      await locker.query('rollback').catch(() => undefined);
    }
  });
});
