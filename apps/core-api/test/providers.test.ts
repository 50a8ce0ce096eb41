import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { runCommand } from '../src/cli/commands.ts';
import { createDevIssuer } from '../src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../src/platform/runtime.ts';
import { createSecretBox, parseMasterKeys } from '../src/platform/secrets.ts';
import { checkProviders } from '../src/modules/providers/health.ts';
import { startFakeClerk } from './fakes/clerk.ts';
import { startFakeS3 } from './fakes/s3.ts';
import { startFakeSes } from './fakes/ses.ts';
import { assertError, dataOf, freshDatabase, REDIS_URL, startTestApp, type TestApp } from './helpers.ts';

// Platform service providers (spec 2.11, 3.3, 4.10, 5 credential rotation, 8 provider cache).

const KEY1 = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
const KEY2 = `k2:${Buffer.alloc(32, 2).toString('base64')}`;
const AKID = 'AKIAFAKEOLDKEY000001';
const AKID_NEW = 'AKIAFAKENEWKEY000002';
const SECRET_OLD = 'old-secret-Zq8wPp3vXk2Lm9Nn';
const SECRET_NEW = 'new-secret-Hh7yTt6rEe5Ww4Qq';
const CLERK_SK = 'sk_test_SecretClerkKey123456';
const CLERK_WH = 'whsec_WebhookSecretValue987';
// A publishable key names the instance's frontend API (base64 of "<host>$"): the issuer of its tokens.
const CLERK_PK = `pk_test_${Buffer.from('clinic.clerk.test$').toString('base64')}`;
const SECRETS = [SECRET_OLD, SECRET_NEW, CLERK_SK, CLERK_WH];

