import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Break-glass (spec 3.4, 4.7, 6.2, 7, 8) and the console routes behind it.

describe('break-glass sessions and the console', () => {
  let t: TestApp;
  let org: { id: string };
  let su: string;
  let su2: string;
  let admin: string;
  let patientId: string;
  const body = (extra: Record<string, unknown> = {}) => ({
    organization_id: org.id,
    scope: 'patient_list',
    reason_category: 'support_ticket',
    reason_text: 'Clinic reported a missing patient record',
    reason_ref: 'TICKET-42',
    ...extra,
  });

  before(async () => {
    t = await startTestApp({ env: { BREAK_GLASS_RATE_LIMIT: '8' } });
    org = await t.createOrg();
    su = await t.superadmin();
    su2 = await t.superadmin();
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    await t.addPatient(org.id, uniqueEmail('patient'));
    patientId = (await t.db.query<{ id: string }>('select id from patients where organization_id = $1', [org.id])).rows[0]!.id;
  });
  after(() => t.close());

  const open = (b: unknown, token = su) => t.call('POST', '/v1/break-glass/sessions', { token, body: b });
  const consoleUrl = (path: string) => `/v1/console/organizations/${org.id}${path}`;

  it('without a session the console answers 403 break_glass_required with the elevation form', async () => {
    const err = assertError(await t.call('GET', consoleUrl('/patients'), { token: su }), 403, 'break_glass_required');
    assert.equal(err.elevation.path, '/v1/break-glass/sessions');
    assert.equal(err.elevation.scope, 'patient_list');
    assert.equal(err.elevation.organization_id, org.id);
    assert.ok(err.elevation.reason_categories.includes('dsar_routing'));
    assert.equal(err.elevation.fields.expires_in_minutes.maximum, 240);
  });

  it('only superadmins open sessions or use the console', async () => {
    assertError(await open(body(), admin), 403, 'forbidden');
    assertError(await t.call('GET', consoleUrl('/patients'), { token: admin }), 403, 'forbidden');
  });

  it('validates the body exactly and writes nothing on bad input', async () => {
    for (const bad of [
      body({ scope: 'everything' }),
      body({ reason_category: 'curiosity' }),
      body({ expires_in_minutes: 241 }),
      body({ expires_in_minutes: 0 }),
      body({ extra: 1 }),
      { scope: 'patient_list' },
      body({ reason_text: 'short' }),
    ]) {
      assertError(await open(bad), 400, 'validation_error');
    }
    assertError(await open(body({ organization_id: MISSING_UUID })), 404, 'organization_not_found');
    const n = await t.db.query('select 1 from break_glass_sessions');
    assert.equal(n.rows.length, 0);
  });

  it('opens for one organization and scope (default 1 hour); actions under it are audited with break_glass_id', async () => {
    const s = dataOf(await open(body()), 201);
    assert.equal(s.status, 'open');
    const minutes = (new Date(s.expires_at).getTime() - new Date(s.created_at).getTime()) / 60000;
    assert.ok(Math.abs(minutes - 60) < 0.01, String(minutes));
    const list = await t.call('GET', consoleUrl('/patients'), { token: su });
    assert.equal(dataOf(list).length, 1);
    // Another scope or another superadmin is not covered.
    assertError(await t.call('GET', consoleUrl(`/patients/${patientId}`), { token: su }), 403, 'break_glass_required');
    assertError(await t.call('GET', consoleUrl('/patients'), { token: su2 }), 403, 'break_glass_required');
    const audit = await t.db.query<{ action: string; action_context: string; break_glass_id: string; organization_id: string }>(
      `select action, action_context, break_glass_id, organization_id from audit_logs where break_glass_id = $1 order by chain_seq`,
      [s.id],
    );
    assert.deepEqual(
      audit.rows.map((r) => r.action),
      ['break_glass.opened', 'console.patients_listed'],
    );
    for (const r of audit.rows) {
      assert.equal(r.action_context, 'break_glass');
      assert.equal(r.organization_id, org.id);
    }
  });

  it('every scope has its console route', async () => {
    const email = (
      await t.db.query<{ email: string }>('select u.email from patients p join users u on u.id = p.user_id where p.id = $1', [patientId])
    ).rows[0]!.email;
    const routes: Array<[string, string]> = [
      ['patient_detail', `/patients/${patientId}`],
      ['audit_full', '/audit-logs'],
      ['org_management', '/members'],
      ['cross_org_lookup', `/lookup?email=${encodeURIComponent(email)}`],
    ];
    for (const [scope, path] of routes) {
      assertError(await t.call('GET', consoleUrl(path), { token: su }), 403, 'break_glass_required');
      dataOf(await open(body({ scope, expires_in_minutes: 240 })), 201);
      dataOf(await t.call('GET', consoleUrl(path), { token: su }));
    }
    const lookup = dataOf(await t.call('GET', consoleUrl(`/lookup?email=${encodeURIComponent(email)}`), { token: su }));
    assert.equal(lookup.affiliations[0].relation, 'patient');
    assertError(await t.call('GET', consoleUrl('/lookup?email=nobody@example.test'), { token: su }), 404, 'not_found');
  });

  it('an expired session answers 410 break_glass_expired', async () => {
    const other = await t.createOrg();
    const superId = (await t.call('GET', '/v1/me', { token: su })).json().data.id;
    await t.db.query(
      `insert into break_glass_sessions (organization_id, superadmin_user_id, scope, reason_category, reason_text, created_at, expires_at)
       values ($1, $2, 'patient_list', 'support_ticket', 'expired session for the test', now() - interval '2 hours', now() - interval '1 hour')`,
      [other.id, superId],
    );
    const err = assertError(
      await t.call('GET', `/v1/console/organizations/${other.id}/patients`, { token: su }),
      410,
      'break_glass_expired',
    );
    assert.equal(err.elevation.scope, 'patient_list');
    assertError(await t.call('GET', `/v1/console/organizations/${MISSING_UUID}/patients`, { token: su }), 404, 'organization_not_found');
  });

  it("the organization's admins see that break-glass access happened, through the audit-log API", async () => {
    const res = await t.call('GET', '/v1/audit-logs?action_context=break_glass&limit=500', { token: admin, org: org.id });
    const entries = dataOf(res);
    assert.ok(entries.some((e: { action: string }) => e.action === 'break_glass.opened'));
    assert.ok(entries.some((e: { action: string }) => e.action === 'console.patients_listed'));
    assert.ok(entries.every((e: { break_glass_id: string | null }) => e.break_glass_id));
  });

  it('is rate-limited per superadmin (429 with Retry-After)', async () => {
    let res: Awaited<ReturnType<typeof open>> | undefined;
    for (let i = 0; i < 10; i++) {
      res = await open(body(), su);
      if (res.statusCode === 429) break;
    }
    assertError(res!, 429, 'rate_limited');
    assert.ok(res!.headers['retry-after']);
    dataOf(await open(body(), su2), 201);
  });
});
