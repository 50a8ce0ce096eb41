import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/**
 * Every email address that reaches a row, from a token or a request body, is checked and normalised
 * once (http-kit normalizeEmail): RFC 5321 lengths, no control, bidi or invisible characters, one
 * stored spelling. Refused input changes nothing.
 */
describe('email addresses are validated and normalised wherever they enter', () => {
  let t: TestApp;
  let org: { id: string };
  let admin: string;
  let specialist: { userId: string };
  const longLocal = `${'a'.repeat(65)}@example.com`;
  const tooLong = `${'a'.repeat(60)}@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(7)}.com`;
  const huge = `${'x'.repeat(10_000)}@a.com`;
  const bidi = 'moc.elpmaxe@\u202eevil@example.com';
  const hidden = [
    'ana\u200b@example.com',
    'ana\u202e@example.com',
    'ana@exam\u2066ple.com',
    'ana @example.com',
    'ana@example',
    'ana..b@example.com',
  ];
  const userRows = async (pattern: string) =>
    (await t.db.query<{ n: number }>('select count(*)::int as n from users where email like $1', [pattern])).rows[0]!.n;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg();
    await t.publishPrivacyNotice(org.id);
    admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
    specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
  });
  after(() => t.close());

  const post = (url: string, body: unknown) => t.call('POST', url, { token: admin, org: org.id, body });

  it('POST /v1/patients: 400 with fields.email for addresses SMTP would not take or that hide characters; stores one spelling', async () => {
    assert.equal(tooLong.length, 255);
    for (const email of [huge, tooLong, longLocal, bidi, ...hidden]) {
      const res = await post('/v1/patients', { email });
      assertError(res, 400, 'validation_error');
      assert.ok(res.json().error.fields.email, `${JSON.stringify(email.slice(0, 40))}: ${res.body}`);
    }
    assert.equal(await userRows('%evil%'), 0);
    assert.equal(await userRows('xxxxxxxx%'), 0);
    // Exactly at the limits is fine; case, surrounding space and composed forms become one spelling.
    const atLimit = `${'a'.repeat(64)}@example.com`;
    assert.equal(dataOf(await post('/v1/patients', { email: atLimit }), 201).email, atLimit);
    const decomposed = ' Ane\u0301-Pop@Example.COM ';
    const p = dataOf(await post('/v1/patients', { email: decomposed }), 201);
    assert.equal(p.email, 'an\u00e9-pop@example.com');
    assertError(await post('/v1/patients', { email: 'AN\u00c9-POP@example.com' }), 409, 'patient_exists');
  });

  it('POST members and specialist contact addresses use the same rule', async () => {
    for (const email of [bidi, 'ana\u200b@example.com', longLocal]) {
      const res = await post(`/v1/organizations/${org.id}/members`, { email, role_code: 'support' });
      assertError(res, 400, 'validation_error');
      assert.ok(res.json().error.fields.email, res.body);
    }
    const res = await post('/v1/specialists', {
      user_id: specialist.userId,
      display_name: 'Dr. Ana',
      contact_email: 'ana\u202e@clinic.test',
    });
    assertError(res, 400, 'validation_error');
    assert.ok(res.json().error.fields.contact_email, res.body);
    const ok = dataOf(
      await post('/v1/specialists', { user_id: specialist.userId, display_name: 'Dr. Ana', contact_email: ' Ana@Clinic.TEST ' }),
      201,
    );
    assert.equal(ok.contact_email, 'ana@clinic.test');
  });

  it('a token whose email is unusable is 401 and provisions nobody', async () => {
    for (const email of [huge, longLocal, 'ana\u202e@example.com', 'ana\u2066@example.com', 'ana@localhost']) {
      const token = await t.token(email);
      const res = await t.call('GET', '/v1/me', { token });
      assertError(res, 401, 'unauthorized');
      assert.match(res.json().error.message, /identity provider/);
    }
    assert.equal(await userRows('xxxxxxxx%'), 0);
    assert.equal(await userRows(`${'a'.repeat(65)}%`), 0);
    assert.equal(await userRows('ana%@localhost'), 0);
    // A good address in an unusual spelling is stored in the one normal form.
    const token = await t.token('Jos\u0065\u0301@Example.com');
    assert.equal(dataOf(await t.call('GET', '/v1/me', { token })).email, 'jos\u00e9@example.com');
  });
});
