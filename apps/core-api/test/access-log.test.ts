import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Reads of patient data are audited (spec 6.2, "every authenticated action"): who read which patient's
 * record, profile, forms, files and consents, stored before the read is answered (migration 0064,
 * platform/access-log.ts); visible to the clinic (GET /v1/audit-logs/access), to the patient (GET
 * /v1/me/access-log) and in the patient's GDPR export. A patient reading its own data is not listed.
 */
describe('access log of patient data', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: { token: string; userId: string };
  let support: { token: string; userId: string };
  let otherAdmin: string;
  let patient: { token: string; userId: string };
  let patientId: string;
  let second: { token: string; userId: string };
  let secondId: string;

  const call = (method: string, url: string, token: string, body?: unknown, at = org) => t.call(method, url, { token, org: at, body });
  const entries = async (patient: string) =>
    (
      await t.db.query<{ action: string; actor_user_id: string; patient_ids: string[]; target_id: string | null; request_id: string }>(
        'select action, actor_user_id, patient_ids, target_id, request_id from patient_access_log where $1 = any(patient_ids) order by occurred_at, id',
        [patient],
      )
    ).rows;
  const idOf = async (userId: string) =>
    (await t.db.query<{ id: string }>('select id from patients where user_id = $1 and organization_id = $2', [userId, org])).rows[0]!.id;

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    admin = await t.addMember(org, uniqueEmail('acc-admin'), 'admin');
    support = await t.addMember(org, uniqueEmail('acc-support'), 'customer_support');
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('acc-other'), 'admin')).token;
    patient = await t.addPatient(org, uniqueEmail('acc-patient'));
    second = await t.addPatient(org, uniqueEmail('acc-second'));
    patientId = await idOf(patient.userId);
    secondId = await idOf(second.userId);
  });
  after(() => t?.close());

  it('a staff read of a record, a profile and a list is stored before the answer leaves, with the reader and the request id', async () => {
    const res = await call('GET', `/v1/patients/${patientId}`, support.token);
    assert.equal(res.statusCode, 200, res.body);
    // No waiting: the entry is in the table as soon as the answer is.
    const [read] = await entries(patientId);
    assert.deepEqual([read!.action, read!.actor_user_id, read!.patient_ids], ['patient.read', support.userId, [patientId]]);
    assert.equal(read!.request_id, res.headers['x-request-id']);

    dataOf(await call('GET', `/v1/patients/${patientId}/profile`, support.token));
    const list = dataOf(await call('GET', '/v1/patients?limit=500', support.token));
    assert.ok(list.length >= 2);
    const listed = (await entries(secondId)).find((e) => e.action === 'patient.listed');
    assert.ok(listed, 'the list names every patient of its page');
    assert.deepEqual([...listed.patient_ids].sort(), list.map((p: { id: string }) => p.id).sort());
    assert.deepEqual(
      (await entries(patientId)).map((e) => e.action),
      ['patient.read', 'patient_profile.read', 'patient.listed'],
    );
  });

  it('a patient reading its own record is not listed; a refused read (403, 404) stores nothing', async () => {
    const before = (await entries(secondId)).length;
    dataOf(await call('GET', `/v1/patients/${secondId}`, second.token));
    dataOf(await call('GET', `/v1/patients/${secondId}/profile`, second.token));
    assertError(await call('GET', `/v1/patients/${patientId}`, second.token), 404, 'not_found');
    assertError(await call('GET', '/v1/patients', second.token), 403, 'forbidden');
    assert.equal((await entries(secondId)).length, before);
  });

  it('forms, their files and a staff view of consents are recorded with the record read', async () => {
    const field = dataOf(
      await call('POST', '/v1/custom-fields', admin.token, { entity_type: 'form', key: 'pain', label: 'Pain', field_type: 'number' }),
      201,
    );
    const template = dataOf(
      await call('POST', '/v1/form-templates', admin.token, { name: 'Intake', fields: [{ custom_field_id: field.id }] }),
      201,
    );
    const form = dataOf(await call('POST', '/v1/forms', admin.token, { form_template_id: template.id, patient_id: patientId }), 201);
    dataOf(await call('GET', `/v1/forms/${form.id}`, admin.token));
    dataOf(await call('GET', '/v1/forms', admin.token));
    dataOf(await call('GET', `/v1/forms/${form.id}/files`, admin.token));
    dataOf(await call('GET', `/v1/organizations/${org}/patients/${patientId}/consents`, admin.token));
    const got = (await entries(patientId)).filter((e) => e.action !== 'patient.listed' && !e.action.startsWith('patient'));
    assert.deepEqual(
      got.map((e) => [e.action, e.target_id]),
      [
        ['form.read', form.id],
        ['form.listed', null],
        ['form_file.listed', form.id],
        ['consents.read', null],
      ],
    );
  });

  it('the clinic lists its reads with filters (audit_log.view_org); another clinic sees none; the patient sees who read its records', async () => {
    const page = dataOf(await call('GET', `/v1/audit-logs/access?patient_id=${patientId}&action=patient.read`, admin.token));
    assert.equal(page.length, 1);
    assert.equal(page[0].actor_user_id, support.userId);
    assert.ok(page[0].ip, 'the clinic sees the address');
    const bySupport = dataOf(await call('GET', `/v1/audit-logs/access?actor_user_id=${support.userId}&limit=500`, admin.token));
    assert.ok(bySupport.every((e: { actor_user_id: string }) => e.actor_user_id === support.userId));
    assertError(await call('GET', '/v1/audit-logs/access', support.token), 403, 'forbidden');
    assertError(await call('GET', '/v1/audit-logs/access?patient_id=nope', admin.token), 422, 'validation_failed');
    assert.deepEqual(dataOf(await call('GET', '/v1/audit-logs/access', otherAdmin, undefined, otherOrg)), []);

    const mine = dataOf(await t.call('GET', '/v1/me/access-log', { token: patient.token }));
    assert.ok(mine.length >= 5);
    assert.ok(mine.every((e: { patient_ids: string[] }) => e.patient_ids.includes(patientId)));
    assert.ok(
      mine.every((e: object) => !('ip' in e) && !('request_id' in e)),
      "the readers' addresses stay with the clinic",
    );
    const theirs = dataOf(await t.call('GET', '/v1/me/access-log', { token: second.token }));
    assert.ok(theirs.every((e: { patient_ids: string[] }) => e.patient_ids.includes(secondId)));
  });

  it("the patient's GDPR export holds the reads of its records", async () => {
    const queued = dataOf(await t.call('POST', '/v1/gdpr/export', { token: patient.token, body: {} }), 202);
    let job = queued;
    // No deadline: the job runner's pace depends on the machine.
    while (job.status !== 'done' && job.status !== 'failed') {
      await new Promise((r) => setTimeout(r, 20));
      job = dataOf(await t.call('GET', `/v1/gdpr/exports/${queued.id}`, { token: patient.token }));
    }
    assert.equal(job.status, 'done', JSON.stringify(job));
    const archive = JSON.parse((await t.call('GET', job.download_url, { token: patient.token })).body);
    const reads = archive.access_log as { action: string; actor_user_id: string }[];
    assert.ok(reads.some((e) => e.action === 'patient.read' && e.actor_user_id === support.userId));
    assert.ok(reads.every((e) => !('ip' in e)));
  });

  it('the log is append-only at the database level', async () => {
    await assert.rejects(t.db.query('update patient_access_log set action = $1', ['x']), /append-only/);
    await assert.rejects(t.db.query('delete from patient_access_log'), /append-only/);
  });

  it("a caller's X-Request-ID is kept up to 100 characters, the stored request id's bound; a longer one is replaced", async () => {
    const kept = 'r'.repeat(100);
    const res = await t.call('GET', `/v1/patients/${patientId}`, { token: support.token, org, headers: { 'x-request-id': kept } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['x-request-id'], kept);
    // 101-128 characters were accepted and then refused by the column's check: a 500 for this read and for
    // every read stored in the same batch.
    for (const long of ['r'.repeat(101), 'r'.repeat(128)]) {
      const r = await t.call('GET', `/v1/patients/${patientId}`, { token: support.token, org, headers: { 'x-request-id': long } });
      assert.equal(r.statusCode, 200, r.body);
      assert.notEqual(r.headers['x-request-id'], long);
      assert.ok((await entries(patientId)).some((e) => e.request_id === r.headers['x-request-id']));
    }
  });
});