describe('platform service providers', () => {
  const lines: string[] = [];
  const capture = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  let t: TestApp;
  let su: string;
  let ses: Awaited<ReturnType<typeof startFakeSes>>;
  let s3: Awaited<ReturnType<typeof startFakeS3>>;
  let clerk: Awaited<ReturnType<typeof startFakeClerk>>;
  let rows: Record<string, { id: string }>;
  const env = { MASTER_KEYS: KEY1, PROVIDER_CACHE_TTL_SECONDS: '3600' };

  before(async () => {
    ses = await startFakeSes({ keys: [AKID], region: 'eu-central-1', verified: ['noreply@clinic.test'] });
    s3 = await startFakeS3({ keys: [AKID], region: 'eu-central-1', buckets: ['clinic-assets'] });
    clerk = await startFakeClerk({ secretKeys: [CLERK_SK] });
    // The app's own logger, at trace level, writing into `lines`: every log line of these tests is grepped.
    const database = await freshDatabase();
    const config = parseConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'trace',
      DATA_DIR: '/nonexistent',
      ...(REDIS_URL ? { REDIS_URL } : {}),
      ...env,
    });
    const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
    const rt = await createRuntime(config, { db: database.db, devIssuer: issuer, logger: pino({ level: 'trace' }, capture) });
    const app = await buildApp(rt);
    await app.ready();
    const second = await startTestApp({ database, migrate: false, issuer, env });
    // `t` drives the logged instance through the helpers of the second (same database and issuer).
    t = {
      ...second,
      app,
      rt,
      call: (m, u, o = {}) => {
        const headers: Record<string, string> = { ...o.headers };
        if (o.token) headers.authorization = `Bearer ${o.token}`;
        const payload = o.body !== undefined ? JSON.stringify(o.body) : undefined;
        if (payload) headers['content-type'] = 'application/json';
        return app.inject({ method: m as 'GET', url: u, headers, ...(payload ? { payload } : {}) });
      },
    } as TestApp;
    (t as unknown as { closeAll: () => Promise<void> }).closeAll = async () => {
      await app.close();
      await rt.close();
      await second.close();
      await database.drop();
    };
    su = await second.superadmin();
    const list = dataOf(await t.call('GET', '/v1/admin/platform-service-providers', { token: su }));
    rows = Object.fromEntries(list.map((r: { capability: string; id: string }) => [r.capability, r]));
  });
  after(async () => {
    await (t as unknown as { closeAll: () => Promise<void> }).closeAll();
    await ses.close();
    await s3.close();
    await clerk.close();
  });

  const patch = (id: string, body: unknown, token = su) => t.call('PATCH', `/v1/admin/platform-service-providers/${id}`, { token, body });
  const emailBody = (secret = SECRET_OLD, akid = AKID) => ({
    credentials: { access_key_id: akid, secret_access_key: secret },
    config: { region: 'eu-central-1', from_address: 'noreply@clinic.test', configuration_set: 'default', endpoint_url: ses.url },
  });

  it('starts with one inactive platform row per whitelisted capability, nothing secret', async () => {
    assert.deepEqual(Object.keys(rows).sort(), ['auth', 'email', 'sms', 'storage']);
    for (const r of Object.values(rows) as Array<Record<string, unknown>>) {
      assert.equal(r.status, 'inactive');
      assert.equal(r.credentials, null);
      assert.equal(r.organization_id, null);
    }
  });

  it('only superadmins reach the operator surface', async () => {
    const org = await t.createOrg();
    const admin = (await t.addMember(org.id, `adm-${Date.now()}@example.test`, 'admin')).token;
    assertError(await t.call('GET', '/v1/admin/platform-service-providers', { token: admin }), 403, 'forbidden');
    assertError(await patch(rows.email!.id, emailBody(), admin), 403, 'forbidden');
  });

  it('validates body shapes per capability (spec 2.11) and changes nothing on bad input', async () => {
    const bad = await patch(rows.email!.id, {
      credentials: { access_key_id: 'lower', secret: 'x' },
      config: { region: 'nowhere', from_address: 'nope' },
    });
    const err = assertError(bad, 400, 'validation_error');
    for (const f of ['credentials.access_key_id', 'credentials.secret', 'config.region', 'config.from_address'])
      assert.ok(err.fields[f], `${f}: ${bad.body}`);
    assertError(
      await patch(rows.email!.id, { ...emailBody(), config: { ...emailBody().config, endpoint_url: 'ftp://x' } }),
      400,
      'validation_error',
    );
    assertError(await patch(rows.email!.id, { status: 'active' }), 400, 'validation_error');
    assertError(await patch(rows.email!.id, { unknown: 1 }), 400, 'validation_error');
    const row = dataOf(await t.call('GET', `/v1/admin/platform-service-providers/${rows.email!.id}`, { token: su }));
    assert.equal(row.credentials, null);
    assert.equal(row.status, 'inactive');
  });

  it('stores sealed credentials, masks them, bumps updated_at and audits the diff without secrets', async () => {
    const before = dataOf(await t.call('GET', `/v1/admin/platform-service-providers/${rows.email!.id}`, { token: su }));
    const res = await patch(rows.email!.id, { ...emailBody(), status: 'active' });
    const row = dataOf(res);
    assert.equal(row.status, 'active');
    assert.deepEqual(row.credentials, { access_key_id: `****${AKID.slice(-4)}`, secret_access_key: '********' });
    assert.equal(row.credentials_key_id, 'k1');
    assert.ok(new Date(row.updated_at) > new Date(before.updated_at));
    const stored = await t.db.query<{ credentials_sealed: string }>(
      'select credentials_sealed from platform_service_providers where id = $1',
      [row.id],
    );
    assert.ok(stored.rows[0]!.credentials_sealed.startsWith('v1.k1.'));
    assert.ok(!stored.rows[0]!.credentials_sealed.includes(SECRET_OLD));
    const audit = await t.db.query<{ data: any }>(
      `select data from audit_logs where entity_id = $1 and action = 'platform_service_provider.updated'`,
      [row.id],
    );
    const changes = audit.rows[0]!.data.changes;
    assert.deepEqual(changes.status, { from: 'inactive', to: 'active' });
    assert.deepEqual(changes['config.region'], { from: null, to: 'eu-central-1' });
    assert.equal(changes.credentials.to.secret_access_key, '********');
  });

  it('health check: active -> error when the provider rejects the key, error -> active after a PATCH with working credentials (3.3)', async () => {
    const deps = {
      db: t.db,
      secrets: t.rt.secrets,
      logger: t.rt.logger,
      pingTimeoutMs: 2000,
      allowPrivateEndpoints: true,
      healthIntervalSeconds: 60,
    };
    await patch(rows.storage!.id, {
      credentials: { access_key_id: AKID, secret_access_key: SECRET_OLD },
      config: { bucket: 'clinic-assets', region: 'eu-central-1', use_path_style: true, endpoint_url: s3.url },
      status: 'active',
    });
    await patch(rows.auth!.id, {
      credentials: { secret_key: CLERK_SK, publishable_key: CLERK_PK, webhook_secret: CLERK_WH },
      config: { endpoint_url: clerk.url },
      status: 'active',
    });
    let results = await checkProviders(deps);
    assert.deepEqual(
      results.map((r) => r.status),
      ['active', 'active', 'active'],
      JSON.stringify(results),
    );
    assert.ok(ses.requests > 0 && s3.requests > 0 && clerk.requests > 0, 'every client reached its server');

    // The key is revoked at the provider (rotation gone wrong): the check moves the row to error.
    ses.keys.delete(AKID);
    s3.keys.delete(AKID);
    clerk.secretKeys.clear();
    results = await checkProviders(deps);
    assert.deepEqual(
      results.map((r) => [r.status, r.changed]),
      [
        ['error', true],
        ['error', true],
        ['error', true],
      ],
    );
    const email = dataOf(await t.call('GET', `/v1/admin/platform-service-providers/${rows.email!.id}`, { token: su }));
    assert.equal(email.status, 'error');
    assert.match(email.last_error, /security token|Unrecognized/);
    assert.ok(email.last_error_at);
    assert.ok(email.last_health_check_at);

    // PATCH with working credentials: still error until the check passes.
    ses.keys.add(AKID_NEW);
    const patched = dataOf(await patch(rows.email!.id, { credentials: { access_key_id: AKID_NEW, secret_access_key: SECRET_NEW } }));
    assert.equal(patched.status, 'error');
    results = await checkProviders(deps);
    assert.equal(results.find((r) => r.id === rows.email!.id)!.status, 'active');
    const statusAudit = await t.db.query(
      `select 1 from audit_logs where entity_id = $1 and action = 'platform_service_provider.status_changed'`,
      [rows.email!.id],
    );
    assert.equal(statusAudit.rows.length, 2);
    // Put the others back for the next tests.
    s3.keys.add(AKID);
    clerk.secretKeys.add(CLERK_SK);
    await checkProviders(deps);
    // The identity row verifies tokens once active (provider-rotation.test.ts); the tests below sign in with the
    // development issuer of the environment, which applies again while the row is inactive.
    dataOf(await patch(rows.auth!.id, { status: 'inactive' }));
  });

  it('a verified sender identity is required for email', async () => {
    const deps = {
      db: t.db,
      secrets: t.rt.secrets,
      logger: t.rt.logger,
      pingTimeoutMs: 2000,
      allowPrivateEndpoints: true,
      healthIntervalSeconds: 60,
    };
    await patch(rows.email!.id, { config: { from_address: 'someone@unverified.test' } });
    const r = (await checkProviders(deps)).find((x) => x.id === rows.email!.id)!;
    assert.equal(r.status, 'error');
    await patch(rows.email!.id, { config: { from_address: 'noreply@clinic.test' } });
    assert.equal((await checkProviders(deps)).find((x) => x.id === rows.email!.id)!.status, 'active');
  });

  it('resolution: override, platform, default; an inactive row falls back; a broken override is 502, never replaced', async () => {
    const org = await t.createOrg();
    const resolve = (orgId?: string) =>
      t.call('GET', `/v1/admin/platform-service-providers/resolve?capability=email${orgId ? `&organization_id=${orgId}` : ''}`, {
        token: su,
      });
    assert.equal(dataOf(await resolve(org.id)).source, 'platform');
    const created = await t.call('POST', '/v1/admin/platform-service-providers', {
      token: su,
      body: { capability: 'email', organization_id: org.id, ...emailBody(SECRET_NEW, AKID_NEW) },
    });
    const override = dataOf(created, 201);
    assertError(
      await t.call('POST', '/v1/admin/platform-service-providers', {
        token: su,
        body: { capability: 'email', organization_id: org.id, ...emailBody() },
      }),
      409,
      'provider_exists',
    );
    assert.equal(dataOf(await resolve(org.id)).source, 'organization');
    assert.equal(dataOf(await resolve(org.id)).provider_id, override.id);

    // The override breaks: 502, not the platform row.
    await t.db.query(`update platform_service_providers set status = 'error', updated_at = now() where id = $1`, [override.id]);
    t.rt.logger.info('direct change'); // the writing path is the health check; here the cache is dropped by a PATCH below
    await patch(override.id, { config: { configuration_set: 'other' } });
    assertError(await resolve(org.id), 502, 'provider_unavailable');
    // Set inactive: removed from resolution, the platform row applies again.
    assert.equal(dataOf(await patch(override.id, { status: 'inactive' })).status, 'inactive');
    assert.equal(dataOf(await resolve(org.id)).source, 'platform');
    // The platform row inactive too: the deployment default.
    await patch(rows.email!.id, { status: 'inactive' });
    const d = dataOf(await resolve(org.id));
    assert.equal(d.source, 'default');
    assert.equal(d.provider_id, null);
    await patch(rows.email!.id, { status: 'active' });
  });

  it('caches per instance: the writer sees a PATCH at once, another instance only after its TTL (5 minutes by default)', async () => {
    const other = await startTestApp({
      env: { ...env, PROVIDER_CACHE_TTL_SECONDS: '3600' },
      migrate: false,
      issuer: t.issuer,
      database: { db: t.db, url: null, drop: async () => undefined },
    });
    const short = await startTestApp({
      env: { ...env, PROVIDER_CACHE_TTL_SECONDS: '0.3' },
      migrate: false,
      issuer: t.issuer,
      database: { db: t.db, url: null, drop: async () => undefined },
    });
    try {
      const region = async (app: TestApp) =>
        dataOf(await app.call('GET', '/v1/admin/platform-service-providers/resolve?capability=storage', { token: su })).config.region;
      assert.equal(await region(other), 'eu-central-1');
      assert.equal(await region(short), 'eu-central-1');
      dataOf(await patch(rows.storage!.id, { config: { region: 'eu-west-1' } }));
      assert.equal(await region(t), 'eu-west-1', 'the writing instance dropped its entry');
      assert.equal(await region(other), 'eu-central-1', 'another instance serves its cached entry until it expires');
      // The short-TTL instance pulls updated_at once its entry expires.
      let seen = 'eu-central-1';
      for (let i = 0; i < 100 && seen !== 'eu-west-1'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        seen = await region(short);
      }
      assert.equal(seen, 'eu-west-1');
      assert.equal(t.config.providers.cacheTtlSeconds, 3600);
      assert.equal(parseConfig({ NODE_ENV: 'test' }).providers.cacheTtlSeconds, 300, 'default: 5 minutes');
      assert.equal(parseConfig({ NODE_ENV: 'development' }).providers.healthIntervalSeconds, 300);
      assert.equal(parseConfig({ NODE_ENV: 'test', PROVIDER_HEALTH_INTERVAL: '5m' }).providers.healthIntervalSeconds, 300);
    } finally {
      await other.close();
      await short.close();
    }
  });

  it('re-encrypt moves every credential to the new master key', async () => {
    const box = createSecretBox([...parseMasterKeys(KEY2), ...parseMasterKeys(KEY1)]);
    const out = await runCommand(t.db, ['providers', 're-encrypt'], { secrets: async () => box });
    assert.match(out, /re-encrypted under key "k2"/);
    const keys = await t.db.query<{ credentials_key_id: string; credentials_sealed: string }>(
      'select credentials_key_id, credentials_sealed from platform_service_providers where credentials_sealed is not null',
    );
    for (const k of keys.rows) {
      assert.equal(k.credentials_key_id, 'k2');
      assert.equal(box.keyIdOf(k.credentials_sealed), 'k2');
      assert.doesNotThrow(() => box.open(k.credentials_sealed));
    }
    assert.match(await runCommand(t.db, ['providers', 're-encrypt'], { secrets: async () => box }), /0 re-encrypted/);
  });

  it('no secret appears in any response body or log line', async () => {
    const list = await t.call('GET', '/v1/admin/platform-service-providers', { token: su });
    const audits = await t.db.query<{ data: unknown }>(`select data from audit_logs where entity_type = 'platform_service_provider'`);
    const haystacks = [list.body, JSON.stringify(audits.rows), ...lines];
    assert.ok(lines.length > 20, `captured ${lines.length} log lines`);
    for (const secret of SECRETS) for (const h of haystacks) assert.ok(!h.includes(secret), `secret found in: ${h.slice(0, 200)}`);
  });
});
