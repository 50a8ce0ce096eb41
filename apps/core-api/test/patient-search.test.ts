import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// GET /v1/patients?q= (spec 4.1 list conventions, 4.5 Patients): a case-insensitive substring of the name, the
// phone or the email, of the live patients of the organization in scope; pagination.total exact (migration 0070).

describe('patient search and list totals (GET /v1/patients)', () => {
  let t: TestApp;
  let org: string;
  let other: string;
  let admin: string;
  let otherAdmin: string;
  let su: string;

  /** A string no other row of the test database contains, so that a search answers exactly what a test made. */
  const tag = () => `zq${randomBytes(4).toString('hex')}`;
  const create = async (token: string, o: string, body: Record<string, unknown>) =>
    dataOf(await t.call('POST', '/v1/patients', { token, org: o, body }), 201) as { id: string; email: string; organization_id: string };
  const list = async (token: string, o: string, query: Record<string, string> = {}) => {
    const res = await t.call('GET', `/v1/patients?${new URLSearchParams({ limit: '500', ...query })}`, { token, org: o });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { data: { id: string; email: string | null; organization_id: string }[]; pagination: { total: number } };
  };
  const found = async (token: string, o: string, q: string) => {
    const page = await list(token, o, { q });
    assert.equal(page.pagination.total, page.data.length, 'the total counts exactly the matching rows');
    return page.data.map((p) => p.id).sort();
  };
  const liveInDb = async (o: string) =>
    (await t.db.query<{ n: number }>('select count(*)::int as n from patients where organization_id = $1 and deleted_at is null', [o]))
      .rows[0]!.n;
  const noticeVersion = async (o: string) =>
    (
      await t.db.query<{ v: number }>(
        `select max(version)::int as v from consent_purpose_versions where purpose_code = 'org_privacy_notice' and organization_id = $1`,
        [o],
      )
    ).rows[0]!.v;

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    other = (await t.createOrg()).id;
    for (const o of [org, other]) await t.publishPrivacyNotice(o);
    admin = (await t.addMember(org, uniqueEmail('admin'), 'admin')).token;
    otherAdmin = (await t.addMember(other, uniqueEmail('other-admin'), 'admin')).token;
    su = await t.superadmin();
    // Not staff of either clinic: the superadmin reads their patients under break-glass (spec 4.7).
    await t.breakGlass(su, org);
    await t.breakGlass(su, other);
  });
  after(() => t.close());

  it('q matches the email as a trimmed, case-insensitive substring, as it matches the name and the phone', async () => {
    const k = tag();
    const ada = await create(admin, org, {
      email: `${k}.ada@Lovelace-${k}.example`,
      first_name: 'Ada',
      last_name: `Lovelace${k}`,
      phone: '+44 20 7946 0991',
    });
    const bob = await create(admin, org, { email: `bob.${k}@example.test`, first_name: 'Bob', last_name: 'Other' });
    assert.equal(ada.email, `${k}.ada@lovelace-${k}.example`);
    assert.deepEqual(await found(admin, org, `  ${k.toUpperCase()}.ADA@ `), [ada.id]);
    assert.deepEqual(await found(admin, org, `@lovelace-${k}.EXAMPLE`), [ada.id]);
    assert.deepEqual(await found(admin, org, `.${k}@example`), [bob.id]);
    assert.deepEqual(await found(admin, org, k), [ada.id, bob.id].sort());
    // The name as "first last", and the phone (stored in E.164), as before.
    assert.deepEqual(await found(admin, org, `ada lovelace${k}`), [ada.id]);
    assert.deepEqual(await found(admin, org, '79460991'), [ada.id]);
    // Each field on its own: text that spans the last name and the phone, or the phone and the email, is no match.
    assert.deepEqual(await found(admin, org, `${k}\n+44`), []);
    assert.deepEqual(await found(admin, org, `0991\n${k}`), []);
    // LIKE wildcards are what they are: text to find.
    assert.deepEqual(await found(admin, org, `${k}%`), []);
    assert.deepEqual(await found(admin, org, `${k}_ada`), []);
    // The person's address changes (at the identity provider, then here): the new one is found, the old one not.
    await t.db.query('update users set email = $1 where lower(email) = $2', [`${k}.countess@example.test`, ada.email]);
    assert.deepEqual(await found(admin, org, `${k}.countess`), [ada.id]);
    assert.deepEqual(await found(admin, org, `${k}.ada@`), []);
    assert.equal(dataOf(await t.call('GET', `/v1/patients/${ada.id}`, { token: admin, org })).email, `${k}.countess@example.test`);
  });

  it("another clinic's patients never match, not even the same person's record there; superadmins see the clinic in scope", async () => {
    const k = tag();
    const email = `${k}@example.test`;
    const here = await create(admin, org, { email, first_name: 'Same' });
    const there = await create(otherAdmin, other, { email, first_name: 'Same' });
    const onlyThere = await create(otherAdmin, other, { email: `${k}.elsewhere@example.test`, last_name: `Else${k}` });
    assert.deepEqual(await found(admin, org, k), [here.id]);
    assert.deepEqual(await found(otherAdmin, other, k), [there.id, onlyThere.id].sort());
    assert.deepEqual(await found(su, org, k), [here.id]);
    assert.deepEqual(await found(su, other, `else${k}`), [onlyThere.id]);
    // An admin of one clinic naming the other in scope is refused before any search.
    assertError(await t.call('GET', `/v1/patients?q=${k}`, { token: admin, org: other }), 403, 'forbidden');
  });

  it('a soft-deleted patient is neither found nor counted; revived by its person, it is both again', async () => {
    const k = tag();
    const email = `${k}@example.test`;
    const p = await create(admin, org, { email, last_name: `Gone${k}` });
    const before = (await list(admin, org)).pagination.total;
    assert.equal(before, await liveInDb(org));
    assert.equal((await t.call('DELETE', `/v1/patients/${p.id}`, { token: admin, org })).statusCode, 204);
    assert.deepEqual(await found(admin, org, k), []);
    assert.deepEqual(await found(admin, org, `gone${k}`), []);
    assert.equal((await list(admin, org)).pagination.total, before - 1);
    // The person comes back through the portal: the same record, live again, searchable by its current email.
    const token = await t.token(email);
    const grants = [
      { organization_id: org, purpose_code: 'org_privacy_notice', purpose_version: await noticeVersion(org), source: 'signup_checkbox' },
    ];
    const back = dataOf(await t.call('POST', '/v1/portal/onboard', { token, body: { organization_id: org, grants } }), 201);
    assert.equal(back.patient_status, 'revived');
    assert.deepEqual(await found(admin, org, k), [p.id]);
    assert.equal((await list(admin, org)).pagination.total, before);
  });

  it("an erased person's old email matches nothing: erased at one clinic, or anonymised", async () => {
    const k = tag();
    // Patient at both clinics: the erasure at this one leaves the other's record (and its search) alone.
    const both = `${k}.both@example.test`;
    const here = await create(admin, org, { email: both });
    const there = await create(otherAdmin, other, { email: both });
    dataOf(await t.call('POST', '/v1/gdpr/erase', { token: admin, org, body: { patient_id: here.id } }));
    assert.deepEqual(await found(admin, org, `${k}.both`), []);
    assert.deepEqual(await found(otherAdmin, other, `${k}.both`), [there.id]);
    // A patient of this clinic only: the account is anonymised, and neither the old address nor the placeholder is found.
    const lone = await create(admin, org, { email: `${k}.lone@example.test`, first_name: `Lone${k}` });
    const erased = dataOf(await t.call('POST', '/v1/gdpr/erase', { token: admin, org, body: { patient_id: lone.id } }));
    assert.equal(erased.anonymised, true);
    assert.deepEqual(await found(admin, org, `${k}.lone`), []);
    assert.deepEqual(await found(admin, org, 'deleted-'), []);
    assert.deepEqual(await found(admin, org, '@invalid'), []);
    // Nothing of the address is left on the erased records.
    const { rows } = await t.db.query<{ n: number }>(
      `select count(*)::int as n from patients where id = any($1::uuid[]) and (user_email is not null or search_text like '%' || $2 || '%')`,
      [[here.id, lone.id], k],
    );
    assert.equal(rows[0]!.n, 0);
  });

  it('pagination.total is exact: unfiltered, with q and with a date range, also after concurrent creations', async () => {
    const k = tag();
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, i) => create(admin, org, { email: `${k}.${i}@example.test`, last_name: `Batch${k}` })),
    );
    for (const p of made.slice(0, 2)) assert.equal((await t.call('DELETE', `/v1/patients/${p.id}`, { token: admin, org })).statusCode, 204);
    const all = await list(admin, org);
    assert.equal(all.pagination.total, await liveInDb(org));
    assert.equal((await list(su, org)).pagination.total, all.pagination.total);
    assert.equal((await list(otherAdmin, other)).pagination.total, await liveInDb(other));
    const page = await list(admin, org, { q: `batch${k}`, limit: '4', page: '2', sort: 'created_at' });
    assert.equal(page.pagination.total, 10);
    assert.equal(page.data.length, 4);
    const beyond = await list(admin, org, { q: `batch${k}`, limit: '4', page: '9' });
    assert.deepEqual([beyond.data.length, beyond.pagination.total], [0, 10]);
    const since = (
      await t.db.query<{ at: string }>(
        `select to_char(min(created_at) at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at from patients where id = any($1::uuid[])`,
        [made.map((p) => p.id)],
      )
    ).rows[0]!.at;
    const recent = await list(admin, org, { created_at_after: since });
    const { rows } = await t.db.query<{ n: number }>(
      'select count(*)::int as n from patients where organization_id = $1 and deleted_at is null and created_at >= $2::timestamptz',
      [org, since],
    );
    assert.equal(recent.pagination.total, rows[0]!.n);
    assert.ok(recent.pagination.total >= 10);
  });

  it('q with a NUL character is refused (422), and an encoded lone surrogate is harmless: never a 5xx', async () => {
    const nul = await t.call('GET', '/v1/patients?q=a%00b', { token: admin, org });
    const err = assertError(nul, 422, 'validation_failed');
    assert.ok(err.fields?.q, nul.body);
    for (const encoded of ['%ED%A0%80', '%ED%B0%80', 'x%ED%A0%80y']) {
      const res = await t.call('GET', `/v1/patients?q=${encoded}`, { token: admin, org });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().pagination.total, 0);
    }
  });
});
