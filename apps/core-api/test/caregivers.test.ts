import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Caregivers (spec 2.3: is_patient_at_current_org "directly or through a caregiver link"): a person acts
 * for a patient with the patient's approval (the patient adds the link) or the clinic's (staff with
 * patients.update_org); it names the patient with X-Patient-ID and then reads and edits what the patient
 * could, recorded as a caregiver's access. The gate and the row policies honour the link, and forget it
 * the moment it is removed.
 */
describe('caregivers', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: { token: string; userId: string };
  let support: string;
  let child: { token: string; userId: string };
  let childId: string;
  let other: { token: string; userId: string };
  let otherId: string;
  const parentEmail = uniqueEmail('parent');
  let parent: string;

  const as = (token: string, patient?: string, at = org) => ({
    token,
    org: at,
    ...(patient ? { headers: { 'x-patient-id': patient } } : {}),
  });
  const idOf = async (userId: string) =>
    (await t.db.query<{ id: string }>('select id from patients where user_id = $1 and organization_id = $2', [userId, org])).rows[0]!.id;

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    otherOrg = (await t.createOrg()).id;
    admin = await t.addMember(org, uniqueEmail('cg-admin'), 'admin');
    support = (await t.addMember(org, uniqueEmail('cg-support'), 'customer_support')).token;
    child = await t.addPatient(org, uniqueEmail('child'));
    other = await t.addPatient(org, uniqueEmail('other-patient'));
    childId = await idOf(child.userId);
    otherId = await idOf(other.userId);
    await t.addPatient(otherOrg, uniqueEmail('elsewhere'));
    parent = await t.token(parentEmail);
  });
  after(() => t?.close());

  it('the patient adds a caregiver by email (approved by the patient); the caregiver is a patient-side caller there', async () => {
    const before = dataOf(await t.call('GET', '/v1/me', { token: parent, org }));
    assert.equal(before.is_patient_at_current_org, false);
    const link = dataOf(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, {
        ...as(child.token),
        body: { email: parentEmail, relationship: 'parent' },
      }),
      201,
    );
    assert.deepEqual(
      [link.approved_by, link.relationship, link.caregiver_email, link.revoked_at],
      ['patient', 'parent', parentEmail, null],
    );
    const me = dataOf(await t.call('GET', '/v1/me', { token: parent, org }));
    assert.deepEqual([me.is_patient_at_current_org, me.is_staff_at_current_org], [true, false]);
    const caring = dataOf(await t.call('GET', '/v1/me/caregiving', { token: parent }));
    assert.deepEqual(
      caring.map((c: { patient_id: string; organization_id: string }) => [c.patient_id, c.organization_id]),
      [[childId, org]],
    );
    assertError(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, { ...as(child.token), body: { email: parentEmail } }),
      409,
      'caregiver_exists',
    );
  });

  it('adding by email answers the same shape whether or not the person has an account; the invitation binds at first sign-in', async () => {
    const known = uniqueEmail('cg-known');
    dataOf(await t.call('GET', '/v1/me', { token: await t.token(known) }));
    const unknown = uniqueEmail('cg-unknown');
    const add = (email: string) =>
      t.call('POST', `/v1/patients/${otherId}/caregivers`, {
        ...as(other.token),
        body: { email: email.toUpperCase(), relationship: 'relative' },
      });
    const a = dataOf(await add(known), 201);
    const b = dataOf(await add(unknown), 201);
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    assert.equal('caregiver_user_id' in a, false);
    assert.deepEqual([a.caregiver_email, b.caregiver_email], [known.toLowerCase(), unknown.toLowerCase()]);
    const same = (l: Record<string, unknown>) => ({ ...l, id: null, created_at: null, caregiver_email: null });
    assert.deepEqual(same(a), same(b));
    // The invited person signs in for the first time with that email: the link is theirs.
    const invited = await t.token(unknown);
    const caring = dataOf(await t.call('GET', '/v1/me/caregiving', { token: invited }));
    assert.deepEqual(
      caring.map((c: { patient_id: string }) => c.patient_id),
      [otherId],
    );
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${otherId}`, as(invited, otherId))).id, otherId);
    for (const l of [a, b]) await t.call('DELETE', `/v1/patients/${otherId}/caregivers/${l.id}`, as(other.token));
  });

  it('with X-Patient-ID it reads and edits what the patient could, its access recorded as a caregiver; without it, nothing', async () => {
    assertError(await t.call('GET', `/v1/patients/${childId}`, as(parent)), 404, 'not_found');
    const record = dataOf(await t.call('GET', `/v1/patients/${childId}`, as(parent, childId)));
    assert.equal(record.id, childId);
    assert.equal('notes' in record, false, 'stripped as for the patient');
    const profile = dataOf(
      await t.call('PUT', `/v1/patients/${childId}/profile`, { ...as(parent, childId), body: { first_name: 'Mia', city: 'Iasi' } }),
    );
    assert.deepEqual([profile.first_name, profile.city], ['Mia', 'Iasi']);
    const change = await t.db.query<{ actor_user_id: string }>(
      `select actor_user_id from audit_logs where action = 'patient.profile_updated' and entity_id = $1`,
      [childId],
    );
    assert.equal(
      change.rows[0]!.actor_user_id,
      (await t.db.query<{ id: string }>('select id from users where email = $1', [parentEmail])).rows[0]!.id,
    );
    const logged = await t.db.query<{ action_context: string }>(
      `select action_context from patient_access_log where $1 = any(patient_ids) and action = 'patient.read'`,
      [childId],
    );
    assert.deepEqual(
      logged.rows.map((r) => r.action_context),
      ['caregiver'],
    );
    // Another patient of the clinic is not the parent's to act for; nor is the child at another clinic.
    assertError(await t.call('GET', `/v1/patients/${otherId}`, as(parent, otherId)), 403, 'forbidden');
    assertError(await t.call('GET', '/v1/me', as(parent, childId, otherOrg)), 403, 'forbidden');
    assertError(await t.call('GET', '/v1/me', as(parent, 'not-a-uuid')), 400, 'validation_error');
    // Staff act with their permissions, never through the header.
    assertError(await t.call('GET', `/v1/patients/${childId}`, as(admin.token, childId)), 403, 'forbidden');
  });

  it('staff with patients.update_org add one (approved by staff); a caregiver or another patient cannot add one', async () => {
    const link = dataOf(
      await t.call('POST', `/v1/patients/${otherId}/caregivers`, { ...as(support), body: { email: uniqueEmail('aunt') } }),
      201,
    );
    assert.equal(link.approved_by, 'staff');
    assertError(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, { ...as(parent, childId), body: { email: uniqueEmail('x') } }),
      403,
      'forbidden',
    );
    assertError(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, { ...as(other.token), body: { email: uniqueEmail('y') } }),
      404,
      'not_found',
    );
    assertError(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, { ...as(child.token), body: { email: 'not an email' } }),
      400,
      'validation_error',
    );
    const listed = dataOf(await t.call('GET', `/v1/patients/${childId}/caregivers`, as(admin.token)));
    assert.deepEqual(
      listed.map((l: { caregiver_email: string }) => l.caregiver_email),
      [parentEmail],
    );
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${childId}/caregivers`, as(parent, childId))).length, 1);
  });

  it('removing the link ends it at once, for the gate and the rows', async () => {
    const [link] = dataOf(await t.call('GET', `/v1/patients/${childId}/caregivers`, as(child.token)));
    dataOf(await t.call('GET', `/v1/patients/${childId}`, as(parent, childId)));
    assert.equal((await t.call('DELETE', `/v1/patients/${childId}/caregivers/${link.id}`, as(parent))).statusCode, 204);
    assertError(await t.call('GET', `/v1/patients/${childId}`, as(parent, childId)), 403, 'forbidden');
    assert.equal(dataOf(await t.call('GET', '/v1/me', { token: parent, org })).is_patient_at_current_org, false);
    assert.deepEqual(dataOf(await t.call('GET', '/v1/me/caregiving', { token: parent })), []);
    assertError(await t.call('DELETE', `/v1/patients/${childId}/caregivers/${link.id}`, as(child.token)), 404, 'not_found');
  });
});

