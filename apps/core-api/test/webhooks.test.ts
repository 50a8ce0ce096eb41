import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verify as verifyHex } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { retryDelaySeconds } from '../src/modules/webhooks/delivery.ts';
import { newSigningSecret, signDelivery } from '../src/modules/webhooks/signing.ts';
import { ForbiddenDestinationError, guardedLookup, isForbiddenAddress, urlProblem } from '../src/platform/outgoing-url.ts';
import { assertError, dataOf, freshDatabase, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import type { TestDatabase } from '@clinic/db';
import { startReceiver, type Receiver } from './support/webhook-receiver.ts';

describe('webhook signing, retry schedule and SSRF rules (units)', () => {
  it('signs the exact body bytes so that both public verification libraries accept them', async () => {
    const secret = newSigningSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const signed = signDelivery(
      { id: '0190a000-0000-7000-8000-000000000001', type: 'organization.updated', data: { organization_id: 'x', changed: ['name'] } },
      [secret],
    );
    const body = signed.body.toString('utf8');
    assert.equal(
      body,
      '{"id":"0190a000-0000-7000-8000-000000000001","event":"organization.updated","data":{"organization_id":"x","changed":["name"]}}',
    );
    assert.equal(await verifyHex(secret, body, signed.headers['x-webhook-signature']!), true);
    assert.doesNotThrow(() => new Webhook(secret).verify(body, signed.headers));
    assert.equal(await verifyHex(newSigningSecret(), body, signed.headers['x-webhook-signature']!), false, 'another secret fails');
    assert.throws(() => new Webhook(secret).verify(body.replace('name', 'slug'), signed.headers), 'a changed byte fails');
    assert.equal(signed.headers['x-webhook-signature-previous'], undefined, 'one secret: one signature');
  });

  it('during an overlap both secrets verify: the previous through X-Webhook-Signature-Previous and the standard header', async () => {
    const [next, prev] = [newSigningSecret(), newSigningSecret()];
    const signed = signDelivery({ id: 'evt', type: 'member.added', data: {} }, [next, prev]);
    const body = signed.body.toString('utf8');
    assert.equal(await verifyHex(next, body, signed.headers['x-webhook-signature']!), true);
    assert.equal(await verifyHex(prev, body, signed.headers['x-webhook-signature-previous']!), true);
    assert.equal(signed.headers['webhook-signature']!.split(' ').length, 2);
    assert.doesNotThrow(() => new Webhook(prev).verify(body, signed.headers));
    assert.doesNotThrow(() => new Webhook(next).verify(body, signed.headers));
  });

  it('retry schedule: the configured delays with ±10% jitter, then none', () => {
    const schedule = [5, 300, 1800];
    assert.equal(
      retryDelaySeconds(schedule, 1, () => 0),
      4.5,
    );
    assert.equal(
      retryDelaySeconds(schedule, 1, () => 1),
      5.5,
    );
    assert.equal(
      retryDelaySeconds(schedule, 2, () => 0.5),
      300,
    );
    assert.equal(
      retryDelaySeconds(schedule, 3, () => 0.5),
      1800,
    );
    assert.equal(
      retryDelaySeconds(schedule, 4, () => 0.5),
      null,
    );
  });

  it('refuses loopback, private, link-local, metadata, CGNAT, multicast, reserved and unique-local addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '192.0.2.1',
      '::1',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
    ]) {
      assert.equal(isForbiddenAddress(a), true, a);
    }
    for (const a of ['8.8.8.8', '93.184.215.14', '2606:4700:4700::1111']) assert.equal(isForbiddenAddress(a), false, a);
  });

  it('URLs: https only, no credentials, no fragment, no private literal or local names unless private networks are allowed', () => {
    assert.equal(urlProblem('http://example.com/h', false), 'must use https');
    assert.equal(urlProblem('not a url', false), 'must be an absolute URL');
    assert.equal(urlProblem('https://u:p@example.com/h', false), 'must not carry credentials');
    assert.equal(urlProblem('https://example.com/h#x', false), 'must not have a fragment');
    assert.match(urlProblem('https://169.254.169.254/latest/meta-data', false)!, /loopback, private/);
    assert.match(urlProblem('https://[::1]:8443/h', false)!, /loopback, private/);
    assert.equal(urlProblem('https://localhost/h', false), 'must name a public host');
    assert.equal(urlProblem('https://127.0.0.1/h', true), null);
    assert.equal(urlProblem('https://example.com/h', false), null);
  });

  it('the connect-time lookup refuses a name that resolves to a private address (DNS rebinding)', async () => {
    const err = await new Promise<Error | null>((resolve) => guardedLookup(false)('localhost', {}, (e: Error | null) => resolve(e)));
    assert.ok(err instanceof ForbiddenDestinationError, String(err));
    const ok = await new Promise<unknown[]>((resolve) =>
      guardedLookup(true)('localhost', { all: true }, (_e: Error | null, a: unknown[]) => resolve(a)),
    );
    assert.ok(ok.length > 0);
  });
});

