import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { parsePicker } from '@clinic/http-kit';
import { pickOrganizationUsers } from '../src/modules/directory/queries.ts';
import { startTestApp, uniqueEmail, type TestApp, assertError } from './helpers.ts';

// GET /v1/users: the staff-directory picker (spec 2.2 picker envelope, 4.1 picker conventions, 2.7
// organizations.view_directory, 5.5 row-level isolation).

type Res = { statusCode: number; body: string; json: () => any };
interface Item {
  id: string;
  email: string;
  role_code: string;
}

/** The picker items of a 200 response, after checking the envelope has no pagination. */
function itemsOf(res: Res): Item[] {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.deepEqual(Object.keys(body), ['data'], 'a picker carries no pagination');
  for (const item of body.data) assert.deepEqual(Object.keys(item).sort(), ['email', 'id', 'role_code']);
  return body.data;
}

const emails = (items: Item[]) => items.map((i) => i.email);

describe('GET /v1/users (picker)', () => {
  let t: TestApp;
  // Org A: admin, specialist, support, a patient. Org B: its own staff, one of them also staff at A.
  const tag = randomBytes(4).toString('hex');
  const email = (name: string) => `${name}-${tag}@example.test`;
  let orgA: { id: string };
  let orgB: { id: string };
  let admin: { token: string; userId: string };
  let specialist: { token: string; userId: string };
  let support: { token: string; userId: string };
  let patient: { token: string; userId: string };
  let outsider: { token: string; userId: string };
  let both: { token: string; userId: string };

  const list = (token: string, query = '', org?: string) => t.call('GET', `/v1/users${query}`, { token, ...(org ? { org } : {}) });

  before(async () => {
    t = await startTestApp();
    orgA = await t.createOrg({ name: 'Alpha' });
    orgB = await t.createOrg({ name: 'Beta' });
    admin = await t.addMember(orgA.id, email('alice-admin'), 'admin');
    specialist = await t.addMember(orgA.id, email('sam-specialist'), 'specialist');
    support = await t.addMember(orgA.id, email('cora-support'), 'customer_support');
    patient = await t.addPatient(orgA.id, email('pat-patient'));
    outsider = await t.addMember(orgB.id, email('olga-outsider'), 'specialist');
    both = await t.addMember(orgB.id, email('bo-both'), 'admin');
    await t.db.query(
      `insert into memberships (user_id, organization_id, role_id) select $1, $2, r.id from roles r where r.organization_id = $2 and r.code = 'specialist'`,
      [both.userId, orgA.id],
    );
  });
  after(() => t.close());

  describe('access', () => {
    it('a specialist (holds organizations.view_directory) gets 200 with the staff of its organization and their roles', async () => {
      const items = itemsOf(await list(specialist.token, `?q=${tag}`));
      assert.deepEqual(
        items.map((i) => [i.email, i.role_code]),
        [
          [email('alice-admin'), 'admin'],
          [email('bo-both'), 'specialist'],
          [email('cora-support'), 'customer_support'],
          [email('sam-specialist'), 'specialist'],
        ],
      );
      assert.equal(items.find((i) => i.email === email('alice-admin'))!.id, admin.userId);
    });

    it('customer_support and admin get the same list', async () => {
      const bySpecialist = itemsOf(await list(specialist.token, `?q=${tag}`));
      assert.deepEqual(itemsOf(await list(support.token, `?q=${tag}`)), bySpecialist);
      assert.deepEqual(itemsOf(await list(admin.token, `?q=${tag}`, orgA.id)), bySpecialist);
    });

    it('a patient of the organization gets 403 forbidden', async () => {
      assertError(await list(patient.token), 403, 'forbidden');
      assertError(await list(patient.token, '', orgA.id), 403, 'forbidden');
    });

    it('a staff member of another organization gets 403 forbidden when asking for this one', async () => {
      assertError(await list(outsider.token, '', orgA.id), 403, 'forbidden');
      assertError(await list(outsider.token, `?ids=${admin.userId}`, orgA.id), 403, 'forbidden');
    });

    it('a signed-in user with no membership gets 403; without a token 401', async () => {
      assertError(await list(await t.token(uniqueEmail('nobody'))), 403, 'forbidden');
      assertError(await t.call('GET', '/v1/users'), 401, 'unauthorized');
    });

    it('an X-Organization-ID of an unknown organization is 404 organization_not_found', async () => {
      assertError(await list(specialist.token, '', '0190a000-0000-7000-8000-00000000beef'), 404, 'organization_not_found');
    });
  });

  describe('tenant isolation', () => {
    it('only members of the organization in scope: staff of another organization never appear', async () => {
      const a = emails(itemsOf(await list(specialist.token, '?limit=50')));
      assert.ok(!a.includes(email('olga-outsider')));
      assert.ok(!a.includes(email('pat-patient')), 'patients are not staff');
      const b = itemsOf(await list(outsider.token, `?q=${tag}`));
      assert.deepEqual(
        b.map((i) => [i.email, i.role_code]),
        [
          [email('bo-both'), 'admin'],
          [email('olga-outsider'), 'specialist'],
        ],
        'a user on staff at both shows the role of the organization in scope',
      );
    });

    it('not even by ids: ids of other organizations and of patients are dropped', async () => {
      const ids = [outsider.userId, patient.userId, specialist.userId].join(',');
      assert.deepEqual(emails(itemsOf(await list(admin.token, `?ids=${ids}`))), [email('sam-specialist')]);
      assert.deepEqual(itemsOf(await list(admin.token, `?ids=${outsider.userId}`)), []);
    });

    it('row-level security alone keeps the query in the scoped organization (runs as app_rls)', async () => {
      const picker = parsePicker({});
      // The service asked for organization B while the transaction is scoped to A: zero rows.
      const cross = await t.db.withScope(
        { role: 'app_rls', principalId: specialist.userId, orgId: orgA.id, permissions: ['organizations.view_directory'] },
        (tx) => pickOrganizationUsers(tx, orgB.id, picker),
      );
      assert.deepEqual(cross, []);
      // Without the permission the directory policies hide the staff (even the caller's own row, whose role is hidden).
      const none = await t.db.withScope({ role: 'app_rls', principalId: specialist.userId, orgId: orgA.id, permissions: [] }, (tx) =>
        pickOrganizationUsers(tx, orgA.id, picker),
      );
      assert.deepEqual(none, []);
    });

    it('a superadmin with X-Organization-ID sees that organization only', async () => {
      const su = await t.superadmin();
      assert.deepEqual(
        itemsOf(await list(su, `?q=${tag}`, orgB.id)).map((i) => i.email),
        [email('bo-both'), email('olga-outsider')],
      );
    });

    it('a superadmin without organization scope searches every user of the platform, with role_code ""', async () => {
      const su = await t.superadmin();
      const items = itemsOf(await list(su, `?q=${tag}`));
      assert.deepEqual(
        emails(items),
        ['alice-admin', 'bo-both', 'cora-support', 'olga-outsider', 'pat-patient', 'sam-specialist'].map(email),
      );
      assert.ok(items.every((i) => i.role_code === ''));
    });
  });

  describe('q', () => {
    it('is a case-insensitive substring of the email, sorted by email', async () => {
      assert.deepEqual(emails(itemsOf(await list(specialist.token, `?q=SPECIALIST-${tag.toUpperCase()}`))), [email('sam-specialist')]);
      assert.deepEqual(emails(itemsOf(await list(specialist.token, `?q=H-${tag.toUpperCase()}`))), [email('bo-both')]);
      assert.deepEqual(itemsOf(await list(specialist.token, `?q=no-such-${tag}`)), []);
    });

    it('is trimmed', async () => {
      assert.deepEqual(emails(itemsOf(await list(specialist.token, `?q=%20%20cora-support%20%09`))), [email('cora-support')]);
    });

    it('LIKE wildcards typed by the user match literally', async () => {
      assert.deepEqual(itemsOf(await list(specialist.token, '?q=%25')), []);
      assert.deepEqual(itemsOf(await list(specialist.token, '?q=_')), []);
    });

    it('empty (or only spaces) lists the staff, up to the limit', async () => {
      const all = itemsOf(await list(specialist.token));
      assert.deepEqual(emails(all), ['alice-admin', 'bo-both', 'cora-support', 'sam-specialist'].map(email));
      assert.deepEqual(itemsOf(await list(specialist.token, '?q=%20%20')), all);
    });
  });

  describe('ids', () => {
    it('wins over q, in the order given', async () => {
      const res = await list(specialist.token, `?q=no-such-${tag}&ids=${support.userId},${admin.userId}`);
      assert.deepEqual(emails(itemsOf(res)), [email('cora-support'), email('alice-admin')]);
    });

    it('invalid ids are silently dropped (upper case is fine)', async () => {
      const res = await list(specialist.token, `?ids=not-a-uuid,,${admin.userId.toUpperCase()},1234,%20${support.userId}%20`);
      assert.deepEqual(emails(itemsOf(res)), [email('alice-admin'), email('cora-support')]);
    });

    it('when none is valid, q applies again', async () => {
      assert.deepEqual(emails(itemsOf(await list(specialist.token, `?ids=nope,also-nope&q=alice-admin`))), [email('alice-admin')]);
    });

    it('an unknown valid id returns nothing for it', async () => {
      assert.deepEqual(itemsOf(await list(specialist.token, '?ids=0190a000-0000-7000-8000-000000000001')), []);
    });
  });

  describe('limit', () => {
    let big: { id: string };
    let token: string;
    before(async () => {
      big = await t.createOrg({ name: 'Big' });
      token = (await t.addMember(big.id, email('big-admin'), 'admin')).token;
      await t.db.query(
        `insert into users (email) select 'bulk-' || lpad(i::text, 2, '0') || '-${tag}@example.test' from generate_series(1, 59) i`,
      );
      await t.db.query(
        `insert into memberships (user_id, organization_id, role_id)
         select u.id, $1, r.id from users u, roles r
         where u.email like 'bulk-%-${tag}@example.test' and r.organization_id = $1 and r.code = 'specialist'`,
        [big.id],
      );
    });

    it('defaults to 20', async () => {
      const items = itemsOf(await list(token));
      assert.equal(items.length, 20);
      assert.equal(items[0]!.email, email('big-admin'));
      assert.equal(items[19]!.email, `bulk-19-${tag}@example.test`);
    });

    it('is honoured from 1 to 50 and clamps to 50 above', async () => {
      assert.equal(itemsOf(await list(token, '?limit=1')).length, 1);
      assert.equal(itemsOf(await list(token, '?limit=37')).length, 37);
      assert.equal(itemsOf(await list(token, '?limit=50')).length, 50);
      assert.equal(itemsOf(await list(token, '?limit=51')).length, 50);
      assert.equal(itemsOf(await list(token, '?limit=100000')).length, 50);
    });

    it('below 1 or not an integer falls back to the default', async () => {
      for (const l of ['0', '-3', 'abc', '2.5']) assert.equal(itemsOf(await list(token, `?limit=${l}`)).length, 20, `limit=${l}`);
    });

    it('also caps ids', async () => {
      const { rows } = await t.db.query<{ id: string }>(
        `select id from users where email like 'bulk-%-${tag}@example.test' order by email`,
      );
      const ids = rows.map((r) => r.id);
      assert.equal(itemsOf(await list(token, `?ids=${ids.join(',')}`)).length, 20);
      assert.equal(itemsOf(await list(token, `?ids=${ids.join(',')}&limit=3`)).length, 3);
      assert.equal(itemsOf(await list(token, `?ids=${ids.join(',')}&limit=500`)).length, 50);
    });
  });
});
