import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker, type Worker } from '../src/worker/worker.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { startReceiver, type Receiver } from './support/webhook-receiver.ts';

/*
 * Deliveries end to end (spec 6.1): domain events written by real requests, the worker
 * (pg-boss on this test's database), and a real HTTPS receiver that verifies both signature headers
 * with public libraries. Short retry delays and windows come from settings, never from sleeping.
 */
describe('webhook deliveries through the worker', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: Worker;
  let admin: string;
  let orgId: string;
  const internal: { id: string; type: string; data: Record<string, unknown> }[] = [];

  before(async () => {
    rx = await startReceiver();
    t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_CA_FILE: rx.caFile,
        WEBHOOK_RETRY_SCHEDULE: '1,1',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_RATE_LIMIT: '5',
        WEBHOOK_RATE_WINDOW_SECONDS: '3',
        WEBHOOK_DISABLE_AFTER_SECONDS: '3600',
        WORKER_DISPATCH_INTERVAL_MS: '50',
        WORKER_MAINTENANCE_INTERVAL_SECONDS: '1',
      },
    });
    worker = await startWorker(t.rt, { register: (r) => r.onEvent('test.internal_ping', async (e) => void internal.push(e)) });
    const org = await t.createOrg({ name: 'Hooked clinic' });
    orgId = org.id;
    admin = (await t.addMember(orgId, uniqueEmail('hook-admin'), 'admin')).token;
  });
  after(async () => {
    await worker?.close();
    await t?.close();
    await rx?.close();
  });

  /** A subscription whose secret the receiver knows, on its own path. */
  async function subscribe(path: string, eventTypes: string[], token = admin, org = orgId) {
    const res = await t.call('POST', '/v1/webhook-subscriptions', { token, org, body: { url: rx.url(path), event_types: eventTypes } });
    const sub = dataOf(res, 201);
    rx.setSecrets(path, [sub.signing_secret]);
    return sub as { id: string; signing_secret: string };
  }
  const rename = (name: string, org = orgId, token = admin) => t.call('PATCH', `/v1/organizations/${org}`, { token, body: { name } });
  const log = async (subId: string, query = '') =>
    dataOf(await t.call('GET', `/v1/webhook-subscriptions/${subId}/events?limit=500${query}`, { token: admin, org: orgId }));
  /** The log once it satisfies `done`: the worker records an attempt just after the receiver answers it. */
  async function logUntil(subId: string, done: (entries: any[]) => boolean, query = '') {
    let entries: any[] = [];
    for (let i = 0; i < 200; i++) {
      entries = await log(subId, query);
      if (done(entries)) return entries;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail(`the delivery log never got there: ${JSON.stringify(entries)}`);
  }

  it('delivers a committed change, signed with both schemes, with the spec 6.1 body and headers', async () => {
    const sub = await subscribe('/updates', ['organization.updated']);
    dataOf(await rename('Renamed clinic'));
    await rx.waitFor(() => rx.accepted('/updates').length === 1, 'the delivery');
    const got = rx.received.find((r) => r.path === '/updates')!;
    assert.equal(got.hexValid, true, 'X-Webhook-Signature verifies with @octokit/webhooks-methods');
    assert.equal(got.standardValid, true, 'webhook-* headers verify with standardwebhooks');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['x-webhook-event'], 'organization.updated');
    assert.match(got.headers['x-webhook-signature']!, /^sha256=[0-9a-f]{64}$/);
    assert.equal(got.headers['webhook-id'], got.id);
    assert.deepEqual(Object.keys(JSON.parse(got.rawBody)), ['id', 'event', 'data']);
    assert.equal(got.event, 'organization.updated');
    assert.deepEqual(got.data, { organization_id: orgId, changed: ['name'] });
    const { rows } = await t.db.query<{ id: string }>(
      `select id from domain_events where type = 'organization.updated' and organization_id = $1`,
      [orgId],
    );
    assert.deepEqual(
      rows.map((r) => r.id),
      [got.id],
      'the body id is the event id',
    );
    const entries = await logUntil(sub.id, (e) => e.length === 1);
    assert.equal(entries[0].attempt, 1);
    assert.equal(entries[0].status_code, 200);
    assert.equal(entries[0].delivery_status, 'delivered');
    assert.equal(entries[0].trigger, 'event');
    assert.equal(entries[0].next_attempt_at, null);
    assert.equal(entries[0].response_body, 'ok');
  });

  it('a request that fails writes no event, and a subscription only gets the types it chose', async () => {
    await subscribe('/domains-only', ['domain.added']);
    const before = (await t.db.query<{ n: number }>('select count(*)::int as n from domain_events')).rows[0]!.n;
    assertError(await t.call('PATCH', `/v1/organizations/${orgId}`, { token: admin, body: { name: '' } }), 400, 'validation_error');
    assert.equal((await t.db.query<{ n: number }>('select count(*)::int as n from domain_events')).rows[0]!.n, before);
    dataOf(await rename('Renamed again'));
    dataOf(
      await t.call('POST', `/v1/organizations/${orgId}/domains`, {
        token: admin,
        body: { domain: `hooks-${Date.now()}.clinic-example.test` },
      }),
      201,
    );
    await rx.waitFor(() => rx.accepted('/domains-only').length === 1, 'the domain event');
    await worker.dispatchNow();
    assert.deepEqual(
      rx.received.filter((r) => r.path === '/domains-only').map((r) => r.event),
      ['domain.added'],
    );
  });

  it('retries a failing endpoint on the schedule and logs every attempt, then stops when it succeeds', async () => {
    const sub = await subscribe('/flaky', ['member.added']);
    let calls = 0;
    const previous = rx.respond;
    rx.respond = (r) => (r.path === '/flaky' && ++calls <= 2 ? { status: 503, body: 'busy '.repeat(400) } : previous(r));
    await t.addMember(orgId, uniqueEmail('hooked-member'), 'specialist');
    await rx.waitFor(() => rx.accepted('/flaky').length === 1, 'the third attempt');
    rx.respond = previous;
    const got = rx.received.filter((r) => r.path === '/flaky');
    assert.equal(got.length, 3);
    assert.equal(new Set(got.map((g) => g.id)).size, 1, 'one event, sent three times');
    assert.ok(got.every((g) => g.hexValid && g.standardValid));
    const entries = (await logUntil(sub.id, (e) => e.length === 3)).sort((a: any, b: any) => a.attempt - b.attempt);
    assert.deepEqual(
      entries.map((e: any) => [e.attempt, e.status_code]),
      [
        [1, 503],
        [2, 503],
        [3, 200],
      ],
    );
    assert.ok(entries.every((e: any) => e.delivery_status === 'delivered'));
    assert.equal(entries[0].error, 'the endpoint answered 503');
    assert.ok(entries[0].response_body.length <= 1024, 'response bodies are truncated');
    // Back-off: each failed attempt names its next one, one scheduled delay (1 s, jitter ±10%) later.
    for (const e of entries.slice(0, 2)) {
      const gap = new Date(e.next_attempt_at).getTime() - new Date(e.created_at).getTime();
      assert.ok(gap >= 850 && gap <= 1150, `next attempt ${gap} ms after the failed one`);
    }
    assert.equal(entries[2].next_attempt_at, null);
  });

  it('gives up after the last scheduled attempt; a manual re-send delivers it as the next attempt', async () => {
    const sub = await subscribe('/down', ['location.created']);
    let up = false;
    const previous = rx.respond;
    rx.respond = (r) => (r.path === '/down' && !up ? { status: 500 } : previous(r));
    dataOf(
      await t.call('POST', `/v1/organizations/${orgId}/locations`, { token: admin, body: { name: 'Annex', timezone: 'Europe/Bucharest' } }),
      201,
    );
    await rx.waitFor(() => rx.received.filter((r) => r.path === '/down').length === 3, 'three attempts');
    const entries = await logUntil(sub.id, (e) => e.length === 3 && e.every((x) => x.delivery_status === 'failed'));
    assert.ok(
      entries.every((e) => e.delivery_status === 'failed'),
      'attempts used up: failed',
    );
    const deliveryId = entries[0].delivery_id;
    up = true;
    // With an Idempotency-Key, a retried re-send gets the first answer again instead of 409.
    const key = { 'idempotency-key': `resend-${deliveryId}` };
    const resendUrl = `/v1/webhook-subscriptions/${sub.id}/deliveries/${deliveryId}/resend`;
    const res = await t.call('POST', resendUrl, { token: admin, org: orgId, headers: key });
    assert.deepEqual(dataOf(res, 202), { delivery_id: deliveryId, status: 'pending', attempt: 4 });
    const retried = await t.call('POST', resendUrl, { token: admin, org: orgId, headers: key });
    assert.equal(retried.statusCode, 202, retried.body);
    assert.equal(retried.headers['idempotency-replayed'], 'true');
    assert.deepEqual(retried.json(), res.json());
    assertError(
      await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/deliveries/${deliveryId}/resend`, { token: admin, org: orgId }),
      409,
      'delivery_not_failed',
    );
    await rx.waitFor(() => rx.accepted('/down').length === 1, 'the re-sent delivery');
    const resent = (await logUntil(sub.id, (e) => e.length === 4, `&delivery_id=${deliveryId}`)).find((e: any) => e.attempt === 4);
    assert.equal(resent.trigger, 'resend');
    assert.equal(resent.status_code, 200);
    assert.equal(resent.delivery_status, 'delivered');
  });

  it('a 410 Gone disables the subscription at once, with an audit entry and an event; nothing more is sent', async () => {
    const watcher = await subscribe('/watcher', ['webhook_subscription.disabled']);
    const gone = await subscribe('/gone', ['organization.updated']);
    const previous = rx.respond;
    rx.respond = (r) => (r.path === '/gone' ? { status: 410 } : previous(r));
    dataOf(await rename('Gone test'));
    await rx.waitFor(() => rx.accepted('/watcher').length === 1, 'the disabled event');
    rx.respond = previous;
    const w = rx.received.find((r) => r.path === '/watcher')!;
    assert.deepEqual(w.data, { organization_id: orgId, subscription_id: gone.id, reason: 'gone' });
    const sub = dataOf(await t.call('GET', `/v1/webhook-subscriptions/${gone.id}`, { token: admin, org: orgId }));
    assert.equal(sub.status, 'disabled');
    assert.equal(sub.disabled_reason, 'gone');
    const { rows } = await t.db.query<{ action: string; data: any }>(
      `select action, data from audit_logs where entity_id = $1 and action = 'webhook_subscription.disabled'`,
      [gone.id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.data.reason, 'gone');
    const sent = rx.received.filter((r) => r.path === '/gone').length;
    assert.equal(sent, 1, 'no retry after 410');
    dataOf(await rename('After gone'));
    await new Promise((r) => setTimeout(r, 300));
    await worker.dispatchNow();
    assert.equal(rx.received.filter((r) => r.path === '/gone').length, sent, 'a disabled subscription gets nothing');
    void watcher;
  });

  it('holds each subscription to its rate: deliveries over the limit wait for the next window, none is lost', async () => {
    await subscribe('/burst', ['location.updated']);
    const { id: locationId } = dataOf(
      await t.call('POST', `/v1/organizations/${orgId}/locations`, { token: admin, body: { name: 'Burst', timezone: 'Europe/Bucharest' } }),
      201,
    );
    for (let i = 0; i < 12; i++) {
      dataOf(await t.call('PATCH', `/v1/organizations/${orgId}/locations/${locationId}`, { token: admin, body: { city: `City ${i}` } }));
    }
    await rx.waitFor(() => rx.accepted('/burst').length === 12, 'all twelve deliveries');
    const times = rx.received
      .filter((r) => r.path === '/burst')
      .map((r) => r.at)
      .sort((a, b) => a - b);
    assert.equal(times.length, 12, 'each delivered once: deferred deliveries are not failures');
    // The window (3 s) opens when the first delivery is counted, just before it is sent.
    const inFirstSecond = times.filter((x) => x < times[0]! + 1000).length;
    assert.ok(inFirstSecond <= 5, `${inFirstSecond} deliveries in the first second; the limit is 5 per 3 s`);
  });

  it('internal events reach their consumers only: never a webhook, not even a "*" subscription', async () => {
    await subscribe('/everything', ['*']);
    // Pings and events whose consumer fails (an exercise_session.ended without a session) in one pass,
    // so in one batch of the consumer queue: every ping is consumed at once, whatever the order, and
    // the failing events go back for retries on their own. (A batch used to fail as a whole: a failing
    // event fetched first held every ping of its batch back, and the test timed out now and then.)
    for (let n = 1; n <= 4; n++) {
      await t.db.query(`select app.emit_event($1::uuid, 'test.internal_ping', $2::jsonb)`, [orgId, JSON.stringify({ n })]);
      await t.db.query(`select app.emit_event($1::uuid, 'exercise_session.ended', '{"result": {"form_score": 80}}'::jsonb)`, [orgId]);
    }
    dataOf(await rename('Everything'));
    await rx.waitFor(() => rx.accepted('/everything').length >= 1, 'the catalog event');
    await rx.waitFor(() => internal.length >= 4, 'the internal consumer');
    assert.deepEqual(
      internal.map((e) => e.data).sort((a, b) => Number(a.n) - Number(b.n)),
      [1, 2, 3, 4].map((n) => ({ organization_id: orgId, n })),
      'each ping once, the payload naming its organization',
    );
    await worker.dispatchNow();
    const events = rx.received.filter((r) => r.path === '/everything').map((r) => r.event);
    assert.ok(events.includes('organization.updated'));
    assert.ok(!events.includes('test.internal_ping') && !events.includes('exercise_session.ended'), events.join());
  });
});

describe('an endpoint that keeps failing is disabled', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: Worker;

  before(async () => {
    rx = await startReceiver();
    // "Failing for days" in seconds: disabled once failures have lasted 1 s without a success.
    t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_CA_FILE: rx.caFile,
        WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1',
        WEBHOOK_DISABLE_AFTER_SECONDS: '1',
        WORKER_DISPATCH_INTERVAL_MS: '50',
        WORKER_MAINTENANCE_INTERVAL_SECONDS: '1',
      },
    });
    worker = await startWorker(t.rt);
  });
  after(async () => {
    await worker?.close();
    await t?.close();
    await rx?.close();
  });

  it('after failures spanning the threshold: disabled (reason failing), audited, announced; re-enabling starts a fresh run', async () => {
    const org = await t.createOrg();
    const admin = (await t.addMember(org.id, uniqueEmail('fail-admin'), 'admin')).token;
    const make = async (path: string, types: string[]) => {
      const sub = dataOf(
        await t.call('POST', '/v1/webhook-subscriptions', { token: admin, org: org.id, body: { url: rx.url(path), event_types: types } }),
        201,
      );
      rx.setSecrets(path, [sub.signing_secret]);
      return sub.id as string;
    };
    const watcher = await make('/watch', ['webhook_subscription.disabled']);
    const failing = await make('/broken', ['organization.updated']);
    rx.respond = (r) => (r.path === '/broken' ? { status: 500 } : { status: 200 });
    dataOf(await t.call('PATCH', `/v1/organizations/${org.id}`, { token: admin, body: { name: 'Failing clinic' } }));
    await rx.waitFor(() => rx.accepted('/watch').length === 1, 'the disabled event');
    const attempts = rx.received.filter((r) => r.path === '/broken').length;
    assert.ok(attempts >= 2, `${attempts} attempts: one failure never disables`);
    const sub = dataOf(await t.call('GET', `/v1/webhook-subscriptions/${failing}`, { token: admin, org: org.id }));
    assert.equal(sub.status, 'disabled');
    assert.equal(sub.disabled_reason, 'failing');
    assert.deepEqual(rx.received.find((r) => r.path === '/watch')!.data, {
      organization_id: org.id,
      subscription_id: failing,
      reason: 'failing',
    });
    const { rows } = await t.db.query<{ data: any }>(
      `select data from audit_logs where entity_id = $1 and action = 'webhook_subscription.disabled'`,
      [failing],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.data.reason, 'failing');
    // Re-enabled by an administrator, it starts a fresh run: no failing_since carried over.
    const back = dataOf(
      await t.call('PATCH', `/v1/webhook-subscriptions/${failing}`, { token: admin, org: org.id, body: { status: 'active' } }),
    );
    assert.equal(back.failing_since, null);
    void watcher;
  });
});

describe('a failing endpoint does not delay healthy ones (fair scheduling)', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: Worker;
  let orgId: string;
  let admin: string;

  before(async () => {
    rx = await startReceiver();
    t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_CA_FILE: rx.caFile,
        // Every request to the slow endpoint times out; retries far away, so only first attempts matter.
        WEBHOOK_TIMEOUT_MS: '400',
        WEBHOOK_RETRY_SCHEDULE: '3600',
        WEBHOOK_RATE_LIMIT: '1000',
        WEBHOOK_DISABLE_AFTER_SECONDS: '3600',
        WORKER_DELIVERY_BATCH: '5',
        WORKER_DISPATCH_INTERVAL_MS: '50',
      },
    });
    worker = await startWorker(t.rt);
    orgId = (await t.createOrg({ name: 'Fair clinic' })).id;
    admin = (await t.addMember(orgId, uniqueEmail('fair-admin'), 'admin')).token;
  });
  after(async () => {
    await worker?.close();
    await t?.close();
    await rx?.close();
  });

  const subscribe = async (path: string, eventTypes: string[]) => {
    const sub = dataOf(
      await t.call('POST', '/v1/webhook-subscriptions', { token: admin, org: orgId, body: { url: rx.url(path), event_types: eventTypes } }),
      201,
    );
    rx.setSecrets(path, [sub.signing_secret]);
    return sub as { id: string };
  };
  const emit = (type: string, n: number) =>
    t.db.query(`select app.emit_event($1::uuid, $2, jsonb_build_object('n', $3::int))`, [orgId, type, n]);
  const slowSeen = () => rx.received.filter((r) => r.path === '/slow').length;

  it("a healthy subscription's first delivery goes ahead of a failing one's backlog", async () => {
    const previous = rx.respond;
    rx.respond = (r) => (r.path === '/slow' ? { status: 500, delayMs: 1500 } : previous(r));
    const slow = await subscribe('/slow', ['location.created']);
    await emit('location.created', 0);
    await rx.waitFor(() => slowSeen() >= 1, 'the first failed attempt');
    // Its failure is recorded (failing_since), so the endpoint counts as failing from now on.
    for (let i = 0; i < 100; i++) {
      const { rows } = await t.db.query<{ f: boolean }>('select failing_since is not null as f from webhook_subscriptions where id = $1', [
        slow.id,
      ]);
      if (rows[0]!.f) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // A backlog of 30 for the failing endpoint, then one event for a healthy subscription.
    for (let n = 1; n <= 30; n++) await emit('location.created', n);
    await subscribe('/fast', ['organization.updated']);
    await emit('organization.updated', 1);
    await rx.waitFor(() => rx.accepted('/fast').length === 1, 'the healthy delivery');
    // First come, first served would have tried all 30 first (six batches of five, each held by its
    // time-outs); fair scheduling sends the healthy one at the next fetch.
    assert.ok(slowSeen() < 10, `the failing endpoint had ${slowSeen()} requests before the healthy delivery`);
  });
});