describe('webhook subscriptions API (spec 4.9)', () => {
  let t: TestApp;
  let strict: TestApp;
  let rx: Receiver;
  let admin: string;
  let specialist: string;
  let orgId: string;
  let otherOrg: string;
  let otherAdmin: string;

  let database: TestDatabase | undefined;
  before(async () => {
    rx = await startReceiver();
    database = await freshDatabase();
    t = await startTestApp({
      database,
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_CA_FILE: rx.caFile, WEBHOOK_TIMEOUT_MS: '800' },
    });
    // The production stance on the same data: private networks refused.
    strict = await startTestApp({ database, migrate: false, issuer: t.issuer });
    orgId = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    admin = (await t.addMember(orgId, uniqueEmail('wh-admin'), 'admin')).token;
    specialist = (await t.addMember(orgId, uniqueEmail('wh-spec'), 'specialist')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('wh-other'), 'admin')).token;
  });
  after(async () => {
    await strict?.close();
    await t?.close();
    // Shared by two apps, so neither owns it: closed here, or an open PGlite keeps the file's process alive.
    await database?.drop();
    await rx?.close();
  });

  const create = (body: unknown, token = admin, org = orgId, app = t) =>
    app.call('POST', '/v1/webhook-subscriptions', { token, org, body });

  it('creates a subscription: 201, the signing secret once, sealed at rest, audited without it', async () => {
    const res = await create({
      url: rx.url('/a'),
      event_types: ['member.added', 'organization.updated', 'member.added'],
      description: 'CRM sync',
    });
    const sub = dataOf(res, 201);
    assert.match(sub.signing_secret, /^whsec_/);
    assert.equal(sub.status, 'active');
    assert.equal(sub.organization_id, orgId);
    assert.deepEqual(sub.event_types, ['member.added', 'organization.updated'], 'de-duplicated and sorted');
    assert.equal(sub.description, 'CRM sync');
    const got = dataOf(await t.call('GET', `/v1/webhook-subscriptions/${sub.id}`, { token: admin, org: orgId }));
    assert.equal(got.signing_secret, undefined, 'never shown again');
    assert.ok(!JSON.stringify(got).includes(sub.signing_secret));
    const list = dataOf(await t.call('GET', '/v1/webhook-subscriptions', { token: admin, org: orgId }));
    assert.ok(!JSON.stringify(list).includes(sub.signing_secret));
    const { rows } = await t.db.query<{ secret_sealed: string }>('select secret_sealed from webhook_subscriptions where id = $1', [sub.id]);
    assert.ok(rows[0]!.secret_sealed.startsWith('v1.'));
    assert.ok(!rows[0]!.secret_sealed.includes(sub.signing_secret.slice(6)));
    assert.equal(t.rt.secrets.open(rows[0]!.secret_sealed), sub.signing_secret);
    const audit = await t.db.query<{ data: unknown }>(
      `select data from audit_logs where entity_id = $1 and action = 'webhook_subscription.created'`,
      [sub.id],
    );
    assert.equal(audit.rows.length, 1);
    assert.ok(!JSON.stringify(audit.rows[0]!.data).includes(sub.signing_secret));
  });

  it('validates the body: HTTPS only, known event types, "*" alone, required fields, no extra fields; nothing is stored', async () => {
    const before = (await t.db.query<{ n: number }>('select count(*)::int as n from webhook_subscriptions')).rows[0]!.n;
    assert.equal(
      assertError(await create({ url: 'http://example.com/h', event_types: ['member.added'] }), 400, 'validation_error').fields.url,
      'must use https',
    );
    assert.match(
      assertError(await create({ url: rx.url('/b'), event_types: ['member.exploded'] }), 400, 'validation_error').fields.event_types,
      /unknown event types: member\.exploded/,
    );
    assert.ok(
      assertError(await create({ url: rx.url('/b'), event_types: ['*', 'member.added'] }), 400, 'validation_error').fields.event_types,
    );
    assert.ok(assertError(await create({ url: rx.url('/b'), event_types: [] }), 400, 'validation_error').fields);
    assertError(await create({ url: rx.url('/b') }), 400, 'validation_error');
    assertError(await create({ url: rx.url('/b'), event_types: ['*'], signing_secret: 'mine' }), 400, 'validation_error');
    assertError(await t.call('POST', '/v1/webhook-subscriptions', { token: admin, org: orgId, rawBody: '{"url":' }), 400, 'invalid_body');
    assert.equal((await t.db.query<{ n: number }>('select count(*)::int as n from webhook_subscriptions')).rows[0]!.n, before);
  });

  it('refuses private and loopback destinations unless private networks are allowed', async () => {
    for (const url of [
      'https://127.0.0.1:8443/h',
      'https://10.0.0.5/h',
      'https://169.254.169.254/latest',
      'https://localhost/h',
      'https://[::1]/h',
    ]) {
      const err = assertError(await create({ url, event_types: ['*'] }, admin, orgId, strict), 400, 'validation_error');
      assert.ok(err.fields.url, url);
    }
  });

  it('needs webhooks.manage in the organization; other organizations see nothing', async () => {
    const sub = dataOf(await create({ url: rx.url('/iso'), event_types: ['*'] }), 201);
    assertError(await create({ url: rx.url('/x'), event_types: ['*'] }, specialist), 403, 'forbidden');
    assertError(await t.call('GET', '/v1/webhook-subscriptions', { token: specialist, org: orgId }), 403, 'forbidden');
    // The other clinic's admin, in its own organization: the id is not there.
    assertError(await t.call('GET', `/v1/webhook-subscriptions/${sub.id}`, { token: otherAdmin, org: otherOrg }), 404, 'not_found');
    assertError(await t.call('DELETE', `/v1/webhook-subscriptions/${sub.id}`, { token: otherAdmin, org: otherOrg }), 404, 'not_found');
    const theirs = dataOf(await t.call('GET', '/v1/webhook-subscriptions', { token: otherAdmin, org: otherOrg }));
    assert.ok(!theirs.some((s: any) => s.id === sub.id));
    // Naming our organization gives it no permission there.
    assertError(await t.call('GET', `/v1/webhook-subscriptions/${sub.id}`, { token: otherAdmin, org: orgId }), 403, 'forbidden');
    // Row-level security agrees, whatever the route does: as app_rls in the other organization, zero rows.
    const rows = await t.db.withScope({ role: 'app_rls', principalId: null, orgId: otherOrg, permissions: ['webhooks.manage'] }, (tx) =>
      tx.query('select id from webhook_subscriptions where id = $1', [sub.id]),
    );
    assert.equal(rows.rows.length, 0);
    // A superadmin must say which organization.
    const su = await t.superadmin();
    assertError(await t.call('GET', '/v1/webhook-subscriptions', { token: su }), 400, 'validation_error');
    assert.equal(dataOf(await t.call('GET', `/v1/webhook-subscriptions/${sub.id}`, { token: su, org: orgId })).id, sub.id);
  });

  it('lists with the list conventions: pagination, status filter, sort allow-list', async () => {
    const res = await t.call('GET', '/v1/webhook-subscriptions?limit=1&sort=url', { token: admin, org: orgId });
    const body = res.json();
    assert.equal(res.statusCode, 200);
    assert.equal(body.data.length, 1);
    assert.equal(body.pagination.limit, 1);
    assert.ok(body.pagination.total >= 2);
    assert.equal(
      assertError(await t.call('GET', '/v1/webhook-subscriptions?sort=secret', { token: admin, org: orgId }), 422, 'validation_failed')
        .fields.sort !== undefined,
      true,
    );
    assertError(
      await t.call('GET', '/v1/webhook-subscriptions?created_at_after=yesterday', { token: admin, org: orgId }),
      422,
      'validation_failed',
    );
    const disabled = dataOf(await t.call('GET', '/v1/webhook-subscriptions?status=disabled', { token: admin, org: orgId }));
    assert.ok(disabled.every((s: any) => s.status === 'disabled'));
  });

  it('updates in place (PATCH), disables and re-enables, audits the changes; deletes with its log', async () => {
    const sub = dataOf(await create({ url: rx.url('/u'), event_types: ['member.added'] }), 201);
    const patched = dataOf(
      await t.call('PATCH', `/v1/webhook-subscriptions/${sub.id}`, {
        token: admin,
        org: orgId,
        body: { event_types: ['*'], status: 'disabled' },
      }),
    );
    assert.deepEqual(patched.event_types, ['*']);
    assert.equal(patched.status, 'disabled');
    assert.equal(patched.disabled_reason, 'manual');
    const back = dataOf(
      await t.call('PATCH', `/v1/webhook-subscriptions/${sub.id}`, { token: admin, org: orgId, body: { status: 'active' } }),
    );
    assert.equal(back.status, 'active');
    assert.equal(back.disabled_reason, null);
    assertError(
      await t.call('PATCH', `/v1/webhook-subscriptions/${sub.id}`, { token: admin, org: orgId, body: {} }),
      400,
      'validation_error',
    );
    assertError(
      await t.call('PATCH', `/v1/webhook-subscriptions/${sub.id}`, { token: admin, org: orgId, body: { url: 'http://x.test/' } }),
      400,
      'validation_error',
    );
    assertError(
      await t.call('PATCH', `/v1/webhook-subscriptions/${MISSING_UUID}`, { token: admin, org: orgId, body: { description: 'x' } }),
      404,
      'not_found',
    );
    const { rows } = await t.db.query<{ data: any }>(
      `select data from audit_logs where entity_id = $1 and action = 'webhook_subscription.updated' order by created_at`,
      [sub.id],
    );
    assert.deepEqual(rows[0]!.data.changes.status, { from: 'active', to: 'disabled' });
    dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
    assert.equal(dataOf(await t.call('DELETE', `/v1/webhook-subscriptions/${sub.id}`, { token: admin, org: orgId }), 204), null);
    assertError(await t.call('GET', `/v1/webhook-subscriptions/${sub.id}`, { token: admin, org: orgId }), 404, 'not_found');
    assert.equal((await t.db.query('select 1 from webhook_delivery_attempts where subscription_id = $1', [sub.id])).rows.length, 0);
  });

  it('POST .../test sends one real signed delivery and returns its result; the log shows it', async () => {
    const sub = dataOf(await create({ url: rx.url('/test-ok'), event_types: ['member.added'] }), 201);
    rx.setSecrets('/test-ok', [sub.signing_secret]);
    const result = dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
    assert.equal(result.success, true);
    assert.equal(result.status_code, 200);
    assert.equal(result.response_body, 'ok');
    const got = rx.received.filter((r) => r.path === '/test-ok');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.event, 'webhook.test');
    assert.equal(got[0]!.id, result.event_id);
    assert.ok(got[0]!.hexValid && got[0]!.standardValid, 'both signatures verify');
    const log = dataOf(await t.call('GET', `/v1/webhook-subscriptions/${sub.id}/events`, { token: admin, org: orgId }));
    assert.equal(log.length, 1);
    assert.equal(log[0].trigger, 'test');
    assert.equal(log[0].delivery_id, result.delivery_id);
    const one = `/v1/webhook-subscriptions/${sub.id}/events?delivery_id=`;
    assert.equal(dataOf(await t.call('GET', `${one}${result.delivery_id}`, { token: admin, org: orgId })).length, 1);
    // Hex digits and hyphens that are not a uuid passed a looser check and reached the ::uuid cast (500).
    for (const bad of ['-'.repeat(36), 'a'.repeat(36)]) {
      const err = assertError(await t.call('GET', `${one}${bad}`, { token: admin, org: orgId }), 422, 'validation_failed');
      assert.equal(err.fields.delivery_id, 'must be a UUID');
    }
    assertError(
      await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/deliveries/${result.delivery_id}/resend`, { token: admin, org: orgId }),
      409,
      'delivery_not_resendable',
    );
  });

  it('a failing, redirecting or silent endpoint: success false with the status, no redirect followed, the time-out honoured', async () => {
    const sub = dataOf(await create({ url: rx.url('/test-bad'), event_types: ['*'] }), 201);
    rx.setSecrets('/test-bad', [sub.signing_secret]);
    const previous = rx.respond;
    try {
      rx.respond = () => ({ status: 500, body: 'x'.repeat(5000) });
      const failed = dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
      assert.equal(failed.success, false);
      assert.equal(failed.status_code, 500);
      assert.ok(failed.response_body.length <= 1024, 'truncated');
      rx.respond = () => ({ status: 302, body: 'moved' });
      const redirected = dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
      assert.equal(redirected.success, false);
      assert.equal(redirected.status_code, 302, 'a redirect is an answer, not followed');
      rx.respond = () => ({ status: 200, delayMs: 2000 });
      const silent = dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
      assert.equal(silent.success, false);
      assert.equal(silent.status_code, null);
      assert.match(silent.error, /no response within 800 ms/);
    } finally {
      rx.respond = previous;
    }
  });

  it('rotates the secret: the new one is shown once; deliveries carry both signatures until the overlap ends', async () => {
    const sub = dataOf(await create({ url: rx.url('/rotate'), event_types: ['*'] }), 201);
    const rotated = dataOf(
      await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/rotate-secret`, {
        token: admin,
        org: orgId,
        body: { overlap_seconds: 3600 },
      }),
    );
    assert.notEqual(rotated.signing_secret, sub.signing_secret);
    assert.ok(rotated.previous_secret_expires_at);
    // A receiver that still only knows the old secret keeps verifying (previous-signature header, standard header).
    rx.setSecrets('/rotate', [sub.signing_secret]);
    dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
    const old = rx.received.filter((r) => r.path === '/rotate').at(-1)!;
    assert.equal(old.standardValid, true);
    assert.equal(await verifyHex(sub.signing_secret, old.rawBody, old.headers['x-webhook-signature-previous']!), true);
    assert.equal(await verifyHex(rotated.signing_secret, old.rawBody, old.headers['x-webhook-signature']!), true);
    // Ending the overlap at once: only the new secret signs.
    const now = dataOf(
      await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/rotate-secret`, { token: admin, org: orgId, body: { overlap_seconds: 0 } }),
    );
    assert.equal(now.previous_secret_expires_at, null);
    rx.setSecrets('/rotate', [now.signing_secret]);
    dataOf(await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/test`, { token: admin, org: orgId }));
    const last = rx.received.filter((r) => r.path === '/rotate').at(-1)!;
    assert.ok(last.hexValid && last.standardValid);
    assert.equal(last.headers['x-webhook-signature-previous'], undefined);
    assert.equal(last.headers['webhook-signature']!.split(' ').length, 1);
    assertError(
      await t.call('POST', `/v1/webhook-subscriptions/${sub.id}/rotate-secret`, {
        token: admin,
        org: orgId,
        body: { overlap_seconds: 999_999_999 },
      }),
      400,
      'validation_error',
    );
  });

  it('the event catalog lists the types a subscription can choose', async () => {
    const types = dataOf(await t.call('GET', '/v1/webhook-event-types', { token: admin, org: orgId }));
    const names = types.map((x: any) => x.type);
    for (const n of [
      'organization.updated',
      'member.added',
      'member.removed',
      'domain.verified',
      'consent.granted',
      'consent.withdrawn',
      'patient.onboarded',
    ]) {
      assert.ok(names.includes(n), n);
    }
  });
});
