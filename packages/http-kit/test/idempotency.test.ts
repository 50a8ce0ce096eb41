import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { AppError, errors } from '../src/errors.ts';
import { installErrorHandling } from '../src/error-handler.ts';
import {
  createMemoryIdempotencyStore,
  createRedisIdempotencyStore,
  installIdempotency,
  type IdempotencyStore,
} from '../src/idempotency.ts';

const MODE = process.env.TEST_MODE === 'services' ? 'services' : 'embedded';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const RUN = randomUUID();

let redis: Redis | null = null;
let prefixes = 0;

function redisClient(url: string): Redis {
  // As the project creates its clients: commands fail fast while Redis is down.
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: true });
}

/** The mode's store: Redis (a unique prefix per call) in services mode, memory otherwise. */
function modeStore(): IdempotencyStore {
  if (redis) return createRedisIdempotencyStore(redis, { keyPrefix: `test:idem:${RUN}:${prefixes++}:` });
  return createMemoryIdempotencyStore();
}

before(async () => {
  if (MODE !== 'services') return;
  redis = redisClient(REDIS_URL);
  await redis.connect();
});

after(async () => {
  if (!redis) return;
  const keys = await redis.keys(`test:idem:${RUN}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

interface Harness {
  app: FastifyInstance;
  calls: Record<string, number>;
  logs: string[];
  /** The /v1/slow handler waits on this; entered resolves when it has started. */
  slow: { entered: Promise<void>; release: () => void };
  post(url: string, opts?: { key?: string; org?: string; body?: unknown; rawBody?: string }): Promise<LightMyRequestResponse>;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function build(
  t: TestContext,
  opts: { store?: IdempotencyStore; ttlSeconds?: number; lockTtlSeconds?: number } = {},
): Promise<Harness> {
  const logs: string[] = [];
  const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => void logs.push(line) } } });
  const calls: Record<string, number> = {};
  const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);
  const orgs = new WeakMap<FastifyRequest, string>();
  let limiterCounter = 0;

  // Like the core API: per-request headers from earlier hooks, authentication in a global onRequest.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-ratelimit-remaining', String(1000 - ++limiterCounter));
    const org = request.headers['x-org'];
    if (typeof org !== 'string') throw errors.unauthorized();
    orgs.set(request, org);
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installErrorHandling(app);
  installIdempotency(app, {
    store: opts.store ?? modeStore(),
    // Reads what authentication set: proves the check runs after onRequest.
    scopeOf: (request) => orgs.get(request) ?? 'none',
    ...(opts.ttlSeconds !== undefined ? { ttlSeconds: opts.ttlSeconds } : {}),
    ...(opts.lockTtlSeconds !== undefined ? { lockTtlSeconds: opts.lockTtlSeconds } : {}),
  });

  const created = (name: string) => async (request: FastifyRequest, reply: FastifyReply) => {
    const n = count(name);
    const id = randomUUID();
    reply.header('x-custom', `custom-${randomUUID()}`).header('location', `/v1/things/${id}`);
    return reply.code(201).send({ data: { id, n, note: 'Zoë ✓ 日本', received: request.body ?? null } });
  };
  const idem = { config: { idempotent: true } };
  app.post('/v1/things', idem, created('things'));
  app.post('/v1/others', idem, created('others'));
  app.post('/v1/items/:id', idem, created('items'));
  app.post('/v1/plain', created('plain'));
  app.post('/v1/binary', idem, async (_request, reply) => {
    count('binary');
    return reply.code(200).type('application/octet-stream').send(randomBytes(64));
  });
  app.post('/v1/empty', idem, async (_request, reply) => {
    count('empty');
    return reply.code(204).header('x-custom', randomUUID()).send();
  });
  app.post('/v1/fail', idem, async (request, reply) => {
    count('fail');
    const { status } = request.body as { status: number };
    if (status === 500) throw new Error('boom');
    if (status === 409) throw new AppError(409, 'conflict', 'Conflict.');
    return reply.code(status).send({ error: { code: 'x', message: `status ${status}` } });
  });
  let gate = deferred();
  let entered = deferred();
  const slow = {
    get entered() {
      return entered.promise;
    },
    release: () => gate.resolve(),
  };
  app.post('/v1/slow', idem, async (request, reply) => {
    count('slow');
    entered.resolve();
    await gate.promise;
    gate = deferred();
    entered = deferred();
    return reply.code(201).send({ data: { id: randomUUID(), received: request.body } });
  });
  await app.ready();
  t.after(() => app.close());

  const post: Harness['post'] = (url, o = {}) => {
    const headers: Record<string, string> = { 'x-org': o.org ?? 'org-a' };
    if (o.key !== undefined) headers['idempotency-key'] = o.key;
    if (o.body !== undefined || o.rawBody !== undefined) headers['content-type'] = 'application/json';
    return app.inject({
      method: 'POST',
      url,
      headers,
      ...(o.rawBody !== undefined ? { payload: o.rawBody } : o.body !== undefined ? { payload: JSON.stringify(o.body) } : {}),
    });
  };
  return { app, calls, logs, slow, post };
}

const newKey = () => `k_${randomUUID()}`;

function assertReplayOf(replay: LightMyRequestResponse, first: LightMyRequestResponse): void {
  assert.equal(replay.statusCode, first.statusCode);
  assert.ok(replay.rawPayload.equals(first.rawPayload), 'body replayed byte for byte');
  assert.equal(replay.headers['content-type'], first.headers['content-type']);
  assert.equal(replay.headers['x-custom'], first.headers['x-custom']);
  assert.equal(replay.headers.location, first.headers.location);
  assert.equal(replay.headers['idempotency-replayed'], 'true');
  assert.equal(first.headers['idempotency-replayed'], undefined);
}

describe(`idempotency (${MODE} store)`, () => {
  it('replays the first 2xx response: same status, headers and bytes, handler runs once', async (t) => {
    const h = await build(t);
    const key = newKey();
    const first = await h.post('/v1/things', { key, body: { name: 'a' } });
    assert.equal(first.statusCode, 201);
    const again = await h.post('/v1/things', { key, body: { name: 'a' } });
    const third = await h.post('/v1/things', { key, body: { name: 'a' } });
    assertReplayOf(again, first);
    assertReplayOf(third, first);
    assert.equal(h.calls.things, 1);
    // Per-request headers come from the replaying request, not from the stored response.
    assert.notEqual(again.headers['x-request-id'], first.headers['x-request-id']);
    assert.notEqual(again.headers['x-ratelimit-remaining'], first.headers['x-ratelimit-remaining']);
    assert.equal(again.headers['content-length'], String(first.rawPayload.length));
  });

  it('replays a binary body and an empty 204 exactly', async (t) => {
    const h = await build(t);
    const key = newKey();
    const first = await h.post('/v1/binary', { key });
    assert.equal(first.statusCode, 200);
    const again = await h.post('/v1/binary', { key });
    assert.equal(again.statusCode, 200);
    assert.ok(again.rawPayload.equals(first.rawPayload));
    assert.equal(again.headers['content-type'], 'application/octet-stream');
    assert.equal(h.calls.binary, 1);

    const k2 = newKey();
    const e1 = await h.post('/v1/empty', { key: k2 });
    const e2 = await h.post('/v1/empty', { key: k2 });
    assert.equal(e1.statusCode, 204);
    assert.equal(e2.statusCode, 204);
    assert.equal(e2.rawPayload.length, 0);
    assert.equal(e2.headers['x-custom'], e1.headers['x-custom']);
    assert.equal(e2.headers['idempotency-replayed'], 'true');
    assert.equal(h.calls.empty, 1);
  });

  it('without a key, or on a route that did not opt in, runs every time', async (t) => {
    const h = await build(t);
    const a = await h.post('/v1/things', { body: { x: 1 } });
    const b = await h.post('/v1/things', { body: { x: 1 } });
    assert.equal(a.statusCode, 201);
    assert.notDeepEqual(a.json(), b.json());
    assert.equal(h.calls.things, 2);
    assert.equal(b.headers['idempotency-replayed'], undefined);

    const key = newKey();
    await h.post('/v1/plain', { key });
    const p = await h.post('/v1/plain', { key });
    assert.equal(h.calls.plain, 2);
    assert.equal(p.headers['idempotency-replayed'], undefined);
  });

  it('rejects malformed keys with 400 validation_error on the Idempotency-Key field', async (t) => {
    const h = await build(t);
    for (const key of ['abc', 'a'.repeat(129), 'has space', 'ü', 'semi;colon', '']) {
      const res = await h.post('/v1/things', { key, body: {} });
      assert.equal(res.statusCode, 400, `key ${JSON.stringify(key)}`);
      const body = res.json() as { error: { code: string; fields: Record<string, string> } };
      assert.equal(body.error.code, 'validation_error');
      assert.ok(body.error.fields['Idempotency-Key'], 'fields names the header');
    }
    assert.equal(h.calls.things, undefined, 'the handler never ran');
    for (const key of ['abcd', 'A-z_0'.padEnd(128, 'x')]) {
      const res = await h.post('/v1/things', { key, body: {} });
      assert.equal(res.statusCode, 201, `key of length ${key.length} is accepted`);
    }
  });

  it('does not store 4xx or 5xx responses and releases the key', async (t) => {
    const h = await build(t);
    for (const status of [400, 409, 422, 500]) {
      const key = newKey();
      const before = h.calls.fail ?? 0;
      const first = await h.post('/v1/fail', { key, body: { status } });
      const second = await h.post('/v1/fail', { key, body: { status } });
      assert.equal(first.statusCode, status);
      assert.equal(second.statusCode, status, 'not a 409 in_use: the key was released');
      assert.equal(second.headers['idempotency-replayed'], undefined);
      assert.equal(h.calls.fail, before + 2, `status ${status} ran the handler again`);
    }
  });

  it('answers 409 idempotency_key_in_use while the first request runs, then replays', async (t) => {
    const h = await build(t);
    const key = newKey();
    const firstP = h.post('/v1/slow', { key, body: { v: 1 } });
    await h.slow.entered;
    const second = await h.post('/v1/slow', { key, body: { v: 1 } });
    assert.equal(second.statusCode, 409);
    const err = (second.json() as { error: { code: string; message: string } }).error;
    assert.equal(err.code, 'idempotency_key_in_use');
    assert.match(err.message, /retry/i);
    // Same key, different body, while running: reused wins (retrying cannot help).
    const other = await h.post('/v1/slow', { key, body: { v: 2 } });
    assert.equal(other.statusCode, 422);
    h.slow.release();
    const first = await firstP;
    assert.equal(first.statusCode, 201);
    const third = await h.post('/v1/slow', { key, body: { v: 1 } });
    assert.equal(third.statusCode, 201);
    assert.ok(third.rawPayload.equals(first.rawPayload));
    assert.equal(third.headers['idempotency-replayed'], 'true');
    assert.equal(h.calls.slow, 1);
  });

  it('answers 422 idempotency_key_reused for the same key with a different request', async (t) => {
    const h = await build(t);
    const key = newKey();
    assert.equal((await h.post('/v1/things', { key, body: { amount: 1 } })).statusCode, 201);
    for (const o of [
      { body: { amount: 2 } },
      { rawBody: '{"amount": 1}' }, // same JSON, different bytes: the fingerprint is of the raw body
      { body: undefined },
    ]) {
      const res = await h.post('/v1/things', { key, ...o });
      assert.equal(res.statusCode, 422, JSON.stringify(o));
      assert.equal((res.json() as { error: { code: string } }).error.code, 'idempotency_key_reused');
    }
    const queried = await h.post('/v1/things?dry=1', { key, body: { amount: 1 } });
    assert.equal(queried.statusCode, 422, 'the query string is part of the fingerprint');
    assert.equal(h.calls.things, 1);
    // The original request still replays.
    const replay = await h.post('/v1/things', { key, body: { amount: 1 } });
    assert.equal(replay.headers['idempotency-replayed'], 'true');
  });

  it('keeps organizations and paths apart under the same key', async (t) => {
    const h = await build(t);
    const key = newKey();
    const a = await h.post('/v1/things', { key, org: 'org-a', body: {} });
    const b = await h.post('/v1/things', { key, org: 'org-b', body: {} });
    const c = await h.post('/v1/others', { key, org: 'org-a', body: {} });
    const d1 = await h.post('/v1/items/1', { key, org: 'org-a', body: {} });
    const d2 = await h.post('/v1/items/2', { key, org: 'org-a', body: {} });
    for (const res of [a, b, c, d1, d2]) {
      assert.equal(res.statusCode, 201);
      assert.equal(res.headers['idempotency-replayed'], undefined);
    }
    assert.notDeepEqual(a.json(), b.json());
    assert.equal(h.calls.things, 2);
    assert.equal(h.calls.others, 1);
    assert.equal(h.calls.items, 2);
    const replayB = await h.post('/v1/things', { key, org: 'org-b', body: {} });
    assert.ok(replayB.rawPayload.equals(b.rawPayload));
  });

  it('forgets results after ttlSeconds', async (t) => {
    const h = await build(t, { ttlSeconds: 0.3 });
    const key = newKey();
    const first = await h.post('/v1/things', { key, body: {} });
    assert.equal((await h.post('/v1/things', { key, body: {} })).headers['idempotency-replayed'], 'true');
    await new Promise((r) => setTimeout(r, 450));
    const later = await h.post('/v1/things', { key, body: {} });
    assert.equal(later.statusCode, 201);
    assert.equal(later.headers['idempotency-replayed'], undefined);
    assert.ok(!later.rawPayload.equals(first.rawPayload));
    assert.equal(h.calls.things, 2);
  });

  it('a reservation never completed (crashed process) expires after lockTtlSeconds', async (t) => {
    const store = modeStore();
    const h = await build(t, { store, lockTtlSeconds: 0.3 });
    const key = newKey();
    const firstP = h.post('/v1/slow', { key, body: {} });
    await h.slow.entered;
    assert.equal((await h.post('/v1/slow', { key, body: {} })).statusCode, 409);
    await new Promise((r) => setTimeout(r, 450));
    // The lock is gone although the first request never finished: another instance may run it.
    const h2 = await build(t, { store, lockTtlSeconds: 0.3 });
    const retried = h2.post('/v1/slow', { key, body: {} });
    await h2.slow.entered;
    h2.slow.release();
    assert.equal((await retried).statusCode, 201);
    h.slow.release();
    assert.equal((await firstP).statusCode, 201);
  });
});

describe('idempotency when the store fails (fails open)', () => {
  const throwing: IdempotencyStore = {
    reserve: async () => {
      throw new Error('store down');
    },
    complete: async () => {
      throw new Error('store down');
    },
    release: async () => {
      throw new Error('store down');
    },
  };

  it('a store whose methods throw: the request runs normally, nothing is replayed, a warning is logged', async (t) => {
    const h = await build(t, { store: throwing });
    const key = newKey();
    const a = await h.post('/v1/things', { key, body: {} });
    const b = await h.post('/v1/things', { key, body: {} });
    for (const res of [a, b]) {
      assert.equal(res.statusCode, 201);
      assert.equal(res.headers['idempotency-replayed'], undefined);
    }
    assert.equal(h.calls.things, 2);
    assert.ok(h.logs.some((l) => JSON.parse(l).level === 40 && /idempotency store failed/.test(l)));
  });

  it('a store that fails only when saving the result: the response is still sent', async (t) => {
    const memory = createMemoryIdempotencyStore();
    const h = await build(t, { store: { ...memory, complete: throwing.complete } });
    const key = newKey();
    const a = await h.post('/v1/things', { key, body: {} });
    assert.equal(a.statusCode, 201);
    const b = await h.post('/v1/things', { key, body: {} });
    assert.equal(b.statusCode, 201, 'the reservation was released, not left to block retries');
    assert.equal(h.calls.things, 2);
  });

  it('a Redis store pointed at an unreachable Redis (127.0.0.1:1)', async (t) => {
    const down = redisClient('redis://127.0.0.1:1');
    down.on('error', () => {});
    t.after(() => down.disconnect());
    const h = await build(t, { store: createRedisIdempotencyStore(down, { keyPrefix: 'down:' }) });
    const key = newKey();
    // Both are answered although the store can never connect: the store fails instead of queueing them.
    const a = await h.post('/v1/things', { key, body: {} });
    const b = await h.post('/v1/things', { key, body: {} });
    for (const res of [a, b]) {
      assert.equal(res.statusCode, 201);
      assert.equal(res.headers['idempotency-replayed'], undefined);
    }
    assert.equal(h.calls.things, 2);
  });
});

describe('idempotency store contract', () => {
  const stores: Array<[string, () => IdempotencyStore]> = [['memory', () => createMemoryIdempotencyStore()]];
  if (MODE === 'services') stores.push(['redis', modeStore]);
  for (const [name, make] of stores) {
    it(`${name}: reserve is exclusive; complete and release act only for the owner of the marker`, async () => {
      const s = make();
      assert.equal(await s.reserve('k', 'm1', 5000), null);
      assert.equal(await s.reserve('k', 'm2', 5000), 'm1');
      await s.release('k', 'm2'); // not the owner: no effect
      assert.equal(await s.reserve('k', 'm2', 5000), 'm1');
      await s.complete('k', 'm2', 'r2', 5000); // not the owner: no effect
      assert.equal(await s.reserve('k', 'm2', 5000), 'm1');
      await s.complete('k', 'm1', 'r1', 5000);
      assert.equal(await s.reserve('k', 'm3', 5000), 'r1');
      await s.release('k', 'm1'); // a result is never released
      assert.equal(await s.reserve('k', 'm3', 5000), 'r1');
      assert.equal(await s.reserve('short', 'm', 100), null);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await s.reserve('short', 'm', 100), null, 'the lock expired');
    });
  }

  it('memory: bounded by maxEntries', async () => {
    const s = createMemoryIdempotencyStore({ maxEntries: 3 });
    for (const k of ['a', 'b', 'c', 'd']) assert.equal(await s.reserve(k, 'm', 60_000), null);
    assert.equal(await s.reserve('a', 'm2', 60_000), null, 'the oldest entry was evicted');
    assert.equal(await s.reserve('d', 'm2', 60_000), 'm');
  });
});

describe('idempotency across instances sharing Redis', { skip: MODE !== 'services' && 'services mode only' }, () => {
  it('a request on instance A replays on instance B with the same bytes', async (t) => {
    const prefix = `test:idem:${RUN}:shared:`;
    const clientA = redisClient(REDIS_URL);
    const clientB = redisClient(REDIS_URL);
    await Promise.all([clientA.connect(), clientB.connect()]);
    t.after(() => {
      clientA.disconnect();
      clientB.disconnect();
    });
    const a = await build(t, { store: createRedisIdempotencyStore(clientA, { keyPrefix: prefix }) });
    const b = await build(t, { store: createRedisIdempotencyStore(clientB, { keyPrefix: prefix }) });
    const key = newKey();
    const first = await a.post('/v1/things', { key, body: { name: 'x' } });
    assert.equal(first.statusCode, 201);
    const replay = await b.post('/v1/things', { key, body: { name: 'x' } });
    assertReplayOf(replay, first);
    assert.equal(a.calls.things, 1);
    assert.equal(b.calls.things, undefined, 'instance B never ran the handler');

    // And the lock is shared: B answers 409 while A is still running.
    const k2 = newKey();
    const running = a.post('/v1/slow', { key: k2, body: {} });
    await a.slow.entered;
    assert.equal((await b.post('/v1/slow', { key: k2, body: {} })).statusCode, 409);
    a.slow.release();
    const done = await running;
    const replay2 = await b.post('/v1/slow', { key: k2, body: {} });
    assert.ok(replay2.rawPayload.equals(done.rawPayload));
  });
});
