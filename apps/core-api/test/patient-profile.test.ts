import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * The patient profile (spec 4.5: GET, PUT /v1/patients/{id}/profile): the demographics
 * a clinic records. Staff with patients.update_org or the patient itself replace it whole; the clinic's
 * record number is staff only; staff notes are not part of it; erasure clears it.
 */
describe('patient profile', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: string;
  let support: string;
  let otherAdmin: string;
  let person: { token: string; userId: string };
  let patientId: string;

  const call = (method: string, url: string, token: string, body?: unknown, at = org) => t.call(method, url, { token, org: at, body });
  const profileUrl = (id = patientId) => `/v1/patients/${id}/profile`;
  const full = {
    first_name: ' Ana ',
    last_name: 'Popescu',
    date_of_birth: '1990-04-12',
    phone: '+40 721 000 000',
    sex: 'female',
    address_line1: 'Strada Lungă 5',
    city: 'Brașov',
    postal_code: '500001',
    country: 'ro',
    preferred_language: 'ro-ro',
    external_record_number: 'MRN-0001',
  };

  async function newPatient(email = uniqueEmail('profile-patient')) {
    return dataOf(await call('POST', '/v1/patients', admin, { email, first_name: 'New' }), 201).id as string;
  }

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg({ name: 'Profile clinic' })).id;
    otherOrg = (await t.createOrg({ name: 'Profile other' })).id;
    for (const o of [org, otherOrg]) await t.publishPrivacyNotice(o);
    admin = (await t.addMember(org, uniqueEmail('profile-admin'), 'admin')).token;
    support = (await t.addMember(org, uniqueEmail('profile-support'), 'customer_support')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('profile-other'), 'admin')).token;
    const email = uniqueEmail('profile-person');
    person = await t.addPatient(org, email);
    await t.acceptOrgPurposes(org, person.userId);
    patientId = (
      await t.db.query<{ id: string }>('select id from patients where user_id = $1 and organization_id = $2', [person.userId, org])
    ).rows[0]!.id;
  });
  after(() => t?.close());

  it('staff replace the whole profile: trimmed, country upper case, language canonical; staff notes stay; a change is audited by field name only', async () => {
    dataOf(await call('PUT', `/v1/patients/${patientId}`, admin, { first_name: 'Ana', notes: 'allergic to latex' }));
    const p = dataOf(await call('PUT', profileUrl(), support, full));
    assert.equal(p.patient_id, patientId);
    assert.equal(p.first_name, 'Ana');
    assert.equal(p.country, 'RO');
    assert.equal(p.preferred_language, 'ro-RO');
    assert.equal(p.city, 'Brașov');
    assert.equal(p.external_record_number, 'MRN-0001');
    assert.equal(p.address_line2, null);
    assert.deepEqual(dataOf(await call('GET', profileUrl(), admin)), p);
    assert.equal(dataOf(await call('GET', `/v1/patients/${patientId}`, admin)).notes, 'allergic to latex');

    // PUT semantics: what is left out is cleared.
    const cleared = dataOf(await call('PUT', profileUrl(), admin, { ...full, city: undefined, sex: null }));
    assert.equal(cleared.city, null);
    assert.equal(cleared.sex, null);

    const audit = await t.db.query<{ data: any }>(
      `select data from audit_logs where entity_id = $1 and action = 'patient.profile_updated' order by created_at, id`,
      [patientId],
    );
    assert.equal(audit.rows.length, 2);
    assert.deepEqual(audit.rows[1]!.data, { fields: ['sex', 'city'], by_patient: false });
    assert.ok(!JSON.stringify(audit.rows).includes('Brașov'), 'no values in the trail');
  });

  it('bad values are 400 validation_error naming the field, and change nothing', async () => {
    const before = dataOf(await call('GET', profileUrl(), admin));
    for (const [field, value] of [
      ['country', 'XX'],
      ['preferred_language', 'not a language!'],
      ['sex', 'x'],
      ['date_of_birth', '2999-01-01'],
    ] as const) {
      const res = await call('PUT', profileUrl(), admin, { ...full, [field]: value });
      assertError(res, 400, 'validation_error');
      assert.ok(res.json().error.fields?.[field] ?? res.json().error.fields, res.body);
    }
    assertError(await call('PUT', profileUrl(), admin, { ...full, notes: 'not here' }), 400, 'validation_error');
    assert.deepEqual(dataOf(await call('GET', profileUrl(), admin)), before);
  });

  it('the record number is unique among the live records of an organization (409), and free in another', async () => {
    dataOf(await call('PUT', profileUrl(), admin, full));
    const other = await newPatient();
    assertError(await call('PUT', profileUrl(other), admin, { external_record_number: 'MRN-0001' }), 409, 'external_record_number_taken');
    dataOf(await call('PUT', profileUrl(other), admin, { external_record_number: 'MRN-0002' }));
  });

  it('the patient reads and edits its own profile without the clinic record number, which it cannot change', async () => {
    dataOf(await call('PUT', profileUrl(), admin, full));
    const own = dataOf(await call('GET', profileUrl(), person.token));
    assert.equal(own.external_record_number, undefined);
    assert.equal(own.city, 'Brașov');
    const edited = dataOf(await call('PUT', profileUrl(), person.token, { ...full, city: 'Cluj-Napoca', external_record_number: 'MINE' }));
    assert.equal(edited.city, 'Cluj-Napoca');
    assert.equal(edited.external_record_number, undefined);
    assert.equal(dataOf(await call('GET', profileUrl(), admin)).external_record_number, 'MRN-0001');
    // Another patient's profile does not exist for it.
    const other = await newPatient();
    assertError(await call('GET', profileUrl(other), person.token), 404, 'not_found');
    assertError(await call('PUT', profileUrl(other), person.token, full), 404, 'not_found');
  });

  it('another organization sees no such patient', async () => {
    assertError(await call('GET', profileUrl(), otherAdmin, undefined, otherOrg), 404, 'not_found');
    assertError(await call('PUT', profileUrl(), otherAdmin, full, otherOrg), 404, 'not_found');
    assertError(await call('GET', profileUrl(), otherAdmin), 403, 'forbidden');
  });

  it('erasure clears the demographics and, without signed forms, the record number', async () => {
    const email = uniqueEmail('profile-erased');
    const erased = await t.addPatient(org, email);
    await t.acceptOrgPurposes(org, erased.userId);
    const id = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [erased.userId])).rows[0]!.id;
    dataOf(await call('PUT', profileUrl(id), admin, { ...full, external_record_number: 'MRN-ERASE' }));
    dataOf(await call('POST', '/v1/gdpr/erase', admin, { patient_id: id }));
    const { rows } = await t.db.query(
      `select sex, address_line1, city, postal_code, country, preferred_language, external_record_number from patients where id = $1`,
      [id],
    );
    assert.deepEqual(rows[0], {
      sex: null,
      address_line1: null,
      city: null,
      postal_code: null,
      country: null,
      preferred_language: null,
      external_record_number: null,
    });
  });
});
