import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startFakeSes } from './fakes/ses.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// The console's operator views (docs/web.md, "Console"): every service's status and the audit chain's verification.

function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  return new Promise((ok) => {
    const server = createServer(handler);
    server.listen(0, '127.0.0.1', () => ok({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
  });
}

describe('system status and audit chain verification (superadmin)', () => {
  let t: TestApp;
  let su: string;
  let telemetry: { server: Server; url: string };
  let closedUrl: string;

  before(async () => {
    telemetry = await listen((req, res) => {
      res.writeHead(req.url === '/health' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'healthy', checks: {}, uptime_seconds: 42 }));
    });
    // A port that was just free and is closed again: nothing answers there.
    const gone = await listen(() => undefined);
    closedUrl = gone.url;
    await new Promise((ok) => gone.server.close(ok));
    t = await startTestApp({
      env: { TELEMETRY_URL: telemetry.url, COMPOSER_URL: closedUrl, MASTER_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}` },
    });
    su = await t.superadmin();
  });
  after(async () => {
    await t?.close();
    await new Promise((ok) => telemetry?.server.close(ok));
  });

  it('reports each service: a service that answers is up, one that does not is down with its error (still 200)', async () => {
    const body = dataOf(await t.call('GET', '/v1/admin/system-status', { token: su }));
    const by = Object.fromEntries(body.services.map((s: { name: string }) => [s.name, s]));
    assert.deepEqual(Object.keys(by).sort(), ['composer', 'core_api', 'database', 'redis', 'telemetry', 'worker']);
    assert.equal(by.telemetry.status, 'up');
    assert.equal(by.telemetry.detail.uptime_seconds, 42);
    assert.equal(by.composer.status, 'down');
    assert.ok(by.composer.error, 'the composer names why it is down');
    assert.equal(by.database.status, 'up');
    assert.ok(by.database.detail.max_conns >= 1);
    assert.equal(body.status, 'unhealthy', 'a service down makes the whole unhealthy');
  });

  it('the worker is degraded when the outbox holds an event older than a minute', async () => {
    const before = dataOf(await t.call('GET', '/v1/admin/system-status', { token: su }));
    assert.equal(before.services.find((s: { name: string }) => s.name === 'worker').status, 'up');
    await t.db.query(
      `insert into domain_events (type, data, occurred_at) values ('test.stuck', '{}'::jsonb, now() - interval '10 minutes')`,
    );
    const body = dataOf(await t.call('GET', '/v1/admin/system-status', { token: su }));
    const worker = body.services.find((s: { name: string }) => s.name === 'worker');
    assert.equal(worker.status, 'degraded');
    assert.ok(worker.detail.outbox_pending >= 1);
    assert.ok(worker.detail.oldest_pending_seconds >= 599);
    await t.db.query(`update domain_events set dispatched_at = now() where type = 'test.stuck'`);
  });

  it("verifies an organization's chain and names the first broken entry after tampering", async () => {
    const org = await t.createOrg();
    const admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    for (let i = 0; i < 3; i++)
      await t.call('POST', `/v1/organizations/${org.id}/locations`, { token: admin, body: { name: `Room ${i}`, timezone: 'UTC' } });
    const ok = dataOf(await t.call('POST', '/v1/admin/audit-chains/verify', { token: su, body: { organization_id: org.id } }));
    assert.equal(ok.ok, true);
    assert.equal(ok.chain, org.id);
    assert.ok(ok.checked >= 4);
    const platform = dataOf(await t.call('POST', '/v1/admin/audit-chains/verify', { token: su, body: { organization_id: null } }));
    assert.equal(platform.chain, 'platform');
    assert.equal(platform.ok, true);

    const { rows } = await t.db.query<{ id: string; chain_seq: string }>(
      `select id, chain_seq from audit_logs where organization_id = $1 and action = 'location.created' order by chain_seq limit 1 offset 1`,
      [org.id],
    );
    await t.db.transaction(async (tx) => {
      await tx.exec('alter table audit_logs disable trigger audit_logs_append_only');
      await tx.query(`update audit_logs set data = jsonb_set(data, '{name}', '"Forged"') where id = $1`, [rows[0]!.id]);
      await tx.exec('alter table audit_logs enable trigger audit_logs_append_only');
    });
    const broken = dataOf(await t.call('POST', '/v1/admin/audit-chains/verify', { token: su, body: { organization_id: org.id } }));
    assert.equal(broken.ok, false);
    assert.equal(broken.broken.id, rows[0]!.id);
    assert.equal(broken.broken.chain_seq, Number(rows[0]!.chain_seq));
  });

  it('refuses an unknown organization (404) and a bad body (400)', async () => {
    assertError(
      await t.call('POST', '/v1/admin/audit-chains/verify', {
        token: su,
        body: { organization_id: '01900000-0000-7000-8000-000000000000' },
      }),
      404,
      'organization_not_found',
    );
    const bad = await t.call('POST', '/v1/admin/audit-chains/verify', { token: su, body: { organization_id: 'nope' } });
    assert.equal(bad.statusCode, 400);
  });

  it('checks one provider now: refused credentials move it to error with the reason, working ones back to active', async () => {
    const ses = await startFakeSes({ keys: ['AKIAGOODKEY000000001'], region: 'eu-central-1', verified: ['noreply@clinic.test'] });
    try {
      const rows = dataOf(await t.call('GET', '/v1/admin/platform-service-providers?capability=email', { token: su }));
      const id = rows[0].id;
      const body = (akid: string) => ({
        status: 'active',
        credentials: { access_key_id: akid, secret_access_key: 'a-secret-of-sixteen-plus' },
        config: { region: 'eu-central-1', from_address: 'noreply@clinic.test', configuration_set: 'default', endpoint_url: ses.url },
      });
      dataOf(await t.call('PATCH', `/v1/admin/platform-service-providers/${id}`, { token: su, body: body('AKIABADKEY0000000001') }));
      const bad = dataOf(await t.call('POST', `/v1/admin/platform-service-providers/${id}/check`, { token: su }));
      assert.equal(bad.status, 'error');
      assert.ok(bad.last_error, 'the reason is kept');
      assert.ok(bad.last_health_check_at);
      assert.doesNotMatch(JSON.stringify(bad), /a-secret-of-sixteen-plus/);
      dataOf(await t.call('PATCH', `/v1/admin/platform-service-providers/${id}`, { token: su, body: body('AKIAGOODKEY000000001') }));
      const good = dataOf(await t.call('POST', `/v1/admin/platform-service-providers/${id}/check`, { token: su }));
      assert.equal(good.status, 'active');
      const admin = (await t.addMember((await t.createOrg()).id, uniqueEmail('admin'), 'admin')).token;
      assertError(await t.call('POST', `/v1/admin/platform-service-providers/${id}/check`, { token: admin }), 403, 'forbidden');
    } finally {
      await ses.close();
    }
  });
});
