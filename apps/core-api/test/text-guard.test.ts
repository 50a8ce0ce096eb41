import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, startTestApp, type TestApp, uniqueEmail, uniqueSlug } from './helpers.ts';

// Text no column can store (a NUL character, a UTF-16 surrogate without its pair) is refused at the
// edge in the spec's envelope: a body 400 validation_error naming the field, a query 422
// validation_failed, a path 404, a token claim 401. Before the guard these reached PostgreSQL and
// answered 500. The JSON escapes below keep the bytes exactly as a client would send them.
const NUL = '\\u0000';
const LONE_HIGH = '\\ud800';
const LONE_LOW = '\\udc00';

describe('unstorable text is refused at the edge', () => {
  let t: TestApp;
  let su: string;
  let orgCount: () => Promise<number>;

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    orgCount = async () => (await t.db.query<{ n: number }>('select count(*)::int as n from organizations')).rows[0]!.n;
  });
  after(() => t?.close());

  for (const [label, bad] of [
    ['a NUL character', NUL],
    ['an unpaired high surrogate', LONE_HIGH],
    ['an unpaired low surrogate', LONE_LOW],
  ] as const) {
    it(`a JSON body field holding ${label}: 400 validation_error naming the field, nothing created`, async () => {
      const before = await orgCount();
      const res = await t.call('POST', '/v1/organizations', {
        token: su,
        rawBody: `{"name":"Clinic ${bad} A","slug":"${uniqueSlug()}"}`,
      });
      const err = assertError(res, 400, 'validation_error');
      assert.ok(err.fields?.name, res.body);
      assert.equal(await orgCount(), before);
    });

    it(`a query string holding ${label}: 422 validation_failed`, async () => {
      const encoded = bad === NUL ? '%00' : encodeURIComponent('x').concat(bad === LONE_HIGH ? '%ED%A0%80' : '%ED%B0%80');
      const res = await t.call('GET', `/v1/organizations?q=${encoded}`, { token: su });
      // %ED%A0%80 is a surrogate encoded as UTF-8, which is not UTF-8 at all: the decoder gives U+FFFD,
      // so only the NUL case reaches the guard; the others must simply not fail.
      if (bad === NUL) {
        const err = assertError(res, 422, 'validation_failed');
        assert.ok(err.fields?.q, res.body);
      } else assert.ok(res.statusCode < 500, res.body);
    });
  }

  it('a key of a JSON object holding a NUL character is refused too', async () => {
    const res = await t.call('PATCH', '/v1/me', { as: uniqueEmail(), rawBody: `{"preferred_language":"en","x${NUL}":1}` });
    assertError(res, 400, 'validation_error');
  });

  it('a path parameter holding a NUL character names nothing: 404', async () => {
    const res = await t.call('GET', '/v1/organizations/%00', { token: su });
    assertError(res, 404, 'not_found');
  });

  it('a validly signed token whose sub or email holds a NUL character: 401, and no user row is made', async () => {
    const users = async () => (await t.db.query<{ n: number }>('select count(*)::int as n from users')).rows[0]!.n;
    const before = await users();
    const badEmail = await t.issuer.sign(`x\u0000${uniqueEmail()}`);
    assertError(await t.call('GET', '/v1/me', { token: badEmail }), 401, 'unauthorized');
    const badSubject = await t.issuer.sign(uniqueEmail(), { subject: 'sub\u0000ject' });
    assertError(await t.call('GET', '/v1/me', { token: badSubject }), 401, 'unauthorized');
    const loneSurrogate = await t.issuer.sign(`\ud800${uniqueEmail()}`);
    assertError(await t.call('GET', '/v1/me', { token: loneSurrogate }), 401, 'unauthorized');
    assert.equal(await users(), before);
  });

  it('well-formed text outside the basic plane passes (a surrogate pair is not refused)', async () => {
    const res = await t.call('POST', '/v1/organizations', { token: su, body: { name: 'Clinica 🦷', slug: uniqueSlug() } });
    assert.equal(res.statusCode, 201, res.body);
  });
});
