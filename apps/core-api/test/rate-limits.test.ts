import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, freshDatabase, MODE, REDIS_URL, type Res, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

/**
 * The limits of spec 8 that the pipeline applies (platform/limits.ts): per authenticated principal
 * whatever its address, and per address on every /v1/public/... route, each with the X-RateLimit-*
 * headers, 429 rate_limited with Retry-After at its threshold, and failing open when its store is down.
 * Small thresholds come from the settings; the store is Redis in services mode, memory in embedded.
 */

let n = 0;
/** A client address of its own for each use, so budgets never carry over between cases. */
const nextIp = () => `198.51.100.${++n}`;

function limitOf(res: Res) {
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
    assert.match(String(res.headers[name]), /^\d+$/, `${name}: ${String(res.headers[name])}`);
  return { limit: Number(res.headers['x-ratelimit-limit']), remaining: Number(res.headers['x-ratelimit-remaining']) };
}

function assertDenied(res: Res, limit: number) {
  assertError(res, 429, 'rate_limited');
  assert.deepEqual(limitOf(res), { limit, remaining: 0 });
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${String(res.headers['retry-after'])}`);
}

describe('limits of spec 8 applied by the pipeline', () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let t: TestApp;
  let broken: TestApp;
  const env = { RATELIMIT_USER_LIMIT: '3', RATELIMIT_USER_WINDOW: '60', RATELIMIT_PUBLIC_LIMIT: '2', RATELIMIT_PUBLIC_WINDOW: '60' };
  before(async () => {
    database = await freshDatabase();
    t = await startTestApp({ database, env });
    // The same settings with a limiter store that does not answer.
    broken = await startTestApp({ database, migrate: false, issuer: t.issuer, env: { ...env, REDIS_URL: 'redis://127.0.0.1:1' } });
  });
  after(async () => {
    await t?.close();
    await broken?.close();
    await database?.drop();
  });

  const me = (app: TestApp, token: string, ip = nextIp()) =>
    app.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: ip });

  describe('per user (RATELIMIT_USER_LIMIT)', () => {
    it('counts a principal across addresses and refuses the request over the threshold with 429 and its headers', async () => {
      const token = await t.token(uniqueEmail('busy'));
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        // A new address every time: the per-address entry limit never comes near.
        const res = await me(t, token);
        assert.equal(res.statusCode, 200, res.body);
        const h = limitOf(res);
        assert.equal(h.limit, 3, 'the per-user limit is the one a signed-in caller reads');
        remaining.push(h.remaining);
      }
      assert.deepEqual(remaining, [2, 1, 0]);
      assertDenied(await me(t, token), 3);
    });

    it('each principal has its own budget, whatever address they share', async () => {
      const ip = nextIp();
      const first = await t.token(uniqueEmail('first'));
      const second = await t.token(uniqueEmail('second'));
      for (let i = 0; i < 3; i++) assert.equal((await me(t, first, ip)).statusCode, 200);
      assertDenied(await me(t, first, ip), 3);
      const other = await me(t, second, ip);
      assert.equal(other.statusCode, 200, other.body);
      assert.equal(limitOf(other).remaining, 2);
    });

    it('an unauthenticated request is not counted against anyone (it is refused first)', async () => {
      const token = await t.token(uniqueEmail('quiet'));
      const ip = nextIp();
      for (let i = 0; i < 3; i++)
        assertError(
          await t.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: 'Bearer nope' }, remoteAddress: ip }),
          401,
          'unauthorized',
        );
      assert.equal(limitOf(await me(t, token, ip)).remaining, 2);
    });

    it('fails open: with the store unreachable a principal passes beyond the threshold', async () => {
      const token = await t.token(uniqueEmail('open'));
      for (let i = 0; i < 5; i++) {
        const res = await me(broken, token);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(limitOf(res).limit, 3);
      }
    });
  });

  describe('per address on every /v1/public/... route (RATELIMIT_PUBLIC_LIMIT)', () => {
    const uuid = '00000000-0000-4000-8000-000000000001';
    /** Every public operation of the OpenAPI description, plus the hidden signed-link routes. */
    async function publicRoutes(): Promise<{ method: string; url: string }[]> {
      const spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const routes: { method: string; url: string }[] = [];
      for (const [path, ops] of Object.entries<Record<string, unknown>>(spec.paths)) {
        if (!path.startsWith('/v1/public/')) continue;
        for (const method of Object.keys(ops)) {
          if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
          routes.push({ method: method.toUpperCase(), url: path.replace(/\{[^}]+\}/g, uuid) });
        }
      }
      routes.push({ method: 'GET', url: `/v1/public/telemetry/replays/${uuid}?token=x` });
      routes.push({ method: 'GET', url: `/v1/public/documents/${uuid}/1/abc/file.pdf` });
      return routes;
    }

    it('lists the public routes it checks (the booking routes included)', async () => {
      const urls = (await publicRoutes()).map((r) => `${r.method} ${r.url}`);
      for (const expected of [
        'GET /v1/public/system-info',
        'GET /v1/public/organizations/resolve',
        'GET /v1/public/availability',
        'POST /v1/public/holds',
        'POST /v1/public/bookings',
        'GET /v1/public/specialists',
        'GET /v1/public/telemetry/jwks.json',
      ])
        assert.ok(urls.includes(expected), `${expected} in ${urls.join(', ')}`);
    });

    it('every public route answers its requests with the headers and refuses the one over the threshold', async () => {
      for (const route of await publicRoutes()) {
        const ip = nextIp();
        const send = () =>
          t.app.inject({
            method: route.method as 'GET',
            url: route.url,
            remoteAddress: ip,
            ...(route.method === 'GET' ? {} : { payload: {} }),
          });
        for (let i = 0; i < 2; i++) {
          const res = await send();
          assert.notEqual(res.statusCode, 429, `${route.method} ${route.url} request ${i + 1}: ${res.body}`);
          assert.ok(res.headers['x-ratelimit-limit'], `${route.method} ${route.url} carries X-RateLimit-*`);
        }
        const denied = await send();
        assert.equal(denied.statusCode, 429, `${route.method} ${route.url}: ${denied.body}`);
        assertDenied(denied, 2);
      }
    });

    it('one budget per address across the public routes; another address has its own', async () => {
      const ip = nextIp();
      const get = (url: string, from = ip) => t.app.inject({ method: 'GET', url, remoteAddress: from });
      assert.equal(limitOf(await get('/v1/public/system-info')).remaining, 1);
      assert.equal(limitOf(await get('/v1/public/telemetry/jwks.json')).remaining, 0);
      assertDenied(await get(`/v1/public/specialists?organization=${uuid}`), 2);
      assert.equal((await get('/v1/public/system-info', nextIp())).statusCode, 200);
    });

    it('authenticated routes outside /v1/public do not spend the public budget', async () => {
      const ip = nextIp();
      const token = await t.token(uniqueEmail('staff'));
      const auth = { authorization: `Bearer ${token}` };
      for (let i = 0; i < 2; i++)
        assert.equal((await t.app.inject({ method: 'GET', url: '/v1/me', headers: auth, remoteAddress: ip })).statusCode, 200);
      assert.equal((await t.app.inject({ method: 'GET', url: '/v1/public/system-info', remoteAddress: ip })).statusCode, 200);
    });

    it('fails open: with the store unreachable an address passes beyond the threshold', async () => {
      const ip = nextIp();
      for (let i = 0; i < 4; i++) {
        const res = await broken.app.inject({ method: 'GET', url: '/v1/public/system-info', remoteAddress: ip });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(limitOf(res).limit, 2);
      }
    });
  });
});

describe('the per-user limit is shared by instances on one Redis', { skip: MODE !== 'services' }, () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let a: TestApp;
  let b: TestApp;
  before(async () => {
    database = await freshDatabase();
    const env = { RATELIMIT_USER_LIMIT: '3', REDIS_URL: REDIS_URL ?? '', REDIS_KEY_PREFIX: `test:${randomBytes(6).toString('hex')}:` };
    a = await startTestApp({ database, env });
    b = await startTestApp({ database, env, migrate: false, issuer: a.issuer });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  it('two requests on one instance and one on the other spend one budget', async () => {
    const token = await a.token(uniqueEmail('roaming'));
    const call = (app: TestApp) =>
      app.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: nextIp() });
    assert.equal((await call(a)).statusCode, 200);
    assert.equal((await call(b)).statusCode, 200);
    assert.equal(limitOf(await call(a)).remaining, 0);
    assertDenied(await call(b), 3);
  });
});

describe("per organization and endpoint (RATELIMIT_TENANT_LIMIT, the operator's figures)", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let t: TestApp;
  let peer: TestApp;
  let broken: TestApp;
  let small: { id: string };
  let large: { id: string };
  let staff: { small: string; large: string };
  let su: string;
  const env = { RATELIMIT_TENANT_LIMIT: '3', RATELIMIT_TENANT_WINDOW: '60' };
  before(async () => {
    database = await freshDatabase();
    t = await startTestApp({ database, env });
    small = await t.createOrg();
    large = await t.createOrg();
    staff = {
      small: (await t.addMember(small.id, uniqueEmail('small'), 'admin')).token,
      large: (await t.addMember(large.id, uniqueEmail('large'), 'admin')).token,
    };
    su = await t.superadmin();
    const shared = { migrate: false, issuer: t.issuer, database } as const;
    // Another instance that reloads the operator's figures on every request (the default is every 30 s).
    peer = await startTestApp({ ...shared, env: { ...env, RATELIMIT_TENANT_REFRESH_SECONDS: '0' } });
    broken = await startTestApp({ ...shared, env: { ...env, REDIS_URL: 'redis://127.0.0.1:1' } });
  });
  after(async () => {
    await t?.close();
    await peer?.close();
    await broken?.close();
    await database?.drop();
  });

  const get = (app: TestApp, url: string, token: string, org: string) =>
    app.app.inject({
      method: 'GET',
      url,
      headers: { authorization: `Bearer ${token}`, 'x-organization-id': org },
      remoteAddress: nextIp(),
    });
  const operator = (method: 'GET' | 'PUT' | 'DELETE', orgId: string, payload?: object, token = su) =>
    t.app.inject({
      method,
      url: `/v1/admin/organizations/${orgId}/rate-limits`,
      headers: { authorization: `Bearer ${token}` },
      remoteAddress: nextIp(),
      ...(payload ? { payload } : {}),
    });
  const figureRows = async (orgId: string) =>
    (await t.db.query('select route_limit from organization_rate_limits where organization_id = $1', [orgId])).rows;

  it('counts each endpoint of an organization on its own, across its users, and refuses the one over the threshold', async () => {
    const other = (await t.addMember(small.id, uniqueEmail('colleague'), 'admin')).token;
    const remaining: number[] = [];
    for (const token of [staff.small, other, staff.small]) {
      const res = await get(t, '/v1/specialists', token, small.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(limitOf(res).limit, 3);
      remaining.push(limitOf(res).remaining);
    }
    assert.deepEqual(remaining, [2, 1, 0], 'one budget for the organization, whoever calls');
    assertDenied(await get(t, '/v1/specialists', other, small.id), 3);
    // Another endpoint of the same organization, and the same endpoint of another organization, are untouched.
    assert.equal(limitOf(await get(t, '/v1/specialties', staff.small, small.id)).remaining, 2);
    assert.equal(limitOf(await get(t, '/v1/specialists', staff.large, large.id)).remaining, 2);
  });

  it('the operator gives one organization a bigger figure: it gets it at once, the others keep the default, and it is audited', async () => {
    const before = await operator('GET', large.id);
    assert.equal(before.statusCode, 200, before.body);
    assert.deepEqual(
      { ...before.json().data, updated_at: null },
      {
        organization_id: large.id,
        route_limit: 3,
        window_seconds: 60,
        source: 'platform',
        platform_route_limit: 3,
        reason: null,
        updated_at: null,
      },
    );
    const set = await operator('PUT', large.id, { route_limit: 5, reason: 'enterprise plan' });
    assert.equal(set.statusCode, 200, set.body);
    assert.equal(set.json().data.route_limit, 5);
    assert.equal(set.json().data.source, 'organization');
    assert.equal(set.json().data.reason, 'enterprise plan');
    assert.ok(!Number.isNaN(Date.parse(set.json().data.updated_at)));

    for (let i = 0; i < 5; i++) {
      const res = await get(t, '/v1/custom-fields', staff.large, large.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(limitOf(res).limit, 5);
    }
    assertDenied(await get(t, '/v1/custom-fields', staff.large, large.id), 5);
    assert.equal(limitOf(await get(t, '/v1/custom-fields', staff.small, small.id)).limit, 3);

    const { rows } = await t.db.query<{ actor_user_id: string | null; data: { route_limit: { from: number | null; to: number } } }>(
      `select actor_user_id, data from audit_logs where organization_id = $1 and action = 'organization.rate_limit_set'`,
      [large.id],
    );
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0]!.data.route_limit, { from: null, to: 5 });
    assert.ok(rows[0]!.actor_user_id, 'the operator is named');
  });

  it('another instance follows the figure within its refresh, and back to the platform figure after DELETE', async () => {
    assert.equal((await operator('PUT', large.id, { route_limit: 7 })).statusCode, 200);
    assert.equal(limitOf(await get(peer, '/v1/form-templates', staff.large, large.id)).limit, 7);
    const cleared = await operator('DELETE', large.id);
    assert.equal(cleared.statusCode, 204, cleared.body);
    assert.equal(limitOf(await get(peer, '/v1/form-templates', staff.large, large.id)).limit, 3);
    assert.equal(limitOf(await get(t, '/v1/form-templates', staff.large, large.id)).limit, 3);
    assert.equal((await operator('GET', large.id)).json().data.source, 'platform');
    assert.deepEqual(await figureRows(large.id), []);
    // DELETE again: nothing to clear, still 204, and no second entry.
    assert.equal((await operator('DELETE', large.id)).statusCode, 204);
    const { rows } = await t.db.query(
      `select 1 from audit_logs where organization_id = $1 and action = 'organization.rate_limit_cleared'`,
      [large.id],
    );
    assert.equal(rows.length, 1);
  });

  it('only a superadmin reads or sets a figure: a clinic admin cannot raise its own (403, nothing changed)', async () => {
    assertError(await operator('PUT', small.id, { route_limit: 1000 }, staff.small), 403, 'forbidden');
    assertError(await operator('GET', small.id, undefined, staff.small), 403, 'forbidden');
    assertError(await operator('DELETE', small.id, undefined, staff.small), 403, 'forbidden');
    assert.deepEqual(await figureRows(small.id), []);
  });

  it('a bad figure is 400 with fields and changes nothing; an unknown organization is 404', async () => {
    for (const body of [
      { route_limit: 0 },
      { route_limit: 1_000_001 },
      { route_limit: 2_147_483_648 },
      { route_limit: 2.5 },
      { route_limit: '10' },
      {},
      { route_limit: 10, plan: 'gold' },
      { route_limit: 10, reason: 'x'.repeat(501) },
    ]) {
      const res = await operator('PUT', small.id, body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.body}`);
      assert.equal(res.json().error.code, 'validation_error', res.body);
    }
    assertError(await operator('PUT', small.id, { route_limit: 10, reason: 'a\u0000b' }), 400, 'validation_error');
    assert.deepEqual(await figureRows(small.id), []);
    assertError(await operator('PUT', '01900000-0000-7000-8000-000000000000', { route_limit: 10 }), 404, 'not_found');
    assertError(await operator('GET', '01900000-0000-7000-8000-000000000000'), 404, 'not_found');
    assertError(await operator('GET', 'not-a-uuid'), 404, 'not_found');
  });

  it('a caller without access to the organization does not spend its budget', async () => {
    const outsider = await t.token(uniqueEmail('outsider'));
    for (let i = 0; i < 4; i++) await get(t, '/v1/form-templates', outsider, small.id);
    assert.equal(limitOf(await get(t, '/v1/form-templates', staff.small, small.id)).remaining, 2);
  });

  it('fails open: with the store unreachable an organization passes beyond the threshold', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await get(broken, '/v1/specialists', staff.small, small.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(limitOf(res).limit, 3);
    }
  });

  it('refuses a RATELIMIT_TENANT_REFRESH_SECONDS out of range at start-up', async () => {
    const { parseConfig, ConfigError } = await import('../src/config.ts');
    assert.throws(() => parseConfig({ RATELIMIT_TENANT_REFRESH_SECONDS: '-1' }), ConfigError);
    assert.throws(() => parseConfig({ RATELIMIT_TENANT_REFRESH_SECONDS: 'soon' }), ConfigError);
  });
});
