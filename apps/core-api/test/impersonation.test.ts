import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Patient impersonation (spec 4.5 POST /v1/patients/{id}/impersonate, 2.7 patients.impersonate): a reason
 * is required; the result is a short-lived token that acts as the patient in the portal; every request
 * under it is recorded with action context impersonation and shows in the patient's own view; it never
 * grants or withdraws consent, signs a form or changes the account; it ends early, at expiry, or when its
 * staff member loses the code.
 */
describe('patient impersonation', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: { token: string; userId: string };
  let support: { token: string; userId: string };
  let specialist: string;
  let patient: { token: string; userId: string };
  let patientId: string;
  let otherPatientId: string;

  const call = (method: string, url: string, token: string, body?: unknown, at: string | null = org) =>
    t.call(method, url, { token, ...(at ? { org: at } : {}), body });
  const start = (token = support.token, id = patientId, body: unknown = { reason: 'Patient called: cannot find the intake form' }) =>
    call('POST', `/v1/patients/${id}/impersonate`, token, body);
  const recorded = async (sessionId: string) =>
    (
      await t.db.query<{ action: string; method: string; route: string; actor_user_id: string; patient_ids: string[] }>(
        `select action, method, route, actor_user_id, patient_ids from patient_access_log
         where context_id = $1 and action_context = 'impersonation' and action = 'impersonation.request' order by occurred_at, id`,
        [sessionId],
      )
    ).rows;

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    admin = await t.addMember(org, uniqueEmail('imp-admin'), 'admin');
    support = await t.addMember(org, uniqueEmail('imp-support'), 'customer_support');
    specialist = (await t.addMember(org, uniqueEmail('imp-spec'), 'specialist')).token;
    patient = await t.addPatient(org, uniqueEmail('imp-patient'));
    patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!.id;
    const other = await t.addPatient(otherOrg, uniqueEmail('imp-other'));
    otherPatientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [other.userId])).rows[0]!.id;
  });
  after(() => t?.close());

  it('needs patients.impersonate and a reason; the token is shown once and kept only as its hash; the start is audited', async () => {
    assertError(await start(specialist), 403, 'forbidden');
    // A superadmin is not staff: without break-glass it does not reach the patient; with it, it still may not impersonate.
    const su = await t.superadmin();
    assertError(await start(su), 403, 'break_glass_required');
    await t.breakGlass(su, org);
    assertError(await start(su), 403, 'forbidden');
    assertError(await start(support.token, patientId, {}), 400, 'validation_error');
    assertError(await start(support.token, patientId, { reason: '  ' }), 400, 'validation_error');
    assertError(await start(support.token, patientId, { reason: 'x\u0000y' }), 400, 'validation_error');
    assertError(await start(support.token, patientId, { reason: 'Long one', minutes: 61 }), 400, 'validation_error');
    assertError(await start(support.token, otherPatientId), 404, 'not_found');
    assertError(await start(support.token, MISSING_UUID), 404, 'not_found');

    const s = dataOf(await start(), 201);
    assert.match(s.token, /^imp_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual([s.patient_id, s.staff_user_id, s.ended_at], [patientId, support.userId, null]);
    const minutes = (new Date(s.expires_at).getTime() - new Date(s.started_at).getTime()) / 60_000;
    assert.equal(Math.round(minutes), 15);
    const stored = (await t.db.query<{ token_hash: string }>('select token_hash from impersonation_sessions where id = $1', [s.id]))
      .rows[0]!;
    assert.notEqual(stored.token_hash, s.token);
    assert.doesNotMatch(JSON.stringify(await t.db.query('select * from impersonation_sessions')), new RegExp(s.token));
    const audit = await t.db.query<{ actor_user_id: string; data: { reason: string; impersonation_id: string } }>(
      `select actor_user_id, data from audit_logs where action = 'patient.impersonation_started' and entity_id = $1`,
      [patientId],
    );
    assert.equal(audit.rows[0]!.actor_user_id, support.userId);
    assert.equal(audit.rows[0]!.data.impersonation_id, s.id);
    assert.match(audit.rows[0]!.data.reason, /intake form/);
  });

  it('acts as the patient at that organization only, with no staff rights', async () => {
    const s = dataOf(await start(), 201);
    const me = dataOf(await call('GET', '/v1/me', s.token, undefined, null));
    assert.deepEqual(
      [me.id, me.is_patient_at_current_org, me.is_staff_at_current_org, me.current_permissions, me.current_organization_id],
      [patient.userId, true, false, [], org],
    );
    assert.equal(dataOf(await call('GET', `/v1/patients/${patientId}`, s.token)).id, patientId);
    assertError(await call('GET', '/v1/patients', s.token), 403, 'forbidden');
    assertError(await call('GET', '/v1/me', s.token, undefined, otherOrg), 403, 'forbidden');
  });

  it('edits the record and profile saying so; never consents, signs, erases or changes the account (403 impersonation_forbidden)', async () => {
    const s = dataOf(await start(), 201);
    const profile = dataOf(await call('PUT', `/v1/patients/${patientId}/profile`, s.token, { first_name: 'Ana', city: 'Cluj' }));
    assert.equal(profile.city, 'Cluj');
    const change = await t.db.query<{ actor_user_id: string; action_context: string; data: Record<string, unknown> }>(
      `select actor_user_id, action_context, data from audit_logs where action = 'patient.profile_updated' and entity_id = $1`,
      [patientId],
    );
    assert.equal(change.rows[0]!.action_context, 'impersonation');
    assert.equal(change.rows[0]!.data.impersonation_id, s.id);
    assert.equal(change.rows[0]!.data.impersonated_by, support.userId);

    const refused: [string, string, unknown][] = [
      ['POST', '/v1/me/consents', { grants: [] }],
      ['POST', `/v1/portal/onboard`, { organization_id: org, grants: [] }],
      ['POST', '/v1/gdpr/erase', {}],
      ['POST', '/v1/gdpr/export', {}],
      ['PATCH', '/v1/me', { preferred_language: 'ro' }],
      ['DELETE', '/v1/me', undefined],
      ['POST', `/v1/forms/${MISSING_UUID}/sign`, undefined],
      ['POST', `/v1/patients/${patientId}/impersonate`, { reason: 'again and again' }],
    ];
    for (const [method, url, body] of refused) assertError(await call(method, url, s.token, body), 403, 'impersonation_forbidden');
    assert.equal((await t.db.query('select 1 from consent_ledger where patient_profile_id = $1', [patient.userId])).rows.length, 0);
  });

  it('every request under the token is recorded, refused ones too, and the patient sees them', async () => {
    const s = dataOf(await start(), 201);
    dataOf(await call('GET', `/v1/patients/${patientId}`, s.token));
    assertError(await call('GET', '/v1/patients', s.token), 403, 'forbidden');
    assertError(await call('POST', '/v1/me/consents', s.token, { grants: [] }), 403, 'impersonation_forbidden');
    const rows = await recorded(s.id);
    assert.deepEqual(
      rows.map((r) => [r.method, r.route]),
      [
        ['GET', '/v1/patients/:id'],
        ['GET', '/v1/patients'],
        ['POST', '/v1/me/consents'],
      ],
    );
    assert.ok(rows.every((r) => r.actor_user_id === support.userId && r.patient_ids[0] === patientId));
    const mine = dataOf(await call('GET', '/v1/me/access-log?limit=500', patient.token, undefined, null));
    assert.ok(
      mine.some((e: { context_id: string; action_context: string }) => e.context_id === s.id && e.action_context === 'impersonation'),
    );
    const clinic = dataOf(await call('GET', `/v1/audit-logs/access?action_context=impersonation&limit=500`, admin.token));
    assert.ok(clinic.filter((e: { context_id: string }) => e.context_id === s.id).length >= 3);
  });

  it('ends early (its staff member only), at expiry, or when its staff member loses the code: then 401', async () => {
    const early = dataOf(await start(), 201);
    assertError(await call('DELETE', `/v1/impersonation-sessions/${early.id}`, admin.token), 403, 'forbidden');
    assert.equal((await call('DELETE', `/v1/impersonation-sessions/${early.id}`, support.token)).statusCode, 204);
    assertError(await call('GET', '/v1/me', early.token, undefined, null), 401, 'unauthorized');
    assertError(await call('DELETE', `/v1/impersonation-sessions/${early.id}`, support.token), 409, 'session_ended');

    const expired = dataOf(await start(), 201);
    await t.db.query(
      `update impersonation_sessions set started_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' where id = $1`,
      [expired.id],
    );
    assertError(await call('GET', '/v1/me', expired.token, undefined, null), 401, 'unauthorized');

    const lost = dataOf(await start(), 201);
    dataOf(await call('GET', '/v1/me', lost.token, undefined, null));
    await t.db.query(
      `delete from role_permissions where permission_code = 'patients.impersonate'
       and role_id = (select role_id from memberships where user_id = $1 and organization_id = $2)`,
      [support.userId, org],
    );
    assertError(await call('GET', '/v1/me', lost.token, undefined, null), 401, 'unauthorized');
    assertError(await call('GET', '/v1/me', 'imp_not-a-real-token', undefined, null), 401, 'unauthorized');
  });
});
