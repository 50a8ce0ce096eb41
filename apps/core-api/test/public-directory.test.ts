import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, uniqueSlug, type TestApp } from './helpers.ts';

/*
 * A specialist's professional profile (GET, PUT /v1/specialists/{id}/profile: profile routes as for
 * patients, spec 4.5) and the public booking directory (spec 5.2-5.3): bookable specialists, public
 * services and locations, readable with no token, for the organization named by id, slug or the host's
 * verified custom domain; never contact data; rate limited per IP.
 */
describe('specialist profile and public booking directory', () => {
  let t: TestApp;
  let org: { id: string; slug: string };
  let otherOrg: { id: string; slug: string };
  let admin: string;
  let otherAdmin: string;
  let patient: { token: string; userId: string };
  let ana: { id: string; token: string };
  let dan: { id: string; token: string };
  let hidden: string;
  let location: string;
  let specialty: string;
  let publicService: string;
  let privateService: string;

  const hex = () => randomBytes(4).toString('hex');
  const call = (method: string, url: string, token: string, body?: unknown, at = org.id) => t.call(method, url, { token, org: at, body });
  const pub = (url: string, headers: Record<string, string> = {}, remoteAddress = '198.51.100.7') =>
    t.app.inject({ method: 'GET', url, headers, remoteAddress });
  const specialist = async (name: string, extra: Record<string, unknown> = {}, at = org.id, by = admin) => {
    const member = await t.addMember(at, uniqueEmail('pub-spec'), 'specialist');
    const s = dataOf(await call('POST', '/v1/specialists', by, { user_id: member.userId, display_name: name, ...extra }, at), 201);
    return { id: s.id as string, token: member.token };
  };

  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '40' } });
    org = await t.createOrg({ name: 'Booking clinic', slug: uniqueSlug('booking') });
    otherOrg = await t.createOrg({ name: 'Other clinic', slug: uniqueSlug('other') });
    admin = (await t.addMember(org.id, uniqueEmail('pub-admin'), 'admin')).token;
    otherAdmin = (await t.addMember(otherOrg.id, uniqueEmail('pub-other'), 'admin')).token;
    patient = await t.addPatient(org.id, uniqueEmail('pub-patient'));
    location = dataOf(
      await t.call('POST', `/v1/organizations/${org.id}/locations`, {
        token: admin,
        body: { name: 'Central', city: 'Cluj-Napoca', country: 'RO', timezone: 'Europe/Bucharest', phone: '+40 264 000 000' },
      }),
      201,
    ).id;
    specialty = dataOf(await call('POST', '/v1/specialties', admin, { code: `physio-${hex()}`, name: 'Physiotherapy' }), 201).id;
    ana = await specialist('Dr Ana Pop', {
      bookable_online: true,
      contact_email: 'ana.private@example.com',
      contact_phone: '+40 700 000 001',
      specialty_ids: [specialty],
      location_ids: [location],
      languages: ['ro', 'en'],
    });
    dan = await specialist('Dr Dan Ene', { bookable_online: true, languages: ['ro'] });
    hidden = (await specialist('Dr Not Online', { bookable_online: false })).id;
    await specialist('Dr Elsewhere', { bookable_online: true }, otherOrg.id, otherAdmin);
    const service = (name: string, is_public: boolean) =>
      call('POST', '/v1/services', admin, {
        name,
        duration_minutes: 45,
        price_minor: 15000,
        currency: 'RON',
        mode: 'in_person',
        is_public,
        location_ids: [location],
        specialist_ids: [ana.id, hidden],
      });
    publicService = dataOf(await service('Knee rehabilitation', true), 201).id;
    privateService = dataOf(await service('Staff-only check', false), 201).id;
  });
  after(() => t?.close());

  describe('GET, PUT /v1/specialists/{id}/profile', () => {
    it('the specialist edits its own profile (update_self); the record and its links stay; audited by field name', async () => {
      const body = {
        display_name: 'Dr Ana Pop',
        title: 'Physiotherapist',
        bio: 'Sports injuries.',
        languages: ['ro', 'en-gb'],
        gender: 'female',
        registration_number: ' CMR-12345 ',
        qualifications: [{ title: 'MSc Physiotherapy', institution: 'UMF Cluj', year: 2012 }],
        practising_since: 2012,
        booking_note: 'Bring your MRI.',
      };
      const p = dataOf(await call('PUT', `/v1/specialists/${ana.id}/profile`, ana.token, body));
      assert.equal(p.specialist_id, ana.id);
      assert.deepEqual(p.languages, ['ro', 'en-GB']);
      assert.equal(p.registration_number, 'CMR-12345');
      assert.deepEqual(p.qualifications, [{ title: 'MSc Physiotherapy', institution: 'UMF Cluj', year: 2012 }]);
      assert.equal('contact_email' in p, false, 'the profile holds no contact data');
      assert.deepEqual(dataOf(await call('GET', `/v1/specialists/${ana.id}/profile`, admin)), p);
      // The record keeps its contact details, links and booking flag.
      const record = dataOf(await call('GET', `/v1/specialists/${ana.id}`, admin));
      assert.equal(record.contact_email, 'ana.private@example.com');
      assert.deepEqual([record.bookable_online, record.location_ids], [true, [location]]);
      const audit = await t.db.query<{ data: { fields: string[] } }>(
        `select data from audit_logs where entity_id = $1 and action = 'specialist.profile_updated'`,
        [ana.id],
      );
      assert.equal(audit.rows.length, 1);
      assert.deepEqual(audit.rows[0]!.data.fields.sort(), [
        'bio',
        'booking_note',
        'gender',
        'languages',
        'practising_since',
        'qualifications',
        'registration_number',
        'title',
      ]);
      assert.doesNotMatch(JSON.stringify(audit.rows[0]!.data), /CMR-12345/, 'values stay out of the trail');
    });

    it('another specialist may not edit it (403); a patient reads it; bad values are 400 with fields; other clinics 404', async () => {
      assertError(await call('PUT', `/v1/specialists/${ana.id}/profile`, dan.token, { display_name: 'Taken over' }), 403, 'forbidden');
      const seen = dataOf(await call('GET', `/v1/specialists/${ana.id}/profile`, patient.token));
      assert.equal(seen.display_name, 'Dr Ana Pop');
      assertError(await call('PUT', `/v1/specialists/${ana.id}/profile`, patient.token, { display_name: 'x' }), 403, 'forbidden');
      let err = assertError(
        await call('PUT', `/v1/specialists/${dan.id}/profile`, admin, {
          display_name: '  ',
          practising_since: new Date().getUTCFullYear() + 1,
          qualifications: [{ title: ' ' }],
        }),
        400,
        'validation_error',
      );
      assert.deepEqual(Object.keys(err.fields).sort(), ['display_name', 'practising_since', 'qualifications.0.title']);
      err = assertError(
        await call('PUT', `/v1/specialists/${dan.id}/profile`, admin, { display_name: 'x', gender: 'robot' }),
        400,
        'validation_error',
      );
      assert.ok(err.fields.gender, JSON.stringify(err));
      assertError(await call('PUT', `/v1/specialists/${dan.id}/profile`, admin, { display_name: 'x\u0000y' }), 400, 'validation_error');
      assertError(await call('GET', `/v1/specialists/${ana.id}/profile`, otherAdmin, undefined, otherOrg.id), 404, 'not_found');
      assertError(await call('GET', `/v1/specialists/${MISSING_UUID}/profile`, admin), 404, 'not_found');
    });
  });

  describe('GET /v1/public/specialists, services and locations', () => {
    it('lists only bookable specialists of the organization named by id or slug, without contact data or user ids', async () => {
      for (const name of [org.id, org.slug, org.slug.toUpperCase()]) {
        const res = await pub(`/v1/public/specialists?organization=${name}&sort=display_name`);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.deepEqual(
          body.data.map((s: { display_name: string }) => s.display_name),
          ['Dr Ana Pop', 'Dr Dan Ene'],
        );
        assert.equal(body.pagination.total, 2);
        assert.doesNotMatch(res.body, /ana\.private|\+40 700|user_id|contact_|custom_fields|registration_number/);
      }
      const one = JSON.parse((await pub(`/v1/public/specialists/${ana.id}?organization=${org.slug}`)).body).data;
      assert.deepEqual(
        one.specialties.map((s: { id: string }) => s.id),
        [specialty],
      );
      assert.deepEqual(one.location_ids, [location]);
      assert.deepEqual(one.service_ids, [publicService], 'its public services only');
      assert.equal(one.booking_note, 'Bring your MRI.');
    });

    it('filters by specialty, location, service and language; unknown sort is 422; a bad language is 422', async () => {
      const names = async (query: string) =>
        JSON.parse((await pub(`/v1/public/specialists?organization=${org.id}&${query}`)).body).data.map(
          (s: { display_name: string }) => s.display_name,
        );
      assert.deepEqual(await names(`specialty_id=${specialty}`), ['Dr Ana Pop']);
      assert.deepEqual(await names(`location_id=${location}`), ['Dr Ana Pop']);
      assert.deepEqual(await names(`service_id=${publicService}`), ['Dr Ana Pop']);
      assert.deepEqual(await names(`service_id=${privateService}`), [], 'a private service lists nobody');
      assert.deepEqual((await names('language=EN-gb')).sort(), ['Dr Ana Pop']);
      const sortErr = (await pub(`/v1/public/specialists?organization=${org.id}&sort=contact_email`)).json();
      assert.equal(sortErr.error.code, 'validation_failed');
      assert.ok(sortErr.error.fields.sort);
      assert.equal((await pub(`/v1/public/specialists?organization=${org.id}&language=not a tag`)).statusCode, 422);
    });

    it('a specialist who is not bookable, deleted or of another organization is 404; so is an unknown organization', async () => {
      assert.equal((await pub(`/v1/public/specialists/${hidden}?organization=${org.id}`)).statusCode, 404);
      assert.equal((await pub(`/v1/public/specialists/${ana.id}?organization=${otherOrg.id}`)).statusCode, 404);
      const gone = await specialist('Dr Gone', { bookable_online: true });
      assert.equal((await pub(`/v1/public/specialists/${gone.id}?organization=${org.id}`)).statusCode, 200);
      assert.equal((await call('DELETE', `/v1/specialists/${gone.id}`, admin)).statusCode, 204);
      assert.equal((await pub(`/v1/public/specialists/${gone.id}?organization=${org.id}`)).statusCode, 404);
      for (const o of [MISSING_UUID, 'no-such-clinic']) {
        const res = await pub(`/v1/public/specialists?organization=${o}`);
        assert.equal(res.statusCode, 404);
        assert.equal(res.json().error.code, 'organization_not_found');
      }
    });

    it('without `organization`, the host names the organization through a verified custom domain; else 404 or 422', async () => {
      const domain = `book-${hex()}.example.com`;
      await t.db.query(
        "insert into organization_domains (organization_id, domain, verification_token, verified_at) values ($1, $2, 'test', now())",
        [org.id, domain],
      );
      const res = await pub('/v1/public/services', { host: domain });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        res.json().data.map((s: { id: string }) => s.id),
        [publicService],
      );
      assert.equal((await pub('/v1/public/services', { host: `unknown-${hex()}.example.com` })).statusCode, 404);
      const noName = await pub('/v1/public/services', { host: '127.0.0.1:3000' });
      assert.equal(noName.statusCode, 422);
      assert.ok(noName.json().error.fields.organization);
    });

    it('services: public ones with their bookable specialists and price in minor units; locations with their front desk', async () => {
      const services = (await pub(`/v1/public/services?organization=${org.slug}`)).json();
      assert.equal(services.pagination.total, 1);
      const s = services.data[0];
      assert.deepEqual([s.name, s.price_minor, s.currency, s.duration_minutes], ['Knee rehabilitation', 15000, 'RON', 45]);
      assert.deepEqual(s.specialist_ids, [ana.id], 'the specialist who is not bookable online is left out');
      assert.deepEqual((await pub(`/v1/public/services?organization=${org.id}&specialist_id=${dan.id}`)).json().data, []);
      const locations = (await pub(`/v1/public/locations?organization=${org.id}`)).json().data;
      assert.deepEqual(
        locations.map((l: { name: string; phone: string; timezone: string }) => [l.name, l.phone, l.timezone]),
        [['Central', '+40264000000', 'Europe/Bucharest']],
      );
    });

    it('is rate limited per IP across the public booking routes, with the X-RateLimit headers', async () => {
      const ip = '203.0.113.99';
      let last = await pub(`/v1/public/locations?organization=${org.id}`, {}, ip);
      assert.equal(last.headers['x-ratelimit-limit'], '40');
      for (let i = 1; i < 40; i++)
        last = await pub(i % 2 ? `/v1/public/services?organization=${org.id}` : `/v1/public/specialists?organization=${org.id}`, {}, ip);
      assert.equal(last.statusCode, 200);
      const refused = await pub(`/v1/public/locations?organization=${org.id}`, {}, ip);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().error.code, 'rate_limited');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal(
        (await pub(`/v1/public/locations?organization=${org.id}`, {}, '203.0.113.100')).statusCode,
        200,
        'another address is not held back',
      );
    });
  });
});
