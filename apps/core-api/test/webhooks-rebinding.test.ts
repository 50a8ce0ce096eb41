import assert from 'node:assert/strict';
import dns, { type LookupAddress } from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import { after, before, describe, it, mock } from 'node:test';
import { startWorker } from '../src/worker/worker.ts';
import { assertError, dataOf, startTestApp, uniqueEmail } from './helpers.ts';
import { startReceiver, type Receiver } from './support/webhook-receiver.ts';

/*
 * DNS rebinding against a real webhook delivery. Webhook URLs are checked when a
 * subscription is saved (urlProblem, then resolvesPublicly) and again when the delivery's socket connects
 * (the sender's undici Agent resolves through guardedLookup). Both resolve with node:dns lookup, the
 * system resolver (getaddrinfo), not the DNS_SERVERS resolvers of domain verification, so this file
 * answers for one name by replacing dns.lookup in this process (the worker runs in it too): the name is
 * public while the subscription is created and 127.0.0.1 when the delivery connects, where a real HTTPS
 * receiver listens with a certificate for that name. Every other name resolves as usual.
 */
const HOST = 'hooks.rebinding.example';
const PUBLIC = '93.184.215.14';
const LOOPBACK = '127.0.0.1';

/** What the name resolves to now, and every answer given for it (in order). */
const dnsState = { answer: PUBLIC, answers: [] as string[] };

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
const realLookup = dns.lookup;
function rebindingLookup(hostname: string, options: unknown, callback?: unknown): void {
  const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
  const opts = (typeof options === 'object' && options ? options : typeof options === 'number' ? { family: options } : {}) as {
    all?: boolean;
  };
  if (hostname.toLowerCase() !== HOST) {
    (realLookup as (...args: unknown[]) => void)(hostname, opts, cb);
    return;
  }
  const address = dnsState.answer;
  dnsState.answers.push(address);
  process.nextTick(() => (opts.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4)));
}

