import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { checkProviders } from '../src/modules/providers/health.ts';
import { isForbiddenAddress } from '../src/platform/outgoing-url.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/**
 * One guard for every outgoing URL (platform/outgoing-url.ts), in the production stance (private
 * networks not allowed): webhooks and service provider endpoints refuse the same addresses, IPv6
 * forms that embed an IPv4 address included, at creation and again when a socket connects.
 */
const EMBEDDED_OR_SPECIAL = [
  'https://[::127.0.0.1]/hook', // IPv4-compatible IPv6; the URL parser writes it as ::7f00:1
  'https://[::7f00:1]/hook',
  'https://[::ffff:127.0.0.1]/hook', // IPv4-mapped
  'https://[::ffff:a9fe:a9fe]/hook', // mapped cloud metadata
  'https://[64:ff9b::7f00:1]/hook', // NAT64
  'https://[64:ff9b:1::a00:1]/hook', // local-use NAT64
  'https://[2002:7f00:1::1]/hook', // 6to4 around 127.0.0.1
  'https://[2001:0:7f00:1::1]/hook', // Teredo
  'https://198.18.0.1/hook', // benchmarking 198.18.0.0/15
  'https://198.19.255.254/hook',
  'https://[2001:db8::1]/hook', // documentation
  'https://[::]/hook',
  'https://0.0.0.0/hook',
];

describe('the outgoing-URL guard', () => {
  let t: TestApp;
  let su: string;
  let orgId: string;
  let admin: string;
  // The machine's own name resolves to one of its own (loopback or private) addresses, if it resolves.
  let ownName: string | null = null;

  before(async () => {
    t = await startTestApp({ env: { PROVIDER_ALLOW_PRIVATE_ENDPOINTS: 'false' } });
    su = await t.superadmin();
    orgId = (await t.createOrg()).id;
    admin = (await t.addMember(orgId, uniqueEmail('guard-admin'), 'admin')).token;
    const addresses = await lookup(hostname(), { all: true }).catch(() => []);
    if (addresses.length && addresses.every((a) => isForbiddenAddress(a.address))) ownName = hostname();
  });
  after(() => t?.close());

  it('classifies only global unicast as reachable', () => {
    for (const a of ['::7f00:1', '::a00:1', '64:ff9b::a00:1', '2002:a00:1::1', '198.18.0.1', '192.0.0.8', '240.0.0.1', '255.255.255.255']) {
      assert.equal(isForbiddenAddress(a), true, a);
    }
    for (const a of ['8.8.8.8', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e']) assert.equal(isForbiddenAddress(a), false, a);
  });

  it('webhook subscriptions: each such URL is 400 validation_error on fields.url and nothing is stored', async () => {
    for (const url of EMBEDDED_OR_SPECIAL) {
      const res = await t.call('POST', '/v1/webhook-subscriptions', {
        token: admin,
        org: orgId,
        body: { url, event_types: ['member.added'] },
      });
      const err = assertError(res, 400, 'validation_error');
      assert.ok(err.fields?.url, `${url}: ${res.body}`);
    }
    assert.deepEqual(dataOf(await t.call('GET', '/v1/webhook-subscriptions', { token: admin, org: orgId })), []);
  });

  it('provider endpoints: the same URLs, and a name that resolves to a local address, are 400 on config.endpoint_url', async (ctx) => {
    const list = dataOf(await t.call('GET', '/v1/admin/platform-service-providers', { token: su }));
    const auth = list.find((r: { capability: string }) => r.capability === 'auth');
    const urls = [...EMBEDDED_OR_SPECIAL, 'http://api.example.com/', ...(ownName ? [`https://${ownName}:8443/`] : [])];
    if (!ownName) ctx.diagnostic(`${hostname()} does not resolve to a local address here: the name case is skipped`);
    for (const endpoint_url of urls) {
      const res = await t.call('PATCH', `/v1/admin/platform-service-providers/${auth.id}`, {
        token: su,
        body: {
          credentials: {
            secret_key: 'sk_test_guard1234567890',
            publishable_key: `pk_test_${Buffer.from('guard.clerk.test$').toString('base64')}`,
            webhook_secret: 'whsec_guard12345678',
          },
          config: { endpoint_url },
        },
      });
      const err = assertError(res, 400, 'validation_error');
      assert.ok(err.fields?.['config.endpoint_url'], `${endpoint_url}: ${res.body}`);
    }
    const after = dataOf(await t.call('GET', `/v1/admin/platform-service-providers/${auth.id}`, { token: su }));
    assert.notEqual(after.config?.endpoint_url, EMBEDDED_OR_SPECIAL[0]);
  });

  it('provider health checks refuse a stored endpoint whose name resolves to a local address', async (ctx) => {
    if (!ownName) return ctx.skip(`${hostname()} does not resolve to a local address here`);
    const list = dataOf(await t.call('GET', '/v1/admin/platform-service-providers', { token: su }));
    const auth = list.find((r: { capability: string }) => r.capability === 'auth');
    const ok = await t.call('PATCH', `/v1/admin/platform-service-providers/${auth.id}`, {
      token: su,
      body: {
        credentials: {
          secret_key: 'sk_test_guard1234567890',
          publishable_key: `pk_test_${Buffer.from('guard.clerk.test$').toString('base64')}`,
          webhook_secret: 'whsec_guard12345678',
        },
        config: { endpoint_url: '' },
        status: 'active',
      },
    });
    assert.equal(ok.statusCode, 200, ok.body);
    // A row changed behind the API's back (or a DNS answer that changed since): the ping is where it is caught.
    await t.db.query(
      `update platform_service_providers set config = jsonb_set(config, '{endpoint_url}', to_jsonb($2::text)) where id = $1`,
      [auth.id, `https://${ownName}:1/`],
    );
    const results = await checkProviders({
      db: t.db,
      secrets: t.rt.secrets,
      logger: t.rt.logger,
      pingTimeoutMs: 2000,
      allowPrivateEndpoints: false,
      healthIntervalSeconds: 60,
    });
    assert.equal(results.find((r) => r.id === auth.id)?.status, 'error', JSON.stringify(results));
    const row = dataOf(await t.call('GET', `/v1/admin/platform-service-providers/${auth.id}`, { token: su }));
    assert.match(row.last_error, /non-public address/);
  });
});
