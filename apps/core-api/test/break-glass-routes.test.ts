import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Break-glass on the ordinary routes (spec 4.7): a superadmin who is not staff of the organization reads
// its identifiable patient data only under an open session, and each read is recorded against it.

describe('break-glass on the ordinary patient-data routes', () => {
  let t: TestApp;
  let org: { id: string };
  let su: string;
  let suId: string;
  let admin: string;
  let patientId: string;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg();
    su = await t.superadmin(uniqueEmail('bg-routes-su'));
    suId = dataOf(await t.call('GET', '/v1/me', { token: su })).id;
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    await t.addPatient(org.id, uniqueEmail('patient'));
    patientId = (await t.db.query<{ id: string }>('select id from patients where organization_id = $1', [org.id])).rows[0]!.id;
  });
  after(() => t.close());

  const openSession = async (scope: string) =>
    dataOf(
      await t.call('POST', '/v1/break-glass/sessions', {
        token: su,
        body: { organization_id: org.id, scope, reason_category: 'support_ticket', reason_text: 'Clinic asked for help with a record' },
      }),
      201,
    );

  it('without a session: 403 break_glass_required with the elevation form naming the scope the route needs', async () => {
    const cases: Array<[string, string]> = [
      ['/v1/patients', 'patient_list'],
      [`/v1/patients/${patientId}`, 'patient_detail'],
      [`/v1/patients/${patientId}/profile`, 'patient_detail'],
      ['/v1/appointments', 'patient_list'],
      ['/v1/forms', 'patient_list'],
      ['/v1/messages', 'patient_list'],
      ['/v1/treatment-plans/enrollments', 'patient_list'],
      [`/v1/organizations/${org.id}/patients/${patientId}/consents`, 'patient_detail'],
    ];
    for (const [url, scope] of cases) {
      const err = assertError(await t.call('GET', url, { token: su, org: org.id }), 403, 'break_glass_required');
      assert.equal(err.elevation.scope, scope, url);
      assert.equal(err.elevation.organization_id, org.id, url);
      assert.equal(err.elevation.path, '/v1/break-glass/sessions');
    }
    // Writes on a patient's data too.
    assertError(
      await t.call('PUT', `/v1/patients/${patientId}`, { token: su, org: org.id, body: { first_name: 'Changed' } }),
      403,
      'break_glass_required',
    );
    // Routes without patient data, and the clinic's own staff, are not concerned.
    dataOf(await t.call('GET', `/v1/organizations/${org.id}`, { token: su }));
    dataOf(await t.call('GET', `/v1/organizations/${org.id}/locations`, { token: su }));
    assert.equal(dataOf(await t.call('GET', '/v1/patients', { token: admin, org: org.id })).length, 1);
  });

  it('under a session of the scope: served, and each read is recorded against the session', async () => {
    const s = await openSession('patient_list');
    const list = dataOf(await t.call('GET', '/v1/patients', { token: su, org: org.id }));
    assert.equal(list.length, 1);
    // A list session does not open one record.
    assertError(await t.call('GET', `/v1/patients/${patientId}`, { token: su, org: org.id }), 403, 'break_glass_required');
    const d = await openSession('patient_detail');
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${patientId}`, { token: su, org: org.id })).id, patientId);
    // Appointments do not log a patient read of their own; the audit entry records the request anyway.
    dataOf(await t.call('GET', '/v1/appointments', { token: su, org: org.id }));

    const audit = await t.db.query<{ break_glass_id: string; action_context: string; data: any; organization_id: string }>(
      `select break_glass_id, action_context, data, organization_id from audit_logs
       where action = 'break_glass.read' and actor_user_id = $1 order by chain_seq`,
      [suId],
    );
    assert.deepEqual(
      audit.rows.map((r) => [r.break_glass_id, r.data.route]),
      [
        [s.id, '/v1/patients'],
        [d.id, '/v1/patients/:id'],
        [s.id, '/v1/appointments'],
      ],
    );
    for (const r of audit.rows) {
      assert.equal(r.action_context, 'break_glass');
      assert.equal(r.organization_id, org.id);
    }
    assert.deepEqual(audit.rows[1]!.data.patient_ids, [patientId]);
    const access = await t.db.query<{ action: string; action_context: string; context_id: string }>(
      `select action, action_context, context_id from patient_access_log where actor_user_id = $1 order by occurred_at, action`,
      [suId],
    );
    assert.deepEqual(
      access.rows.map((r) => [r.action, r.action_context, r.context_id]),
      [
        ['patient.listed', 'break_glass', s.id],
        ['patient.read', 'break_glass', d.id],
      ],
    );
  });

  it('an expired session answers 410 break_glass_expired', async () => {
    const other = await t.createOrg();
    await t.addPatient(other.id, uniqueEmail('other-patient'));
    await t.db.query(
      `insert into break_glass_sessions (organization_id, superadmin_user_id, scope, reason_category, reason_text, created_at, expires_at)
       values ($1, $2, 'patient_list', 'support_ticket', 'expired session for the test', now() - interval '2 hours', now() - interval '1 hour')`,
      [other.id, suId],
    );
    const err = assertError(await t.call('GET', '/v1/patients', { token: su, org: other.id }), 410, 'break_glass_expired');
    assert.equal(err.elevation.scope, 'patient_list');
  });
});