describe('webhook deliveries: the connect-time guard stops DNS rebinding', () => {
  let rx: Receiver;

  before(async () => {
    rx = await startReceiver({ hostnames: [HOST] });
    // The named import in platform/outgoing-url.ts is a live binding of node:dns: synced to the replacement.
    mock.method(dns, 'lookup', rebindingLookup as never);
    syncBuiltinESMExports();
  });
  after(async () => {
    mock.restoreAll();
    syncBuiltinESMExports();
    await rx?.close();
  });

  /** An app and its worker; WEBHOOK_ALLOW_PRIVATE_NETWORKS as given (false is the production stance). */
  async function world(allowPrivate: boolean) {
    const t = await startTestApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: String(allowPrivate),
        WEBHOOK_CA_FILE: rx.caFile,
        // One retry a second later, then the delivery has failed: two connect-time checks.
        WEBHOOK_RETRY_SCHEDULE: '1',
        WEBHOOK_TIMEOUT_MS: '5000',
        WEBHOOK_DISABLE_AFTER_SECONDS: '3600',
        WORKER_DISPATCH_INTERVAL_MS: '50',
        // The delivery log is polled below.
        RATELIMIT_API_LIMIT: '100000',
      },
    });
    const worker = await startWorker(t.rt);
    const orgId = (await t.createOrg({ name: 'Rebinding clinic' })).id;
    const admin = (await t.addMember(orgId, uniqueEmail('rebind-admin'), 'admin')).token;
    const close = async () => {
      await worker.close();
      await t.close();
    };
    return { t, orgId, admin, close };
  }
  /** The receiver's URL for a path, by the name instead of its address. */
  const byName = (path: string) => {
    const url = new URL(rx.url(path));
    url.hostname = HOST;
    return url.toString();
  };
  /** The delivery log of a subscription once `done` holds (polled; no deadline of its own). */
  async function logWhen(w: Awaited<ReturnType<typeof world>>, subId: string, done: (entries: any[]) => boolean) {
    for (;;) {
      const entries = dataOf(
        await w.t.call('GET', `/v1/webhook-subscriptions/${subId}/events?limit=100`, { token: w.admin, org: w.orgId }),
      ) as any[];
      if (done(entries)) return entries.sort((a, b) => a.attempt - b.attempt);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('a name that is public when subscribed and 127.0.0.1 when the delivery connects: refused, logged, never received', async () => {
    const w = await world(false);
    try {
      const path = '/rebound';
      const url = byName(path);
      // While the name is loopback, creation refuses it: the create-time half of the guard.
      dnsState.answer = LOOPBACK;
      const early = assertError(
        await w.t.call('POST', '/v1/webhook-subscriptions', { token: w.admin, org: w.orgId, body: { url, event_types: ['*'] } }),
        400,
        'validation_error',
      );
      assert.match(early.fields.url, /non-public address/);

      // Public when subscribed: accepted, after resolving the name.
      dnsState.answer = PUBLIC;
      dnsState.answers = [];
      const sub = dataOf(
        await w.t.call('POST', '/v1/webhook-subscriptions', {
          token: w.admin,
          org: w.orgId,
          body: { url, event_types: ['organization.updated'] },
        }),
        201,
      );
      rx.setSecrets(path, [sub.signing_secret]);
      assert.deepEqual(dnsState.answers, [PUBLIC], 'the creation check resolved the name once');

      // Then the name rebinds to the receiver's loopback address, and a real event goes out through the worker.
      dnsState.answer = LOOPBACK;
      dnsState.answers = [];
      dataOf(await w.t.call('PATCH', `/v1/organizations/${w.orgId}`, { token: w.admin, body: { name: 'Rebound clinic' } }));
      // Settled: no attempt pending (delivered at once if the guard let it through, else failed twice).
      const entries = await logWhen(w, sub.id, (e) => e.length > 0 && e.every((x) => x.delivery_status !== 'pending'));

      assert.deepEqual(
        rx.received.filter((r) => r.path === path),
        [],
        'the local receiver never got a request',
      );
      assert.deepEqual(
        entries.map((e) => [e.attempt, e.delivery_status]),
        [
          [1, 'failed'],
          [2, 'failed'],
        ],
      );
      for (const e of entries) {
        assert.equal(e.status_code, null, 'no HTTP exchange took place');
        assert.equal(e.response_body, null);
        assert.equal(e.error, `refused: ${HOST} resolves to ${LOOPBACK}, a non-public address`);
      }
      assert.equal(entries[1].next_attempt_at, null, 'the schedule is used up: failed');
      // Each attempt resolved the name when it connected, and got the loopback answer.
      assert.ok(dnsState.answers.length >= 2, `connect-time lookups: ${JSON.stringify(dnsState.answers)}`);
      assert.ok(
        dnsState.answers.every((a) => a === LOOPBACK),
        JSON.stringify(dnsState.answers),
      );
    } finally {
      await w.close();
    }
  });

  it('the same rebinding with private networks allowed is delivered: the refusal above is the guard, not the setup', async () => {
    const w = await world(true);
    try {
      const path = '/allowed';
      dnsState.answer = PUBLIC;
      const sub = dataOf(
        await w.t.call('POST', '/v1/webhook-subscriptions', {
          token: w.admin,
          org: w.orgId,
          body: { url: byName(path), event_types: ['organization.updated'] },
        }),
        201,
      );
      rx.setSecrets(path, [sub.signing_secret]);
      dnsState.answer = LOOPBACK;
      dnsState.answers = [];
      dataOf(await w.t.call('PATCH', `/v1/organizations/${w.orgId}`, { token: w.admin, body: { name: 'Allowed clinic' } }));
      await rx.waitFor(() => rx.accepted(path).length === 1, 'the delivery over the rebound name');
      const [entry] = await logWhen(w, sub.id, (e) => e.length === 1);
      assert.equal(entry.status_code, 200);
      assert.equal(entry.delivery_status, 'delivered');
      assert.ok(dnsState.answers.includes(LOOPBACK), 'the socket connected to the loopback answer');
      const got = rx.received.find((r) => r.path === path)!;
      assert.equal(got.headers.host, `${HOST}:${new URL(rx.url(path)).port}`);
      assert.ok(got.hexValid && got.standardValid);
    } finally {
      await w.close();
    }
  });
});
