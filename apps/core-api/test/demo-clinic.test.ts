import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEMO_ADMIN, seedDemoClinic } from '../src/platform/demo-clinic.ts';
import { startTestApp, type TestApp } from './helpers.ts';

/** The demo clinic `npm start` seeds on the embedded default: bookable at once, and seeded once. */
describe('demo clinic seed', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { RATELIMIT_PUBLIC_LIMIT: '100000' } });
  });
  after(() => t?.close());

  it('creates a clinic whose public availability has slots, with its notice and terms; a second run changes nothing', async () => {
    assert.equal(await seedDemoClinic(t.app, t.rt), 'created');
    const org = await t.call('GET', '/v1/public/organizations/resolve?slug=demo');
    assert.equal(org.statusCode, 200);
    assert.deepEqual(
      { name: org.json().data.name, language_code: org.json().data.language_code },
      { name: 'Demo Clinic', language_code: 'en' },
    );
    const services = await t.call('GET', '/v1/public/services?organization=demo');
    assert.equal(services.statusCode, 200, services.body);
    const service = services.json().data[0];
    assert.ok(service, 'a public service');
    // Next Monday to the Friday after, in the clinic's zone: weekday hours give slots.
    const monday = new Date();
    monday.setUTCDate(monday.getUTCDate() + ((8 - monday.getUTCDay()) % 7 || 7));
    const friday = new Date(monday.getTime() + 4 * 86_400_000);
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const slots = await t.call(
      'GET',
      `/v1/public/availability?organization=demo&service_id=${service.id}&from=${day(monday)}&to=${day(friday)}&time_zone=Europe/Bucharest`,
    );
    assert.equal(slots.statusCode, 200, slots.body);
    assert.ok(slots.json().data.slots.length > 10);
    const published = await t.db.query<{ purpose_code: string }>(
      `select purpose_code from consent_purpose_versions where organization_id = $1 order by purpose_code`,
      [org.json().data.id],
    );
    assert.deepEqual(
      published.rows.map((r) => r.purpose_code),
      ['org_privacy_notice', 'org_terms'],
    );
    // The clinic app has someone to sign in as: the demo administrator is a member with the admin role.
    const admin = await t.db.query<{ role_code: string }>(
      `select r.code as role_code from memberships m join users u on u.id = m.user_id join roles r on r.id = m.role_id
        where u.email = $1 and m.organization_id = $2`,
      [DEMO_ADMIN, org.json().data.id],
    );
    assert.deepEqual(admin.rows, [{ role_code: 'admin' }]);
    // The seeding identity is no superadmin afterwards.
    const su = await t.db.query(`select 1 from platform_memberships pm join users u on u.id = pm.user_id where u.email like 'demo-seed@%'`);
    assert.equal(su.rows.length, 0);

    assert.equal(await seedDemoClinic(t.app, t.rt), 'exists');
    const count = await t.db.query<{ n: number }>(`select count(*)::int as n from organizations where slug = 'demo'`);
    assert.equal(count.rows[0]!.n, 1);
  });
});
