import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Specialties (spec 4.5: GET, POST /v1/specialties; PATCH, DELETE /v1/specialties/{id}) and what a
 * specialist profile links to: specialties, locations, languages, the services it
 * delivers, whether the public booking page lists it. Readable by the organization's staff and patients;
 * written with services.manage (specialties) and specialists.update_org (a profile's links).
 */
describe('specialties and specialist links', () => {
  let t: TestApp;
  let org: string;
  let otherOrg: string;
  let admin: string;
  let otherAdmin: string;
  let specialistToken: string;
  let support: string;
  let patient: string;
  let specialistId: string;
  let location: string;

  const hex = () => randomBytes(4).toString('hex');
  const call = (method: string, url: string, token: string, body?: unknown, at = org) => t.call(method, url, { token, org: at, body });
  const specialty = async (code = `sp-${hex()}`, name = `Specialty ${hex()}`) =>
    dataOf(await call('POST', '/v1/specialties', admin, { code, name }), 201);

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg({ name: 'Directory clinic' })).id;
    otherOrg = (await t.createOrg({ name: 'Directory other' })).id;
    admin = (await t.addMember(org, uniqueEmail('dir-admin'), 'admin')).token;
    otherAdmin = (await t.addMember(otherOrg, uniqueEmail('dir-other'), 'admin')).token;
    support = (await t.addMember(org, uniqueEmail('dir-support'), 'customer_support')).token;
    patient = (await t.addPatient(org, uniqueEmail('dir-patient'))).token;
    const member = await t.addMember(org, uniqueEmail('dir-spec'), 'specialist');
    specialistToken = member.token;
    specialistId = dataOf(await call('POST', '/v1/specialists', admin, { user_id: member.userId, display_name: 'Dr Ana' }), 201).id;
    location = dataOf(
      await t.call('POST', `/v1/organizations/${org}/locations`, {
        token: admin,
        body: { name: `Main ${hex()}`, timezone: 'Europe/Bucharest' },
      }),
      201,
    ).id;
  });
  after(() => t?.close());

  it('creates a specialty with a trimmed name and a lower-case code; get, patch and delete it; each change audited and emitted', async () => {
    const created = await specialty(' Physio-Sport ', '  Sports physiotherapy ');
    assert.equal(created.code, 'physio-sport');
    assert.equal(created.name, 'Sports physiotherapy');
    assert.equal(created.description, null);
    assert.equal(created.organization_id, org);
    assert.deepEqual(dataOf(await call('GET', `/v1/specialties/${created.id}`, patient)), created);

    const patched = dataOf(await call('PATCH', `/v1/specialties/${created.id}`, admin, { description: 'Athletes', name: 'Sports physio' }));
    assert.equal(patched.description, 'Athletes');
    assert.equal(patched.code, 'physio-sport');
    // Clearing with an empty string, as elsewhere in the API.
    assert.equal(dataOf(await call('PATCH', `/v1/specialties/${created.id}`, admin, { description: '' })).description, null);

    const res = await call('DELETE', `/v1/specialties/${created.id}`, admin);
    assert.equal(res.statusCode, 204, res.body);
    assertError(await call('GET', `/v1/specialties/${created.id}`, admin), 404, 'not_found');

    const audit = await t.db.query<{ action: string; data: Record<string, unknown> }>(
      `select action, data from audit_logs where entity_id = $1 order by created_at, id`,
      [created.id],
    );
    assert.deepEqual(
      audit.rows.map((r) => r.action),
      ['specialty.created', 'specialty.updated', 'specialty.updated', 'specialty.deleted'],
    );
    assert.deepEqual(audit.rows[1]!.data, { fields: ['name', 'description'] });
    const events = await t.db.query<{ type: string }>(
      `select type from domain_events where organization_id = $1 and type like 'specialty.%' and data->>'id' = $2 order by occurred_at, id`,
      [org, created.id],
    );
    assert.deepEqual(
      events.rows.map((r) => r.type),
      ['specialty.created', 'specialty.updated', 'specialty.updated', 'specialty.deleted'],
    );
  });

  it('a code is unique in the organization, whatever its case (409 specialty_code_taken); another organization may reuse it', async () => {
    const code = `dup-${hex()}`;
    await specialty(code);
    assertError(await call('POST', '/v1/specialties', admin, { code: code.toUpperCase(), name: 'Other' }), 409, 'specialty_code_taken');
    const second = await specialty();
    assertError(await call('PATCH', `/v1/specialties/${second.id}`, admin, { code }), 409, 'specialty_code_taken');
    assert.equal(dataOf(await call('POST', '/v1/specialties', otherAdmin, { code, name: 'Theirs' }, otherOrg), 201).code, code);
  });

  it('bad input is 400 validation_error with fields and creates nothing', async () => {
    for (const body of [
      { code: 'has space', name: 'X' },
      { code: '-lead', name: 'X' },
      { code: 'ok', name: '   ' },
      { code: 'ok', name: 'X', extra: 1 },
      { name: 'no code' },
    ]) {
      const res = await call('POST', '/v1/specialties', admin, body);
      assertError(res, 400, 'validation_error');
    }
    assertError(await call('PATCH', `/v1/specialties/${(await specialty()).id}`, admin, {}), 400, 'validation_error');
    const list = dataOf(await call('GET', '/v1/specialties?q=has%20space', admin));
    assert.equal(list.length, 0);
  });

  it('lists with q, sort and pagination; an unknown sort field is 422', async () => {
    const tag = hex();
    for (const n of ['Cardiology', 'allergy', 'Bones']) await specialty(`${n.toLowerCase()}-${tag}`, `${n} ${tag}`);
    const res = await call('GET', `/v1/specialties?q=${tag}&sort=name&limit=2`, admin);
    const page = res.json();
    assert.deepEqual(
      page.data.map((s: any) => s.name),
      [`allergy ${tag}`, `Bones ${tag}`],
    );
    assert.equal(page.pagination.total, 3);
    assertError(await call('GET', '/v1/specialties?sort=description', admin), 422, 'validation_failed');
  });

  it('who may: staff and patients read, services.manage writes; other organizations see nothing', async () => {
    const s = await specialty();
    for (const token of [specialistToken, support, patient]) {
      assert.equal(dataOf(await call('GET', '/v1/specialties', token)).length > 0, true);
      assertError(await call('POST', '/v1/specialties', token, { code: `x-${hex()}`, name: 'X' }), 403, 'forbidden');
      assertError(await call('PATCH', `/v1/specialties/${s.id}`, token, { name: 'Y' }), 403, 'forbidden');
      assertError(await call('DELETE', `/v1/specialties/${s.id}`, token), 403, 'forbidden');
    }
    // Staff of another organization acting here is not a member (no just-in-time patient link for staff).
    assertError(await call('GET', '/v1/specialties', otherAdmin), 403, 'forbidden');
    // Another organization's admin, at its own organization: no such row (and nothing changes).
    assertError(await call('GET', `/v1/specialties/${s.id}`, otherAdmin, undefined, otherOrg), 404, 'not_found');
    assertError(await call('PATCH', `/v1/specialties/${s.id}`, otherAdmin, { name: 'Stolen' }, otherOrg), 404, 'not_found');
    assertError(await call('DELETE', `/v1/specialties/${s.id}`, otherAdmin, undefined, otherOrg), 404, 'not_found');
    assert.equal(dataOf(await call('GET', `/v1/specialties/${s.id}`, admin)).name, s.name);
    assertError(await call('GET', `/v1/specialties/${MISSING_UUID}`, admin), 404, 'not_found');
  });

  it('a specialist links to specialties and locations and speaks languages; a specialty in use cannot be deleted', async () => {
    const a = await specialty();
    const b = await specialty();
    const put = await call('PUT', `/v1/specialists/${specialistId}`, admin, {
      display_name: 'Dr Ana',
      contact_email: 'ana@example.test',
      specialty_ids: [b.id, a.id, a.id],
      location_ids: [location],
      languages: ['ro', 'en-gb', 'EN-GB'],
      bookable_online: true,
    });
    const profile = dataOf(put);
    assert.deepEqual(profile.specialty_ids, [a.id, b.id].sort());
    assert.deepEqual(profile.location_ids, [location]);
    assert.deepEqual(profile.languages, ['ro', 'en-GB']);
    assert.equal(profile.bookable_online, true);
    assert.deepEqual(profile.service_ids, []);

    assertError(await call('DELETE', `/v1/specialties/${a.id}`, admin), 409, 'specialty_in_use');

    // The directory filters: by specialty, location and language.
    const ids = async (query: string) => dataOf(await call('GET', `/v1/specialists?${query}`, support)).map((s: any) => s.id);
    assert.deepEqual(await ids(`specialty_id=${a.id}`), [specialistId]);
    assert.deepEqual(await ids(`location_id=${location}`), [specialistId]);
    assert.deepEqual(await ids('language=en-GB'), [specialistId]);
    assert.deepEqual(await ids('language=de'), []);

    // A patient sees the links, not the contact details.
    const seen = dataOf(await call('GET', `/v1/specialists/${specialistId}`, patient));
    assert.deepEqual(seen.specialty_ids, profile.specialty_ids);
    assert.equal(seen.contact_email, undefined);
  });

  it('link ids must name records of the organization (400 with the field); a bad language tag is 400', async () => {
    const theirs = dataOf(await call('POST', '/v1/specialties', otherAdmin, { code: `t-${hex()}`, name: 'Theirs' }, otherOrg), 201);
    const body = { display_name: 'Dr Ana' };
    const r1 = await call('PUT', `/v1/specialists/${specialistId}`, admin, { ...body, specialty_ids: [theirs.id] });
    assertError(r1, 400, 'validation_error');
    assert.ok(r1.json().error.fields.specialty_ids);
    const r2 = await call('PUT', `/v1/specialists/${specialistId}`, admin, { ...body, location_ids: [MISSING_UUID] });
    assertError(r2, 400, 'validation_error');
    assert.ok(r2.json().error.fields.location_ids);
    const r3 = await call('PUT', `/v1/specialists/${specialistId}`, admin, { ...body, languages: ['not a tag!'] });
    assertError(r3, 400, 'validation_error');
    assert.ok(r3.json().error.fields.languages);
  });

  it('a specialist edits its own profile but not what the clinic decides: specialties, locations, online booking (403)', async () => {
    const current = dataOf(
      await call('PUT', `/v1/specialists/${specialistId}`, admin, {
        display_name: 'Dr Ana',
        location_ids: [location],
        bookable_online: true,
      }),
    );
    const mine = { display_name: 'Dr Ana P.', bio: 'Sports', location_ids: current.location_ids, bookable_online: true, languages: ['ro'] };
    const ok = dataOf(await call('PUT', `/v1/specialists/${specialistId}`, specialistToken, mine));
    assert.equal(ok.bio, 'Sports');
    assert.deepEqual(ok.languages, ['ro']);
    for (const change of [{ location_ids: [] }, { bookable_online: false }, { specialty_ids: [(await specialty()).id] }]) {
      const res = await call('PUT', `/v1/specialists/${specialistId}`, specialistToken, { ...mine, ...change });
      assertError(res, 403, 'forbidden');
    }
    const after = dataOf(await call('GET', `/v1/specialists/${specialistId}`, admin));
    assert.deepEqual(after.location_ids, current.location_ids);
    assert.equal(after.bookable_online, true);
  });

  it('a location that specialists work at cannot be deleted (409 location_in_use)', async () => {
    assertError(await t.call('DELETE', `/v1/organizations/${org}/locations/${location}`, { token: admin }), 409, 'location_in_use');
  });
});
