import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, startTestApp, TEMPLATE_GRANTS, uniqueEmail, type TestApp } from './helpers.ts';
import type { TestDatabase } from '@clinic/db';

/**
 * The request context is cached per instance and checked against users.context_version and the
 * global epoch on every request (migration 0010). Each change below is made behind the API's back,
 * by direct SQL as the owner, and must be visible on the very next request, on both instances.
 */
describe('request context cache never serves a stale context', () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  before(async () => {
    database = await freshDatabase();
    a = await startTestApp({ database });
    b = await startTestApp({ database, migrate: false, issuer: a.issuer });
  });
  after(async () => {
    await b.close();
    await a.close();
    await database.drop();
  });

  const me = async (t: TestApp, token: string, org?: string) => {
    const res = await t.call('GET', '/v1/me', { token, ...(org ? { org } : {}) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data;
  };

  it('sees role permission changes, membership changes and platform roles at once on both instances', async () => {
    const org = await a.createOrg();
    const member = await a.addMember(org.id, uniqueEmail('staff'), 'specialist');
    // Warm both caches.
    assert.deepEqual((await me(a, member.token, org.id)).current_permissions, TEMPLATE_GRANTS.specialist);
    assert.deepEqual((await me(b, member.token, org.id)).current_permissions, TEMPLATE_GRANTS.specialist);

    // A role's permission set changes (the epoch moves).
    await database.db.query(
      `insert into role_permissions (role_id, permission_code, organization_id)
       select id, 'locations.manage', organization_id from roles where organization_id = $1 and code = 'specialist'`,
      [org.id],
    );
    for (const t of [a, b]) assert.ok((await me(t, member.token, org.id)).current_permissions.includes('locations.manage'));

    // The membership goes away (the user's version moves).
    await database.db.query('delete from memberships where user_id = $1', [member.userId]);
    for (const t of [a, b]) {
      const data = await me(t, member.token, org.id);
      assert.equal(data.is_staff_at_current_org, false);
      assert.deepEqual(data.current_permissions, []);
      assert.deepEqual(data.memberships, []);
    }

    // A platform role appears.
    await database.db.query(`insert into platform_memberships (user_id, role) values ($1, 'superadmin')`, [member.userId]);
    for (const t of [a, b]) assert.equal((await me(t, member.token)).is_superadmin, true);
  });

  it('sees a patient link, an organization created after a 404, and the stored organization', async () => {
    const org = await a.createOrg();
    const email = uniqueEmail('person');
    const token = await a.token(email);
    const first = await me(a, token);
    assert.deepEqual(first.patient_org_ids, []);
    await me(b, token);
    await database.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [org.id, first.id]);
    for (const t of [a, b]) assert.deepEqual((await me(t, token)).patient_org_ids, [org.id]);

    // A requested organization that does not exist yet is 404, and exists on the next request once created.
    const futureId = '01900000-0000-7000-8000-000000000001';
    assert.equal((await a.call('GET', '/v1/me', { token, org: futureId })).statusCode, 404);
    await database.db.query(`insert into organizations (id, slug, name) values ($1, $2, 'Later')`, [
      futureId,
      `later-${first.id.slice(-8)}`,
    ]);
    assert.equal((await a.call('GET', '/v1/me', { token, org: futureId })).statusCode, 200);

    // A change to the user's own row (the stored organization) moves its version; activity does not.
    const staff = await a.addMember(org.id, uniqueEmail('staff'), 'admin');
    const other = await a.createOrg();
    await database.db.query(
      `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'specialist'`,
      [staff.userId, other.id],
    );
    await me(b, staff.token);
    await database.db.query('update users set current_organization_id = $2 where id = $1', [staff.userId, other.id]);
    for (const t of [a, b]) assert.equal((await me(t, staff.token)).current_organization_id, other.id);
    const before = (await database.db.query<{ v: number }>('select context_version as v from users where id = $1', [staff.userId])).rows[0]!
      .v;
    await database.db.query('update users set last_activity = now() where id = $1', [staff.userId]);
    const afterActivity = (await database.db.query<{ v: number }>('select context_version as v from users where id = $1', [staff.userId]))
      .rows[0]!.v;
    assert.equal(afterActivity, before, 'recording activity must not invalidate the cached context');
  });
  it('never serves an erased person their old account, not even for one request', async () => {
    const org = await a.createOrg();
    await a.publishPrivacyNotice(org.id);
    const su = await a.superadmin();
    // A patient whose last request was the onboarding (first sign-in with the clinic named), cached on both.
    const email = uniqueEmail('erased-patient');
    const token = await a.token(email);
    const old = await me(a, token, org.id);
    assert.deepEqual(old.patient_org_ids, [org.id]);
    assert.equal((await me(b, token, org.id)).id, old.id);
    const erase = await a.call('POST', '/v1/gdpr/erase', { token: su, body: { user_id: old.id } });
    assert.equal(erase.statusCode, 200, erase.body);
    // The same sign-in comes back as a new, empty account: the cached entry named the erased one,
    // even where the new account's context version happens to equal the old one's.
    for (const t of [a, b]) {
      const now = await me(t, token, org.id);
      assert.notEqual(now.id, old.id, 'the erased account must not be served from the cache');
      assert.equal(now.email, email);
    }

    // An erased staff member keeps no permission for even one request, on either instance. (At a clinic
    // without a privacy notice, so that the new account is not linked as a patient there on sign-in.)
    const staffOrg = await a.createOrg();
    const staff = await a.addMember(staffOrg.id, uniqueEmail('erased-staff'), 'specialist');
    const before = await me(a, staff.token, staffOrg.id);
    assert.deepEqual(before.current_permissions, TEMPLATE_GRANTS.specialist);
    await me(b, staff.token, staffOrg.id);
    const self = await a.call('POST', '/v1/gdpr/erase', { token: staff.token, body: {} });
    assert.equal(self.statusCode, 200, self.body);
    for (const t of [a, b]) {
      const res = await t.call('GET', '/v1/patients', { token: staff.token, org: staffOrg.id });
      assert.equal(res.statusCode, 403, res.body);
      const now = await me(t, staff.token);
      assert.notEqual(now.id, before.id);
      assert.deepEqual(now.memberships, []);
    }
  });
});