/*
 * Who accepts what when a caregiver acts for a patient: the patient's acceptance of the clinic's required
 * purposes governs the patient's data; the caregiver accepts only what applies to itself (the platform's).
 * A caregiver who had an account before the link (no patient record of its own at the clinic) is never
 * asked for something the API would refuse it.
 */
describe('caregivers with a pre-existing account and the re-consent gate', () => {
  let t: TestApp;
  let org: string;
  let admin: string;
  let su: string;
  const parentEmail = uniqueEmail('cg-existing-parent');
  let parent: string;

  const idOf = async (userId: string) =>
    (await t.db.query<{ id: string }>('select id from patients where user_id = $1 and organization_id = $2', [userId, org])).rows[0]!.id;
  const acting = (patientId: string) => ({ token: parent, org, headers: { 'x-patient-id': patientId } });

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    org = (await t.createOrg()).id;
    await t.publishPrivacyNotice(org);
    admin = (await t.addMember(org, uniqueEmail('cg-existing-admin'), 'admin')).token;
    parent = await t.token(parentEmail);
    // The account exists before any link: signed in once, with no clinic.
    const me = dataOf(await t.call('GET', '/v1/me', { token: parent }));
    assert.deepEqual(me.memberships, []);
  });
  after(() => t?.close());

  it('links, reads the record and appointments, accepts what it is asked: no 403 dead end', async () => {
    const child = await t.addPatient(org, uniqueEmail('cg-existing-child'));
    await t.acceptOrgPurposes(org, child.userId);
    const childId = await idOf(child.userId);
    dataOf(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, {
        token: child.token,
        org,
        body: { email: parentEmail, relationship: 'parent' },
      }),
      201,
    );
    // The clinic's notice is the patient's to accept, and the patient has: the caregiver reads.
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${childId}`, acting(childId))).id, childId);
    assert.deepEqual(dataOf(await t.call('GET', '/v1/appointments', acting(childId))), []);
    // Without X-Patient-ID, at the clinic, it is not asked for the clinic's patient terms either.
    assert.equal(dataOf(await t.call('GET', '/v1/me', { token: parent, org })).is_patient_at_current_org, true);
    dataOf(await t.call('GET', '/v1/me/caregiving', { token: parent, org }));

    // The platform's terms apply to the caregiver itself: the 412 asks for them only, and it can give them.
    const terms = dataOf(
      await t.call('POST', '/v1/admin/consent-purposes/platform_terms/versions', {
        token: su,
        body: { body_translations: { en: 'Platform terms.' } },
      }),
      201,
    );
    const err = assertError(await t.call('GET', `/v1/patients/${childId}`, acting(childId)), 412, 'consent_required');
    assert.deepEqual(err.missing, [{ purpose_code: 'platform_terms', organization_id: null, version: terms.version }]);
    dataOf(
      await t.call('POST', '/v1/me/consents', {
        token: parent,
        body: {
          grants: [{ organization_id: null, purpose_code: 'platform_terms', purpose_version: terms.version, source: 'self_toggle' }],
        },
      }),
      201,
    );
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${childId}`, acting(childId))).id, childId);
    assert.deepEqual(dataOf(await t.call('GET', '/v1/appointments', acting(childId))), []);
    // The clinic's purposes are still not the caregiver's to accept (it has no record there).
    assertError(
      await t.call('POST', '/v1/me/consents', {
        token: parent,
        body: { grants: [{ organization_id: org, purpose_code: 'org_privacy_notice', purpose_version: 1, source: 'self_toggle' }] },
      }),
      403,
      'forbidden',
    );
  });

  it("a patient who has not accepted the clinic's notice: 403 naming who can accept, until the clinic records it", async () => {
    // Staff and the caregiver accept the platform's terms (published by the test above, if it ran first).
    const newcomer = await t.addPatient(org, uniqueEmail('cg-existing-newcomer'));
    const newcomerId = await idOf(newcomer.userId);
    await t.db.query(
      `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id)
       select null, m.user_id, v.purpose_code, v.version, 'api', m.user_id
       from memberships m cross join consent_purpose_versions v
       where m.organization_id = $1 and v.organization_id is null and v.purpose_code = 'platform_terms'`,
      [org],
    );
    dataOf(
      await t.call('POST', `/v1/patients/${newcomerId}/caregivers`, {
        token: admin,
        org,
        body: { email: parentEmail, relationship: 'parent' },
      }),
      201,
    );
    const err = assertError(await t.call('GET', `/v1/patients/${newcomerId}`, acting(newcomerId)), 403, 'consent_required');
    assert.equal(err.missing_purpose, 'org_privacy_notice');
    assert.equal(err.patient_id, newcomerId);
    // The clinic records the patient's acceptance (staff_action): the caregiver reads.
    dataOf(
      await t.call('POST', `/v1/organizations/${org}/patients/${newcomerId}/consents/grant`, {
        token: admin,
        body: { grants: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }] },
      }),
      201,
    );
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${newcomerId}`, acting(newcomerId))).id, newcomerId);
  });
});
