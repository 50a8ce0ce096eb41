import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { openPostgres, type TestDatabase } from '@clinic/db';
import { freshDatabase, startTestApp, uniqueEmail, type TestApp, type TestAppOptions } from './helpers.ts';

// One database for the suites that only read and write their own rows; each suite has its own app.
let shared: TestDatabase;
before(async () => {
  shared = await freshDatabase();
});
after(() => shared.drop());

/** The spec 2.2 error envelope, with `fields` only where the caller says so. */
function assertEnvelope(
  res: { statusCode: number; headers: Record<string, unknown>; json(): any },
  status: number,
  code: string,
  withFields = false,
) {
  assert.equal(res.statusCode, status, `status ${res.statusCode}, expected ${status}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  if (withFields) assert.equal(typeof body.error.fields, 'object');
  else assert.ok(!('fields' in body.error), `unexpected fields on ${code}: ${JSON.stringify(body.error.fields)}`);
  return body.error as { code: string; message: string; fields?: Record<string, string> };
}

/**
 * An app on a database that the test may close under it. In services mode the app gets its own pool on
 * the fresh database, so the database can still be dropped afterwards; PGlite is closed only once.
 */
async function appWithClosableDatabase(opts: TestAppOptions = {}) {
  const fresh = await freshDatabase();
  const db = fresh.url ? await openPostgres({ connectionString: fresh.url, max: 4 }) : fresh.db;
  let closed = false;
  const t = await startTestApp({ ...opts, database: { db, url: fresh.url, drop: async () => {} } });
  return {
    t,
    async closeDatabase() {
      closed = true;
      await db.close();
    },
    async cleanup() {
      await t.close();
      if (fresh.url) {
        if (!closed) await db.close();
        await fresh.drop();
      } else if (!closed) await db.close();
    },
  };
}

describe('error envelope', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared });
  });
  after(() => t.close());

  it('an unknown route is 404 not_found, with or without a token, and has no fields', async () => {
    const anonymous = await t.call('GET', '/v1/nope');
    assertEnvelope(anonymous, 404, 'not_found');
    const signedIn = await t.call('GET', '/v1/nope', { as: uniqueEmail() });
    assertEnvelope(signedIn, 404, 'not_found');
    const outside = await t.call('POST', '/nope/at/all', { body: { a: 1 } });
    assertEnvelope(outside, 404, 'not_found');
  });

  it('a body that is not JSON is 400 invalid_body without fields', async () => {
    const res = await t.call('PUT', '/v1/me/switch-organization', { as: uniqueEmail(), rawBody: '{"organization_id": ' });
    assertEnvelope(res, 400, 'invalid_body');
    const notAnObject = await t.call('PUT', '/v1/me/switch-organization', { as: uniqueEmail(), rawBody: "{'organization_id': 1}" });
    assertEnvelope(notAnObject, 400, 'invalid_body');
  });

  it('validation errors are the one place with fields', async () => {
    const res = await t.call('PUT', '/v1/me/switch-organization', { as: uniqueEmail(), body: {} });
    const err = assertEnvelope(res, 400, 'validation_error', true);
    assert.ok('organization_id' in err.fields!, JSON.stringify(err.fields));
  });

  it('a missing or invalid token is 401 unauthorized without fields', async () => {
    assertEnvelope(await t.call('GET', '/v1/me'), 401, 'unauthorized');
    assertEnvelope(await t.call('GET', '/v1/me', { token: 'not.a.jwt' }), 401, 'unauthorized');
    const forged = (await t.token(uniqueEmail())).replace(/\.[^.]+$/, '.AAAA');
    assertEnvelope(await t.call('GET', '/v1/me', { token: forged }), 401, 'unauthorized');
  });

  // Needs app.ts to pass `frameworkErrors` (packages/http-kit/src/error-handler.ts, to be exported from
  // the package index) to the Fastify constructor: the router answers these before any handler runs.
  const routerErrors = {};

  it('a path with bad percent-encoding is 400 invalid_url in the envelope', routerErrors, async () => {
    assertEnvelope(await t.call('GET', '/v1/%zz'), 400, 'invalid_url');
  });

  it('an over-long path parameter is 404 not_found in the envelope', routerErrors, async () => {
    assertEnvelope(await t.call('GET', `/v1/organizations/${'a'.repeat(150)}`, { as: uniqueEmail() }), 404, 'not_found');
  });

  it('every response carries an x-request-id', async () => {
    const res = await t.call('GET', '/v1/nope');
    assert.match(String(res.headers['x-request-id']), /^[A-Za-z0-9_-]{8,100}$/);
  });
});

describe('body size limit', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared, env: { BODY_LIMIT_BYTES: '2048' } });
  });
  after(() => t.close());

  it('a body over BODY_LIMIT_BYTES is 413 payload_too_large in the envelope', async () => {
    const body = { organization_id: '0190a000-0000-7000-8000-000000000001', padding: 'x'.repeat(10 * 1024) };
    const res = await t.call('PUT', '/v1/me/switch-organization', { as: uniqueEmail(), body });
    assertEnvelope(res, 413, 'payload_too_large');
  });

  it('a body under the limit is read normally', async () => {
    const res = await t.call('PUT', '/v1/me/switch-organization', {
      as: uniqueEmail(),
      body: { organization_id: '0190a000-0000-7000-8000-000000000001' },
    });
    // Not a member of that (nonexistent) organization: the body was parsed and the rule applied.
    assert.notEqual(res.statusCode, 413);
    assert.ok(res.statusCode < 500, res.body);
  });
});

describe('internal errors', () => {
  let own: Awaited<ReturnType<typeof appWithClosableDatabase>>;
  before(async () => {
    own = await appWithClosableDatabase();
  });
  after(() => own.cleanup());

  it('a 500 is internal_error with a generic message: no stack, SQL or driver text', async () => {
    const { t } = own;
    const email = uniqueEmail();
    assert.equal((await t.call('GET', '/v1/me', { as: email })).statusCode, 200);
    await own.closeDatabase();
    const res = await t.call('GET', '/v1/me', { as: uniqueEmail() });
    const err = assertEnvelope(res, 500, 'internal_error');
    assert.doesNotMatch(err.message, /\bat\s+\S+\s+\(|\.ts:\d|\.js:\d|select|insert|from\s|pool|pglite|closed|relation|ECONN/i);
    assert.doesNotMatch(res.body, /stack|node_modules|\/work\//i);
    assert.deepEqual(Object.keys(res.json().error).sort(), ['code', 'message']);
  });
});

describe('per-IP limit at the entry of /v1', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared, env: { RATELIMIT_API_LIMIT: '5', RATELIMIT_API_WINDOW: '60' } });
  });
  after(() => t.close());

  const get = (url: string, remoteAddress: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, remoteAddress, headers });

  it('counts every /v1 request per address, with X-RateLimit-* headers, and answers the 6th with 429', async () => {
    const ip = '198.51.100.7';
    const token = await t.token(uniqueEmail());
    const urls = ['/v1/public/system-info', '/v1/me', '/v1/nope', '/v1/me', '/v1/public/system-info'];
    for (const [i, url] of urls.entries()) {
      const res = await get(url, ip, url === '/v1/me' ? { authorization: `Bearer ${token}` } : {});
      assert.notEqual(res.statusCode, 429, `request ${i + 1} (${url}) was limited`);
      assert.equal(res.headers['x-ratelimit-limit'], '5');
      assert.equal(res.headers['x-ratelimit-remaining'], String(4 - i));
      assert.match(String(res.headers['x-ratelimit-reset']), /^[1-9]\d*$/);
      assert.equal(res.headers['retry-after'], undefined);
    }
    const sixth = await get('/v1/me', ip, { authorization: `Bearer ${token}` });
    assertEnvelope(sixth, 429, 'rate_limited');
    assert.match(String(sixth.headers['retry-after']), /^[1-9]\d*$/);
    assert.ok(Number(sixth.headers['retry-after']) <= 60);
    assert.equal(sixth.headers['x-ratelimit-limit'], '5');
    assert.equal(sixth.headers['x-ratelimit-remaining'], '0');
    assert.match(String(sixth.headers['x-ratelimit-reset']), /^[1-9]\d*$/);
    // A request without a token is limited before authentication: the limit caps verification cost.
    assertEnvelope(await get('/v1/me', ip), 429, 'rate_limited');
  });

  it('another address has its own budget', async () => {
    for (let i = 0; i < 6; i++) await get('/v1/public/system-info', '198.51.100.8');
    const other = await get('/v1/public/system-info', '198.51.100.9');
    assert.equal(other.statusCode, 200);
    assert.equal(other.headers['x-ratelimit-remaining'], '4');
  });

  it('/health is not limited and carries no rate-limit headers', async () => {
    const ip = '198.51.100.10';
    for (let i = 0; i < 6; i++) await get('/v1/public/system-info', ip);
    assert.equal((await get('/v1/public/system-info', ip)).statusCode, 429);
    for (let i = 0; i < 8; i++) {
      const res = await get('/health', ip);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['x-ratelimit-limit'], undefined);
    }
  });

  // Needs a change in src/platform/pipeline.ts: it decides "under /v1" on the raw request.url, while the
  // router decodes it ('/%761/me' and the absolute form 'http://host/v1/me' reach /v1 routes).
  const bypass = {};

  it('an encoded spelling of a /v1 path is limited like the plain one', bypass, async () => {
    const ip = '198.51.100.11';
    for (let i = 0; i < 6; i++) await get('/v1/public/system-info', ip);
    for (const url of ['/%761/public/system-info', '/%76%31/public/system-info', '/v1/public/system-info/']) {
      assertEnvelope(await get(url, ip), 429, 'rate_limited');
    }
  });

  it('an encoded spelling of a protected /v1 path still needs a token (401, not a crash)', bypass, async () => {
    assertEnvelope(await get('/%761/me', '198.51.100.12'), 401, 'unauthorized');
  });

  it('an absolute-form request target (GET http://host/v1/me) still needs a token', bypass, async () => {
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = new URL(address);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write('GET http://elsewhere.example/v1/me HTTP/1.1\r\nHost: elsewhere.example\r\nConnection: close\r\n\r\n');
      });
      let data = '';
      socket.on('data', (c) => (data += c));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 401 /, raw.split('\r\n')[0]);
    assert.match(raw, /"code":"unauthorized"/);
  });
});

describe('per-IP limit when its store is down', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared, env: { RATELIMIT_API_LIMIT: '2', REDIS_URL: 'redis://127.0.0.1:1' } });
  });
  after(() => t.close());

  it('fails open: requests pass when Redis cannot count them', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/v1/public/system-info', remoteAddress: '198.51.100.20' });
      assert.equal(res.statusCode, 200, `request ${i + 1}: ${res.body}`);
    }
  });
});

/**
 * A TCP server that speaks just enough Redis for the client to become ready (CLIENT SETINFO, INFO) and
 * then never answers a command: a store that hangs rather than fails.
 */
async function silentRedis(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let ready = false;
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      if (ready) return;
      // Each command is an array of bulk strings; its first element is the command name.
      for (const m of chunk.toString().matchAll(/\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n/g)) {
        if (m[1]!.toLowerCase() === 'info') {
          const info = '# Server\r\nredis_version:7.0.0\r\nloading:0\r\n';
          socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`);
          ready = true;
        } else socket.write('+OK\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('per-IP limit when its store stops answering', () => {
  let t: TestApp;
  let redis: Awaited<ReturnType<typeof silentRedis>>;
  before(async () => {
    redis = await silentRedis();
    t = await startTestApp({ database: shared, env: { RATELIMIT_API_LIMIT: '2', REDIS_URL: redis.url } });
    assert.equal(t.rt.redis?.status, 'ready');
  });
  after(async () => {
    await t.close();
    await redis.close();
  });

  it('fails open instead of holding the request', async () => {
    // The store never answers, so a request that is answered at all did not wait for it; one that
    // waited forever is the test runner's time-out to stop (no wall-clock deadline here).
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/v1/public/system-info', remoteAddress: '198.51.100.21' });
      assert.equal(res.statusCode, 200, res.body);
    }
  });
});
