import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openPostgres, type TestDatabase } from '@clinic/db';
import { freshDatabase, MODE, startTestApp, type TestApp } from './helpers.ts';

const BROKEN_REDIS = { REDIS_URL: 'redis://127.0.0.1:1' };

function assertHealthShape(body: any): void {
  assert.deepEqual(Object.keys(body).sort(), ['checks', 'status', 'uptime_seconds']);
  assert.ok(['healthy', 'degraded', 'unhealthy'].includes(body.status), body.status);
  assert.ok(Number.isInteger(body.uptime_seconds) && body.uptime_seconds >= 0, `uptime_seconds ${body.uptime_seconds}`);
  const pg = body.checks.postgresql;
  assert.equal(typeof pg.status, 'string');
  assert.deepEqual(Object.keys(pg.metrics).sort(), ['acquired_conns', 'idle_conns', 'max_conns', 'total_conns', 'utilization_pct']);
  for (const k of ['total_conns', 'acquired_conns', 'idle_conns', 'max_conns']) {
    assert.ok(Number.isInteger(pg.metrics[k]) && pg.metrics[k] >= 0, `${k} = ${pg.metrics[k]}`);
  }
  assert.equal(typeof pg.metrics.utilization_pct, 'number');
  assert.ok(pg.metrics.utilization_pct >= 0 && pg.metrics.utilization_pct <= 100);
  assert.ok(pg.metrics.max_conns >= 1);
  assert.ok(pg.metrics.acquired_conns + pg.metrics.idle_conns <= pg.metrics.max_conns);
  assert.equal(typeof body.checks.redis.status, 'string');
}

let shared: TestDatabase;
before(async () => {
  shared = await freshDatabase();
});
after(() => shared.drop());

describe('GET /health', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared });
  });
  after(() => t.close());

  it('is 200 healthy with the spec 4.3 shape, without a token', async () => {
    const res = await t.call('GET', '/health');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assertHealthShape(body);
    assert.equal(body.status, 'healthy');
    assert.equal(body.checks.postgresql.status, 'up');
    assert.equal(body.checks.redis.status, MODE === 'services' ? 'up' : 'not_configured');
    assert.equal(res.headers['x-ratelimit-limit'], undefined);
  });

  it('reports the pool the instance really has', async () => {
    const { metrics } = (await t.call('GET', '/health')).json().checks.postgresql;
    assert.equal(metrics.max_conns, t.db.poolMetrics().max_conns);
    if (MODE === 'embedded') assert.equal(metrics.max_conns, 1);
  });

  it('ignores a bearer token, even an invalid one', async () => {
    const res = await t.call('GET', '/health', { token: 'garbage' });
    assert.equal(res.statusCode, 200);
  });

  it('GET /health/ready is 200 ready when every dependency answers', async () => {
    const res = await t.call('GET', '/health/ready');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.status, 'ready');
    assert.equal(body.checks.postgresql.status, 'up');
    assert.equal(body.checks.redis.status, MODE === 'services' ? 'up' : 'not_configured');
    assert.ok(Number.isInteger(body.uptime_seconds));
  });
});

describe('health with Redis unreachable', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared, env: BROKEN_REDIS });
  });
  after(() => t.close());

  it('GET /health is 200 degraded with redis down (the load balancer keeps the instance)', async () => {
    const res = await t.call('GET', '/health');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assertHealthShape(body);
    assert.equal(body.status, 'degraded');
    assert.equal(body.checks.redis.status, 'down');
    assert.equal(body.checks.postgresql.status, 'up');
  });

  it('GET /health/ready is 503 not_ready naming redis as down', async () => {
    const res = await t.call('GET', '/health/ready');
    assert.equal(res.statusCode, 503, res.body);
    const body = res.json();
    assert.equal(body.status, 'not_ready');
    assert.equal(body.checks.redis.status, 'down');
    assert.equal(body.checks.postgresql.status, 'up');
  });
});

describe('health without a database', () => {
  let t: TestApp;
  let fresh: TestDatabase;
  let own: TestDatabase['db'];
  before(async () => {
    fresh = await freshDatabase();
    // In services mode the app gets its own pool, so the test database can still be dropped afterwards.
    own = fresh.url ? await openPostgres({ connectionString: fresh.url, max: 3 }) : fresh.db;
    t = await startTestApp({ database: { db: own, url: fresh.url, drop: async () => {} } });
    assert.equal((await t.call('GET', '/health')).statusCode, 200);
    await own.close();
  });
  after(async () => {
    await t.close();
    if (fresh.url) await fresh.drop();
  });

  it('GET /health is 503 unhealthy with postgresql down', async () => {
    const res = await t.call('GET', '/health');
    assert.equal(res.statusCode, 503, res.body);
    const body = res.json();
    assertHealthShape(body);
    assert.equal(body.status, 'unhealthy');
    assert.equal(body.checks.postgresql.status, 'down');
  });

  it('GET /health/ready is 503 not_ready', async () => {
    const res = await t.call('GET', '/health/ready');
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().status, 'not_ready');
    assert.equal(res.json().checks.postgresql.status, 'down');
  });
});

describe('GET /v1/public/system-info', () => {
  const env = {
    SYSTEM_MANUFACTURER_NAME: 'Acme Medical SRL',
    SYSTEM_MANUFACTURER_ADDRESS: 'Strada Exemplu 1, 010101 Bucuresti, Romania',
    SYSTEM_PRODUCT_NAME: 'Acme Rehab',
    SYSTEM_PRODUCT_VERSION: '2.3.4',
    SYSTEM_UDI_DI: '05940000000017',
    SYSTEM_REGULATORY_MARKS: 'CE 0123, UKCA',
    SYSTEM_MANUFACTURE_DATE: '2025-01-31',
    SYSTEM_INSTRUCTIONS_URL: 'https://example.test/ifu',
    SYSTEM_SUPPORT_EMAIL: 'vigilance@example.test',
  };
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared, env });
  });
  after(() => t.close());

  it('is public and returns the labelling data from the configuration', async () => {
    const res = await t.call('GET', '/v1/public/system-info');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      data: {
        manufacturer_name: 'Acme Medical SRL',
        manufacturer_address: 'Strada Exemplu 1, 010101 Bucuresti, Romania',
        product_name: 'Acme Rehab',
        version: '2.3.4',
        udi_di: '05940000000017',
        regulatory_marks: ['CE 0123', 'UKCA'],
        manufacture_date: '2025-01-31',
        instructions_url: 'https://example.test/ifu',
        support_email: 'vigilance@example.test',
      },
    });
  });

  it('ignores a bearer token, even an invalid one', async () => {
    const res = await t.call('GET', '/v1/public/system-info', { token: 'garbage' });
    assert.equal(res.statusCode, 200, res.body);
  });

  it('the OpenAPI version is the labelled product version', async () => {
    assert.equal((await t.call('GET', '/openapi.json')).json().info.version, '2.3.4');
  });
});

describe('GET /v1/public/system-info with defaults', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ database: shared });
  });
  after(() => t.close());

  it('has every field, with no regulatory mark claimed unless configured', async () => {
    const res = await t.call('GET', '/v1/public/system-info');
    assert.equal(res.statusCode, 200);
    const { data } = res.json();
    assert.deepEqual(Object.keys(data).sort(), [
      'instructions_url',
      'manufacture_date',
      'manufacturer_address',
      'manufacturer_name',
      'product_name',
      'regulatory_marks',
      'support_email',
      'udi_di',
      'version',
    ]);
    assert.deepEqual(data.regulatory_marks, []);
    assert.ok(data.manufacturer_name.length > 0);
  });
});
