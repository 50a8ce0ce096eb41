import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Patients and specialists as far as forms need them (spec 4.5, 5.8).

describe('patients and specialists', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: string;
  let otherAdmin: string;
  let specialist: { token: string; userId: string };
  let support: string;
  let patient: { token: string; userId: string };
  let patientId: string;
  let fields: Record<string, any>;

  const call = (method: string, url: string, token: string, body?: unknown, o = org) =>
    t.call(method, url, { token, org: o, ...(body !== undefined ? { body } : {}) });
  const cf = async (body: Record<string, unknown>) =>
    dataOf(await call('POST', '/v1/custom-fields', admin, { label: 'x', field_type: 'text', ...body }), 201);

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    for (const o of [org, otherOrg]) await t.publishPrivacyNotice(o);
    admin = (await t.addMember(org, uniqueEmail('admin'), 'admin')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('other-admin'), 'admin')).token;
    specialist = await t.addMember(org, uniqueEmail('spec'), 'specialist');
    support = (await t.addMember(org, uniqueEmail('support'), 'customer_support')).token;
    patient = await t.addPatient(org, uniqueEmail('patient'));
    await t.acceptOrgPurposes(org, patient.userId);
    patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!.id;
    fields = {
      allergies: await cf({ entity_type: 'patient', key: 'allergies', field_type: 'multi_select', options: ['pollen', 'nuts'] }),
      risk: await cf({ entity_type: 'patient', key: 'risk', field_type: 'select', options: ['low', 'high'], private: true }),
      height: await cf({ entity_type: 'patient', key: 'height', field_type: 'number' }),
      languages: await cf({ entity_type: 'specialist', key: 'languages', field_type: 'text' }),
      rate: await cf({ entity_type: 'specialist', key: 'rate', field_type: 'number', private: true }),
    };
  });
  after(() => t.close());

  describe('patients', () => {
    it('one rule for every way in: a clinic without its own privacy notice takes no patient (staff, first sign-in, onboarding)', async () => {
      const fresh = (await t.createOrg()).id;
      const freshAdmin = (await t.addMember(fresh, uniqueEmail('fresh-admin'), 'admin')).token;
      const patientsOf = async () =>
        (await t.db.query<{ n: number }>('select count(*)::int as n from patients where organization_id = $1', [fresh])).rows[0]!.n;
      // Staff creation: 409 privacy_notice_missing, nothing written.
      assertError(await call('POST', '/v1/patients', freshAdmin, { email: uniqueEmail('early') }, fresh), 409, 'privacy_notice_missing');
      // First sign-in through the portal: the user is provisioned, not linked.
      const email = uniqueEmail('early-portal');
      const first = dataOf(await t.call('GET', '/v1/me', { as: email, org: fresh }));
      assert.equal(first.is_patient_at_current_org, false);
      // Onboarding: 409 as before.
      assertError(
        await t.call('POST', '/v1/portal/onboard', {
          as: email,
          body: {
            organization_id: fresh,
            grants: [{ organization_id: fresh, purpose_code: 'org_privacy_notice', purpose_version: 1, source: 'signup_checkbox' }],
          },
        }),
        409,
        'privacy_notice_missing',
      );
      assert.equal(await patientsOf(), 0);

      // Once the clinic publishes its notice, all three ways work.
      await t.publishPrivacyNotice(fresh);
      dataOf(await call('POST', '/v1/patients', freshAdmin, { email: uniqueEmail('later') }, fresh), 201);
      const linked = dataOf(await t.call('GET', '/v1/me', { as: uniqueEmail('later-portal'), org: fresh }));
      assert.equal(linked.is_patient_at_current_org, true);
      assert.equal(await patientsOf(), 2);
    });

    it('POST creates a record for an email (the person is linked later); 409 for a second record', async () => {
      const email = uniqueEmail('new-patient');
      const p = dataOf(
        await call('POST', '/v1/patients', support, {
          email,
          first_name: ' Ana ',
          last_name: 'Pop',
          date_of_birth: '1990-05-01',
          custom_fields: { allergies: ['nuts'] },
        }),
        201,
      );
      assert.deepEqual(
        [p.email, p.first_name, p.last_name, p.date_of_birth, p.custom_fields],
        [email, 'Ana', 'Pop', '1990-05-01', { allergies: ['nuts'] }],
      );
      assertError(await call('POST', '/v1/patients', admin, { email: email.toUpperCase() }), 409, 'patient_exists');
      // The person signs in and finds the clinic.
      const me = dataOf(await t.call('GET', '/v1/me', { as: email, org }));
      assert.equal(me.is_patient_at_current_org, true);
      const ev = await t.db.query(`select type from domain_events where data->>'id' = $1`, [p.id]);
      assert.deepEqual(
        ev.rows.map((r: any) => r.type),
        ['patient.created'],
      );
      assertError(await call('POST', '/v1/patients', specialist.token, { email: uniqueEmail('x') }), 403, 'forbidden');
      assertError(await call('POST', '/v1/patients', admin, { email: 'not-an-email' }), 400, 'validation_error');
      assertError(
        await call('POST', '/v1/patients', admin, { email: uniqueEmail('x'), date_of_birth: '2999-01-01' }),
        400,
        'validation_error',
      );
    });

    it('custom field values are validated against the latest published versions, never drafts', async () => {
      const bad = assertError(
        await call('PUT', `/v1/patients/${patientId}`, admin, { custom_fields: { allergies: ['dust'], height: 'tall', nope: 1 } }),
        400,
        'validation_error',
      );
      assert.deepEqual(Object.keys(bad.fields).sort(), ['custom_fields.allergies', 'custom_fields.height', 'custom_fields.nope']);
      dataOf(await call('PUT', `/v1/patients/${patientId}`, admin, { first_name: 'Ion', custom_fields: { height: 180, risk: 'high' } }));
      // The audit entry says which fields changed, never their values (erasure cannot reach the append-only trail).
      const { rows: audited } = await t.db.query<{ data: any }>(
        `select data from audit_logs where action = 'patient.updated' and entity_id = $1 order by chain_seq desc limit 1`,
        [patientId],
      );
      assert.deepEqual(audited[0]!.data.fields.sort(), ['custom_fields', 'first_name']);
      assert.ok(!/Ion|high|180/.test(JSON.stringify(audited[0]!.data)), JSON.stringify(audited[0]!.data));
      // A draft renaming the key is not in force yet...
      await call('PATCH', `/v1/custom-fields/${fields.height.id}`, admin, { key: 'height_cm' });
      assertError(
        await call('PUT', `/v1/patients/${patientId}`, admin, { first_name: 'Ion', custom_fields: { height_cm: 181, risk: 'high' } }),
        400,
        'validation_error',
      );
      assert.equal(dataOf(await call('GET', `/v1/patients/${patientId}`, admin)).custom_fields.height, 180);
      // ... once published, the same stored value answers to the new key.
      await call('POST', `/v1/custom-fields/${fields.height.id}/publish`, admin);
      const now = dataOf(await call('GET', `/v1/patients/${patientId}`, admin));
      assert.deepEqual(now.custom_fields, { height_cm: 180, risk: 'high' });
    });

    it('patient callers: notes, private fields and the user id are stripped; ownership fields and notes are dropped silently', async () => {
      dataOf(
        await call('PUT', `/v1/patients/${patientId}`, admin, {
          first_name: 'Ion',
          notes: 'staff note',
          custom_fields: { risk: 'high', allergies: ['pollen'] },
        }),
      );
      const own = dataOf(await call('GET', `/v1/patients/${patientId}`, patient.token));
      assert.ok(!('notes' in own) && !('user_id' in own));
      assert.deepEqual(own.custom_fields, { allergies: ['pollen'] });
      // A private key is unknown to a patient.
      assertError(
        await call('PUT', `/v1/patients/${patientId}`, patient.token, { custom_fields: { risk: 'low' } }),
        400,
        'validation_error',
      );
      const put = dataOf(
        await call('PUT', `/v1/patients/${patientId}`, patient.token, {
          first_name: 'Ioan',
          phone: '+40 721 000 000',
          notes: 'I am fine',
          user_id: MISSING_UUID,
          organization_id: otherOrg,
          id: MISSING_UUID,
          custom_fields: { allergies: [] },
        }),
      );
      assert.equal(put.first_name, 'Ioan');
      assert.equal(put.id, patientId);
      const { rows } = await t.db.query<any>('select user_id, organization_id, notes, custom_field_values from patients where id = $1', [
        patientId,
      ]);
      assert.deepEqual([rows[0].user_id, rows[0].organization_id, rows[0].notes], [patient.userId, org, 'staff note']);
      // The private value was kept.
      assert.equal(rows[0].custom_field_values[fields.risk.id], 'high');
      // Staff may not move the record.
      assertError(await call('PUT', `/v1/patients/${patientId}`, admin, { user_id: MISSING_UUID }), 400, 'validation_error');
    });

    it('crafted SQL as the patient (app_rls) cannot change staff notes or delete its record', async () => {
      const scope = { role: 'app_rls' as const, principalId: patient.userId, orgId: org, permissions: [] };
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query(`update patients set notes = 'x' where id = '${patientId}'`)),
        /update_org|permission denied/,
      );
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query(`update patients set deleted_at = now() where id = '${patientId}'`)),
        /patients.delete|permission denied/,
      );
      await assert.rejects(
        t.db.withScope(scope, (tx) => tx.query(`update patients set profile_shared = true where id = '${patientId}'`)),
        /permission denied/,
      );
      // Its own editable columns it may change.
      await t.db.withScope(scope, (tx) => tx.query(`update patients set phone = '123' where id = '${patientId}'`));
    });

    it('list conventions, read gates and isolation; delete is soft', async () => {
      const list = await call('GET', '/v1/patients?sort=last_name&limit=1', specialist.token);
      assert.equal(list.statusCode, 200, list.body);
      assert.equal(list.json().pagination.limit, 1);
      assert.ok(list.json().pagination.total >= 2);
      assertError(await call('GET', '/v1/patients?sort=email', admin), 422, 'validation_failed');
      assertError(await call('GET', '/v1/patients', patient.token), 403, 'forbidden');
      assert.ok(dataOf(await call('GET', '/v1/patients?q=ioan', support)).some((p: any) => p.id === patientId));
      assertError(await call('GET', `/v1/patients/${patientId}`, otherAdmin, undefined, otherOrg), 404, 'not_found');
      assertError(await call('PUT', `/v1/patients/${patientId}`, otherAdmin, {}, otherOrg), 404, 'not_found');
      const other = await t.addPatient(org, uniqueEmail('p2'));
      await t.acceptOrgPurposes(org, other.userId);
      assertError(await call('GET', `/v1/patients/${patientId}`, other.token), 404, 'not_found');
      const victim = dataOf(await call('POST', '/v1/patients', admin, { email: uniqueEmail('gone') }), 201);
      assertError(await call('DELETE', `/v1/patients/${victim.id}`, specialist.token), 403, 'forbidden');
      dataOf(await call('DELETE', `/v1/patients/${victim.id}`, admin), 204);
      assertError(await call('GET', `/v1/patients/${victim.id}`, specialist.token), 404, 'not_found');
      assertError(await call('DELETE', `/v1/patients/${victim.id}`, admin), 404, 'not_found');
    });
  });

  describe('specialists', () => {
    it('a staff member gets a profile; patients read the directory without contact details or private fields', async () => {
      const s = dataOf(
        await call('POST', '/v1/specialists', admin, {
          user_id: specialist.userId,
          display_name: 'Dr. Ana',
          title: 'Physiotherapist',
          contact_email: 'ana@clinic.test',
          contact_phone: '+40 712 345 678',
          custom_fields: { languages: 'ro, en', rate: 50 },
        }),
        201,
      );
      assert.deepEqual(s.custom_fields, { languages: 'ro, en', rate: 50 });
      assertError(
        await call('POST', '/v1/specialists', admin, { user_id: specialist.userId, display_name: 'Again' }),
        409,
        'specialist_exists',
      );
      assertError(
        await call('POST', '/v1/specialists', admin, { user_id: patient.userId, display_name: 'Not staff' }),
        400,
        'validation_error',
      );
      const seen = dataOf(await call('GET', `/v1/specialists/${s.id}`, patient.token));
      assert.ok(!('contact_email' in seen) && !('contact_phone' in seen) && !('user_id' in seen));
      assert.deepEqual(seen.custom_fields, { languages: 'ro, en' });
      const dir = dataOf(await call('GET', '/v1/specialists', patient.token));
      assert.ok(dir.every((x: any) => !('contact_email' in x)));
      assert.equal(dataOf(await call('GET', `/v1/specialists/${s.id}`, support)).contact_email, 'ana@clinic.test');
      // The specialist edits its own profile (update_self); not another's.
      const mine = dataOf(await call('PUT', `/v1/specialists/${s.id}`, specialist.token, { display_name: 'Dr. Ana Pop', bio: 'Knees.' }));
      assert.deepEqual([mine.display_name, mine.bio, mine.title, mine.contact_email], ['Dr. Ana Pop', 'Knees.', null, null]);
      const adminProfile = dataOf(
        await call('POST', '/v1/specialists', admin, {
          user_id: (await t.addMember(org, uniqueEmail('spec2'), 'specialist')).userId,
          display_name: 'Dr. B',
        }),
        201,
      );
      assertError(await call('PUT', `/v1/specialists/${adminProfile.id}`, specialist.token, { display_name: 'Hijack' }), 403, 'forbidden');
      assertError(await call('PUT', `/v1/specialists/${s.id}`, patient.token, { display_name: 'x' }), 403, 'forbidden');
      assertError(await call('GET', `/v1/specialists/${s.id}`, otherAdmin, undefined, otherOrg), 404, 'not_found');
      assertError(await call('DELETE', `/v1/specialists/${adminProfile.id}`, specialist.token), 403, 'forbidden');
      dataOf(await call('DELETE', `/v1/specialists/${adminProfile.id}`, admin), 204);
      assertError(await call('GET', `/v1/specialists/${adminProfile.id}`, patient.token), 404, 'not_found');
      const ev = await t.db.query(`select type from domain_events where data->>'id' = $1 order by id`, [adminProfile.id]);
      assert.deepEqual(
        ev.rows.map((r: any) => r.type),
        ['specialist.created', 'specialist.deleted'],
      );
    });
  });
});
