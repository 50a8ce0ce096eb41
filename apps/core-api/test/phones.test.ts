import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';
import { clinicRows } from './support/clinic-rows.ts';

/*
 * Every phone of the API is E.164: international numbers as given, national ones read in the clinic's country
 * (its first location's), anything else 400 validation_error naming the field.
 */
describe('phones are E.164', () => {
  let t: TestApp;
  let orgId: string;
  let admin: { token: string; userId: string };
  let rows: Record<string, string>;
  const call = (method: string, url: string, body?: unknown) => t.call(method, url, { token: admin.token, org: orgId, body });

  before(async () => {
    t = await startTestApp();
    orgId = (await t.createOrg({ name: 'Phones clinic' })).id;
    ({ admin, rows } = await clinicRows(t, orgId));
    dataOf(await call('PATCH', `/v1/organizations/${orgId}/locations/${rows.locations}`, { country: 'RO' }));
    dataOf(
      await call('POST', `/v1/organizations/${orgId}/consent-purposes/org_privacy_notice/versions`, {
        body_translations: { en: 'How this clinic processes your data.' },
      }),
      201,
    );
  });
  after(async () => t?.close());

  it("a guest booking's phone: nonsense is 400 naming phone; a national number is stored in E.164", async () => {
    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    const free = await t.call('GET', `/v1/public/availability?organization=${orgId}&service_id=${rows.services}&from=${day}&to=${day}`);
    const slots = free.json().data.slots as { start: string }[];
    const hold = dataOf(
      await t.call('POST', '/v1/public/holds', {
        body: { organization: orgId, service_id: rows.services, specialist_id: rows.specialists, start: slots.at(-1)!.start },
      }),
      201,
    );
    const booking = {
      organization: orgId,
      hold_id: hold.id,
      secret: hold.secret,
      name: 'Ana Guest',
      email: uniqueEmail('guest'),
      consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
    };
    const bad = assertError(
      await t.call('POST', '/v1/public/bookings', { body: { ...booking, phone: 'call me maybe' } }),
      400,
      'validation_error',
    );
    assert.ok(bad.fields.phone);
    const made = dataOf(await t.call('POST', '/v1/public/bookings', { body: { ...booking, phone: '0712 345 678' } }), 201);
    const stored = await t.db.query<{ guest_phone: string }>('select guest_phone from appointments where id = $1', [made.id]);
    assert.equal(stored.rows[0]!.guest_phone, '+40712345678');
  });

  it("a patient's, a location's and a specialist's phone", async () => {
    const cases: [string, string, () => Record<string, unknown>, string][] = [
      ['POST', '/v1/patients', () => ({ email: uniqueEmail('p'), first_name: 'A', last_name: 'B' }), 'phone'],
      ['PATCH', `/v1/organizations/${orgId}/locations/${rows.locations}`, () => ({}), 'phone'],
      [
        'PUT',
        `/v1/specialists/${rows.specialists}`,
        () => ({ display_name: 'Dr', bookable_online: true, location_ids: [rows.locations] }),
        'contact_phone',
      ],
    ];
    for (const [method, url, make, field] of cases) {
      for (const nonsense of ['call me maybe', '12', '+40 7']) {
        const err = assertError(await call(method, url, { ...make(), [field]: nonsense }), 400, 'validation_error');
        assert.ok(err.fields[field], `${url} ${nonsense}: ${JSON.stringify(err)}`);
      }
      const ok = await call(method, url, { ...make(), [field]: '0712 345 678' });
      assert.ok(ok.statusCode < 300, ok.body);
      assert.equal(ok.json().data[field], '+40712345678', url);
      const intl = await call(method, url, { ...make(), [field]: '+1 202-555-0143' });
      assert.equal(intl.json().data[field], '+12025550143', url);
    }
  });
});
