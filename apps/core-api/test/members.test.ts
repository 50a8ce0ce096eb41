import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listMembers, removeMember } from '../src/modules/members/service.ts';
import { startTestApp, uniqueEmail, type TestApp, assertError, TEMPLATE_GRANTS } from './helpers.ts';

// GET, POST /v1/organizations/{id}/members and DELETE /v1/organizations/{id}/members/{userId}
// (spec 2.4, 2.7, 4.1, 4.2, 7, 8), the last-admin rule and the audit trail of member changes.

const MEMBER_KEYS = ['confirmed', 'created_at', 'email', 'kind', 'role_code', 'role_id', 'user_id'];

describe('members', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const url = (orgId: string) => `/v1/organizations/${orgId}/members`;
  const list = (token: string, orgId: string, qs = '') => t.call('GET', `${url(orgId)}${qs}`, { token });
  const add = (token: string, orgId: string, body: unknown, headers?: Record<string, string>) =>
    t.call('POST', url(orgId), { token, body, ...(headers ? { headers } : {}) });
  const remove = (token: string, orgId: string, userId: string) => t.call('DELETE', `${url(orgId)}/${userId}`, { token });

  /** A fresh organization with one admin (the organization's clone of the admin role). */
  async function orgWithAdmin() {
    const org = await t.createOrg();
    const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
    return { org, admin };
  }

  async function audits(orgId: string, action?: string) {
    const { rows } = await t.db.query<{ action: string; actor_user_id: string; entity_type: string; entity_id: string; data: any }>(
      `select action, actor_user_id, entity_type, entity_id, data from audit_logs
       where organization_id = $1 and action like 'member.%' and ($2::text is null or action = $2) order by created_at, id`,
      [orgId, action ?? null],
    );
    return rows;
  }

  async function membershipRows(orgId: string, userId: string) {
    const { rows } = await t.db.query<{ role_code: string }>(
      `select r.code as role_code from memberships m join roles r on r.id = m.role_id where m.organization_id = $1 and m.user_id = $2`,
      [orgId, userId],
    );
    return rows;
  }

  async function userByEmail(email: string) {
    const { rows } = await t.db.query<{ id: string; email: string; kind: string; external_subject: string | null; confirmed: boolean }>(
      `select id, email, kind, external_subject, confirmed from users where lower(email) = lower($1)`,
      [email],
    );
    return rows;
  }

  describe('GET /v1/organizations/{id}/members', () => {
    let org: { id: string };
    let admin: { token: string; userId: string };
    const emails: string[] = [];
    before(async () => {
      ({ org, admin } = await orgWithAdmin());
      // Four more members, created in order, so "newest first" is their reverse.
      for (const [prefix, role] of [
        ['dora', 'specialist'],
        ['bob', 'customer_support'],
        ['carl', 'specialist'],
        ['anna', 'specialist'],
      ] as const) {
        const email = uniqueEmail(prefix);
        emails.push(email);
        const res = await add(admin.token, org.id, { email, role_code: role });
        assert.equal(res.statusCode, 201, res.body);
      }
    });

    it('answers the list envelope, newest first by default, with the member fields', async () => {
      const res = await list(admin.token, org.id);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), ['data', 'pagination']);
      assert.deepEqual(body.pagination, { page: 1, limit: 50, total: 5 });
      for (const m of body.data) assert.deepEqual(Object.keys(m).sort(), MEMBER_KEYS);
      assert.deepEqual(
        body.data.map((m: any) => m.email),
        [...emails].reverse().concat(body.data[4].email),
      );
      const first = body.data[0];
      assert.equal(first.email, emails[3]);
      assert.equal(first.role_code, 'specialist');
      assert.equal(first.kind, 'human');
      assert.equal(first.confirmed, false, 'added by email, never signed in');
      assert.match(first.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      const createdAts = body.data.map((m: any) => Date.parse(m.created_at));
      assert.deepEqual(
        createdAts,
        [...createdAts].sort((a: number, b: number) => b - a),
      );
      const self = body.data.find((m: any) => m.user_id === admin.userId);
      assert.equal(self.role_code, 'admin');
      assert.equal(self.confirmed, true);
    });

    it('paginates: page and limit, total ignoring pagination, out-of-range values clamp or reset', async () => {
      const p2 = (await list(admin.token, org.id, '?limit=2&page=2')).json();
      assert.deepEqual(p2.pagination, { page: 2, limit: 2, total: 5 });
      assert.deepEqual(
        p2.data.map((m: any) => m.email),
        [emails[1], emails[0]],
      );
      const p3 = (await list(admin.token, org.id, '?limit=2&page=3')).json();
      assert.equal(p3.data.length, 1);
      const beyond = (await list(admin.token, org.id, '?limit=2&page=9')).json();
      assert.deepEqual(beyond, { data: [], pagination: { page: 9, limit: 2, total: 5 } });
      const clamped = (await list(admin.token, org.id, '?limit=9999&page=0')).json();
      assert.deepEqual(clamped.pagination, { page: 1, limit: 500, total: 5 });
    });

    it('sorts by the allow-list (email, created_at, role_code) and 422s on anything else', async () => {
      const all = (await list(admin.token, org.id)).json().data.map((m: any) => m.email as string);
      const byEmail = (await list(admin.token, org.id, '?sort=email')).json().data.map((m: any) => m.email);
      assert.deepEqual(byEmail, [...all].sort());
      const byEmailDesc = (await list(admin.token, org.id, '?sort=-email')).json().data.map((m: any) => m.email);
      assert.deepEqual(byEmailDesc, [...all].sort().reverse());
      const byRole = (await list(admin.token, org.id, '?sort=role_code,email')).json().data.map((m: any) => `${m.role_code}:${m.email}`);
      assert.deepEqual(byRole, [...byRole].sort());
      assert.equal(byRole[0], `admin:${all.find((e: string) => e.startsWith('admin-'))}`);
      const oldest = (await list(admin.token, org.id, '?sort=created_at')).json().data.map((m: any) => m.email);
      assert.deepEqual(oldest, [...all].reverse());

      const bad = await list(admin.token, org.id, '?sort=password');
      const err = assertError(bad, 422, 'validation_failed');
      assert.match(err.fields.sort, /unknown sort field "password"; allowed: email, created_at, role_code/);
      assertError(await list(admin.token, org.id, '?sort=user_id'), 422, 'validation_failed');
    });

    it('filters by role_code, kind and q (email substring, case-insensitive); unknown keys are ignored', async () => {
      const specialists = (await list(admin.token, org.id, '?role_code=specialist')).json();
      assert.equal(specialists.pagination.total, 3);
      assert.ok(specialists.data.every((m: any) => m.role_code === 'specialist'));
      const none = (await list(admin.token, org.id, '?role_code=nonexistent')).json();
      assert.deepEqual(none, { data: [], pagination: { page: 1, limit: 50, total: 0 } });
      const bob = (await list(admin.token, org.id, `?q=${encodeURIComponent(emails[1]!.slice(0, 10).toUpperCase())}`)).json();
      assert.deepEqual(
        bob.data.map((m: any) => m.email),
        [emails[1]],
      );
      const pct = (await list(admin.token, org.id, '?q=%25')).json();
      assert.equal(pct.pagination.total, 0, 'a typed % is a literal, not a wildcard');
      assert.equal((await list(admin.token, org.id, '?kind=human')).json().pagination.total, 5);
      assert.equal((await list(admin.token, org.id, '?kind=agent')).json().pagination.total, 0);
      assert.equal((await list(admin.token, org.id, '?colour=blue&role_code=')).json().pagination.total, 5);
    });

    it('filters by created_at_after/_before (inclusive) and 422s on a malformed bound', async () => {
      const all = (await list(admin.token, org.id, '?sort=created_at')).json().data;
      const third = all[2].created_at as string;
      const after = (await list(admin.token, org.id, `?created_at_after=${encodeURIComponent(third)}`)).json();
      assert.equal(after.pagination.total, 3);
      // Timestamps on the wire have milliseconds and the column microseconds: the next millisecond bounds the third row.
      const thirdEnd = new Date(Date.parse(third) + 1).toISOString();
      const before = (await list(admin.token, org.id, `?created_at_before=${encodeURIComponent(thirdEnd)}`)).json();
      assert.equal(before.pagination.total, 3);
      const today = new Date().toISOString().slice(0, 10);
      assert.equal((await list(admin.token, org.id, `?created_at_after=${today}&created_at_before=${today}`)).json().pagination.total, 5);
      assert.equal((await list(admin.token, org.id, '?created_at_before=2000-01-01')).json().pagination.total, 0);
      const err = assertError(await list(admin.token, org.id, '?created_at_after=yesterday'), 422, 'validation_failed');
      assert.ok(err.fields.created_at_after);
    });

    it('needs organizations.manage_members: 401 without a token, 403 for a specialist, a patient or a stranger', async () => {
      assertError(await t.call('GET', url(org.id)), 401, 'unauthorized');
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      assertError(await list(specialist.token, org.id), 403, 'forbidden');
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      assertError(await list(patient.token, org.id), 403, 'forbidden');
      assertError(await list(await t.token(uniqueEmail('stranger')), org.id), 403, 'forbidden');
      await t.db.query('delete from memberships where user_id = $1', [specialist.userId]);
    });

    it('a superadmin passes without a membership', async () => {
      const res = await list(await t.superadmin(), org.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().pagination.total, 5);
    });

    it('an unknown organization is 404 organization_not_found; a malformed id is 404 not_found', async () => {
      assertError(await list(admin.token, '01900000-0000-7000-8000-0000000000ff'), 404, 'organization_not_found');
      assertError(await list(admin.token, 'not-a-uuid'), 404, 'not_found');
    });
  });

  describe('POST /v1/organizations/{id}/members', () => {
    it('adds an email that has never signed in: 201, a user row without identity, linked on first sign-in', async () => {
      const { org, admin } = await orgWithAdmin();
      const email = uniqueEmail('invitee');
      const res = await add(admin.token, org.id, { email: email.toUpperCase(), role_code: 'specialist' });
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      const m = body.data;
      assert.deepEqual(Object.keys(m).sort(), MEMBER_KEYS);
      assert.equal(m.email, email, 'stored lower-cased');
      assert.equal(m.role_code, 'specialist');
      assert.equal(m.kind, 'human');
      assert.equal(m.confirmed, false);

      const [user] = await userByEmail(email);
      assert.deepEqual(user, { id: m.user_id, email, kind: 'human', external_subject: null, confirmed: false });
      const [entry] = await audits(org.id, 'member.added');
      assert.deepEqual(entry, {
        action: 'member.added',
        actor_user_id: admin.userId,
        entity_type: 'member',
        entity_id: m.user_id,
        data: { role_id: m.role_id, role_code: 'specialist', user_created: true },
      });

      // First sign-in links the row (no second user) and GET /v1/me shows the membership.
      const me = await t.call('GET', '/v1/me', { as: email });
      assert.equal(me.statusCode, 200, me.body);
      const d = me.json().data;
      assert.equal(d.id, m.user_id);
      assert.deepEqual(d.memberships, [{ organization_id: org.id, role_id: m.role_id, role_code: 'specialist' }]);
      assert.equal(d.current_organization_id, org.id);
      assert.equal(d.current_role_code, 'specialist');
      assert.deepEqual(d.current_permissions, TEMPLATE_GRANTS.specialist);
      assert.equal((await userByEmail(email)).length, 1);
      const linked = (await list(admin.token, org.id, `?q=${encodeURIComponent(email)}`)).json().data[0];
      assert.equal(linked.confirmed, true);
    });

    it('adds an existing user (not visible to the admin before) by email, case-insensitively, reusing the row', async () => {
      const { org, admin } = await orgWithAdmin();
      const other = await t.createOrg();
      const email = uniqueEmail('existing');
      const existing = await t.addMember(other.id, email, 'admin');
      const res = await add(admin.token, org.id, { email: email.toUpperCase(), role_code: 'customer_support' });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().data.user_id, existing.userId);
      assert.equal(res.json().data.confirmed, true);
      assert.equal((await audits(org.id, 'member.added'))[0]!.data.user_created, false);
      const me = (await t.call('GET', '/v1/me', { token: existing.token })).json().data;
      assert.deepEqual(
        me.memberships.map((x: any) => [x.organization_id, x.role_code]).sort(),
        [
          [org.id, 'customer_support'],
          [other.id, 'admin'],
        ].sort(),
      );
    });

    it('one role per organization: adding again changes the role (200), never a second row; the same role is a 200 no-op', async () => {
      const { org, admin } = await orgWithAdmin();
      const email = uniqueEmail('twice');
      const first = await add(admin.token, org.id, { email, role_code: 'specialist' });
      assert.equal(first.statusCode, 201, first.body);
      const userId = first.json().data.user_id;

      const changed = await add(admin.token, org.id, { email, role_code: 'customer_support' });
      assert.equal(changed.statusCode, 200, changed.body);
      assert.equal(changed.json().data.role_code, 'customer_support');
      assert.equal(changed.json().data.user_id, userId);
      assert.deepEqual(await membershipRows(org.id, userId), [{ role_code: 'customer_support' }]);
      const [entry] = await audits(org.id, 'member.role_changed');
      assert.equal(entry!.entity_id, userId);
      assert.deepEqual(entry!.data.role_code, { from: 'specialist', to: 'customer_support' });
      assert.equal(entry!.data.role_id.to, changed.json().data.role_id);

      const same = await add(admin.token, org.id, { email, role_code: 'customer_support' });
      assert.equal(same.statusCode, 200, same.body);
      assert.deepEqual(same.json(), changed.json());
      assert.equal((await audits(org.id)).length, 2, 'a no-op writes no audit entry');
      assert.equal((await list(admin.token, org.id)).json().pagination.total, 2);
    });

    it('an unknown role_code is 400 validation_error on fields.role_code, and nothing is written', async () => {
      const { org, admin } = await orgWithAdmin();
      const email = uniqueEmail('norole');
      const err = assertError(await add(admin.token, org.id, { email, role_code: 'owner' }), 400, 'validation_error');
      assert.match(err.fields.role_code, /no role "owner"/);
      // A role of another organization or a template is not a role of this one either.
      assertError(await add(admin.token, org.id, { email, role_code: 'Admin' }), 400, 'validation_error');
      assert.deepEqual(await userByEmail(email), []);
      assert.deepEqual(await audits(org.id), []);
    });

    it('validates the body: 400 validation_error naming the field; 400 invalid_body for broken JSON', async () => {
      const { org, admin } = await orgWithAdmin();
      let err = assertError(await add(admin.token, org.id, { email: 'not-an-email', role_code: 'specialist' }), 400, 'validation_error');
      assert.ok(err.fields.email);
      err = assertError(await add(admin.token, org.id, { email: uniqueEmail() }), 400, 'validation_error');
      assert.equal(err.fields.role_code, 'is required');
      err = assertError(
        await add(admin.token, org.id, { email: uniqueEmail(), role_code: 'specialist', role_id: org.id }),
        400,
        'validation_error',
      );
      assert.equal(err.fields.role_id, 'is not a known field');
      assertError(await t.call('POST', url(org.id), { token: admin.token, rawBody: '{"email":' }), 400, 'invalid_body');
    });

    it('refuses an agent of another organization (spec 2.4): 409 principal_not_allowed', async () => {
      const { org, admin } = await orgWithAdmin();
      const home = await t.createOrg();
      const email = uniqueEmail('agent');
      await t.db.query(`insert into users (email, kind, home_organization_id) values ($1, 'agent', $2)`, [email, home.id]);
      assertError(await add(admin.token, org.id, { email, role_code: 'specialist' }), 409, 'principal_not_allowed');
      assert.deepEqual(await audits(org.id), []);
      // In its own organization it may be a member.
      const homeAdmin = await t.addMember(home.id, uniqueEmail('home-admin'), 'admin');
      const res = await add(homeAdmin.token, home.id, { email, role_code: 'specialist' });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().data.kind, 'agent');
      // The database enforces it too, for any app_rls writer (not only this route).
      const [agent] = await userByEmail(email);
      const scope = { role: 'app_rls' as const, principalId: admin.userId, orgId: org.id, permissions: ['organizations.manage_members'] };
      await assert.rejects(
        t.db.withScope(scope, (tx) =>
          tx.query(
            `insert into memberships (user_id, organization_id, role_id)
             select $2, $1, r.id from roles r where r.organization_id = $1 and r.code = 'specialist'`,
            [org.id, agent!.id],
          ),
        ),
        /may only be a member of its own organization/,
      );
    });

    it('replays with Idempotency-Key: same status and bytes, Idempotency-Replayed: true, one write', async () => {
      const { org, admin } = await orgWithAdmin();
      const body = { email: uniqueEmail('idem'), role_code: 'specialist' };
      const headers = { 'idempotency-key': `add-member-${Date.now()}` };
      const first = await add(admin.token, org.id, body, headers);
      assert.equal(first.statusCode, 201, first.body);
      assert.equal(first.headers['idempotency-replayed'], undefined);
      const again = await add(admin.token, org.id, body, headers);
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotency-replayed'], 'true');
      assert.equal(again.body, first.body);
      assert.equal((await audits(org.id, 'member.added')).length, 1);
      // Without the key the same body is a new request: the member exists, so 200.
      assert.equal((await add(admin.token, org.id, body)).statusCode, 200);
    });

    it('needs organizations.manage_members: 403 for a specialist; a superadmin passes', async () => {
      const { org } = await orgWithAdmin();
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      assertError(await add(specialist.token, org.id, { email: uniqueEmail(), role_code: 'admin' }), 403, 'forbidden');
      const su = await t.superadmin();
      const res = await add(su, org.id, { email: uniqueEmail('by-su'), role_code: 'admin' });
      assert.equal(res.statusCode, 201, res.body);
      const [entry] = await audits(org.id, 'member.added');
      assert.equal(entry!.actor_user_id, (await t.call('GET', '/v1/me', { token: su })).json().data.id);
    });
  });

  describe('superadmins hold no memberships (spec 5 rule 6)', () => {
    it('adding a superadmin as a member is refused with 409 superadmin_not_member, which says what to do; nothing is written', async () => {
      const { org, admin } = await orgWithAdmin();
      const email = uniqueEmail('member-su');
      await t.superadmin(email);
      for (const token of [admin.token, await t.superadmin()]) {
        const err = assertError(await add(token, org.id, { email, role_code: 'specialist' }), 409, 'superadmin_not_member');
        assert.match(err.message, /superadmin revoke/);
      }
      const { rows } = await t.db.query('select 1 from memberships m join users u on u.id = m.user_id where lower(u.email) = lower($1)', [
        email,
      ]);
      assert.equal(rows.length, 0);
    });
  });

  describe('DELETE /v1/organizations/{id}/members/{userId}', () => {
    it('removes a member: 204, the row is gone, audited; the user row stays', async () => {
      const { org, admin } = await orgWithAdmin();
      const member = await t.addMember(org.id, uniqueEmail('leaving'), 'specialist');
      const res = await remove(admin.token, org.id, member.userId);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assert.deepEqual(await membershipRows(org.id, member.userId), []);
      const [entry] = await audits(org.id, 'member.removed');
      assert.equal(entry!.entity_id, member.userId);
      assert.equal(entry!.actor_user_id, admin.userId);
      assert.equal(entry!.data.role_code, 'specialist');
      const me = (await t.call('GET', '/v1/me', { token: member.token })).json().data;
      assert.deepEqual(me.memberships, []);
      assertError(await remove(admin.token, org.id, member.userId), 404, 'not_found');
    });

    it('404 not_found for a user who is not a member, an unknown id or a malformed id', async () => {
      const { org, admin } = await orgWithAdmin();
      const outsider = await t.addMember((await t.createOrg()).id, uniqueEmail('outsider'), 'specialist');
      assertError(await remove(admin.token, org.id, outsider.userId), 404, 'not_found');
      assertError(await remove(admin.token, org.id, '01900000-0000-7000-8000-000000000abc'), 404, 'not_found');
      assertError(await remove(admin.token, org.id, 'nope'), 404, 'not_found');
      assert.deepEqual(await audits(org.id), []);
    });

    it('needs organizations.manage_members: 403 for a specialist; a superadmin passes', async () => {
      const { org, admin } = await orgWithAdmin();
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      assertError(await remove(specialist.token, org.id, admin.userId), 403, 'forbidden');
      assertError(await remove(specialist.token, org.id, specialist.userId), 403, 'forbidden');
      const res = await remove(await t.superadmin(), org.id, specialist.userId);
      assert.equal(res.statusCode, 204, res.body);
    });
  });

  describe('the last admin (a member whose role holds organizations.manage_members)', () => {
    it('cannot be removed or demoted (409 last_admin, nothing written), and can be once another admin exists', async () => {
      const { org, admin } = await orgWithAdmin();
      const adminEmail = (await t.call('GET', '/v1/me', { token: admin.token })).json().data.email;

      const removed = assertError(await remove(admin.token, org.id, admin.userId), 409, 'last_admin');
      assert.match(removed.message, /another member a role with that permission first/);
      // Nobody changes their own role (403); a superadmin may, but not past the last-admin rule.
      assertError(await add(admin.token, org.id, { email: adminEmail, role_code: 'specialist' }), 403, 'forbidden');
      const demoted = assertError(
        await add(await t.superadmin(), org.id, { email: adminEmail, role_code: 'specialist' }),
        409,
        'last_admin',
      );
      assert.match(demoted.message, /organizations\.manage_members/);
      // Superadmins bypass nothing here: the rule is about the organization.
      assertError(await remove(await t.superadmin(), org.id, admin.userId), 409, 'last_admin');
      assert.deepEqual(await membershipRows(org.id, admin.userId), [{ role_code: 'admin' }]);
      assert.deepEqual(await audits(org.id), []);

      const second = await add(admin.token, org.id, { email: uniqueEmail('second-admin'), role_code: 'admin' });
      assert.equal(second.statusCode, 201, second.body);
      const res = await add(await t.superadmin(), org.id, { email: adminEmail, role_code: 'specialist' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.role_code, 'specialist');
      // Now the second admin is the last one (and the demoted one can no longer manage members at all).
      assertError(await remove(admin.token, org.id, second.json().data.user_id), 403, 'forbidden');
      assertError(await remove(await t.superadmin(), org.id, second.json().data.user_id), 409, 'last_admin');
      // Promoting back and removing works while two admins exist.
      assert.equal((await add(await t.superadmin(), org.id, { email: adminEmail, role_code: 'admin' })).statusCode, 200);
      assert.equal((await remove(admin.token, org.id, second.json().data.user_id)).statusCode, 204);
    });

    it('is defined by the permission code, not the role name: a custom role holding manage_members counts', async () => {
      const { org, admin } = await orgWithAdmin();
      const su = await t.superadmin();
      const owner = await t.call('POST', `/v1/organizations/${org.id}/roles`, {
        token: su,
        body: { code: 'owner', name: 'Owner', permissions: ['organizations.manage_members'] },
      });
      assert.equal(owner.statusCode, 201, owner.body);
      const ownerMember = await add(admin.token, org.id, { email: uniqueEmail('owner'), role_code: 'owner' });
      assert.equal(ownerMember.statusCode, 201, ownerMember.body);
      // The admin may go: the owner still manages members.
      assert.equal((await remove(admin.token, org.id, admin.userId)).statusCode, 204);
      assertError(await remove(su, org.id, ownerMember.json().data.user_id), 409, 'last_admin');
      // And a role named "admin" without the permission does not count.
      const demoteAdminRole = await t.call('PATCH', `/v1/organizations/${org.id}/roles/${await roleId(org.id, 'admin')}`, {
        token: su,
        body: { permissions: ['organizations.view_directory'] },
      });
      assert.equal(demoteAdminRole.statusCode, 200, demoteAdminRole.body);
      const holder = await add(su, org.id, { email: uniqueEmail('named-admin'), role_code: 'admin' });
      assert.equal(holder.statusCode, 201);
      assertError(await remove(su, org.id, ownerMember.json().data.user_id), 409, 'last_admin');
    });

    it('concurrent demotions of two admins leave one admin: the changes are serialised per organization', async () => {
      const { org, admin } = await orgWithAdmin();
      const adminEmail = (await t.call('GET', '/v1/me', { token: admin.token })).json().data.email;
      const secondEmail = uniqueEmail('second');
      assert.equal((await add(admin.token, org.id, { email: secondEmail, role_code: 'admin' })).statusCode, 201);
      const su = await t.superadmin();
      const [a, b] = await Promise.all([
        add(su, org.id, { email: adminEmail, role_code: 'specialist' }),
        add(su, org.id, { email: secondEmail, role_code: 'specialist' }),
      ]);
      assert.deepEqual([a.statusCode, b.statusCode].sort(), [200, 409], `${a.body} ${b.body}`);
      const { rows } = await t.db.query<{ n: number }>(
        `select count(*)::int as n from memberships m join role_permissions rp on rp.role_id = m.role_id
         where m.organization_id = $1 and rp.permission_code = 'organizations.manage_members'`,
        [org.id],
      );
      assert.equal(rows[0]!.n, 1);
    });
  });

  async function roleId(orgId: string, code: string): Promise<string> {
    const { rows } = await t.db.query<{ id: string }>('select id from roles where organization_id = $1 and code = $2', [orgId, code]);
    return rows[0]!.id;
  }

  describe('tenant isolation', () => {
    it("an admin of organization A gets 403 on B's member routes", async () => {
      const a = await orgWithAdmin();
      const b = await orgWithAdmin();
      assertError(await list(a.admin.token, b.org.id), 403, 'forbidden');
      assertError(await add(a.admin.token, b.org.id, { email: uniqueEmail(), role_code: 'admin' }), 403, 'forbidden');
      assertError(await remove(a.admin.token, b.org.id, b.admin.userId), 403, 'forbidden');
      // X-Organization-ID cannot widen it: the path's organization wins.
      const res = await t.call('GET', url(b.org.id), { token: a.admin.token, org: a.org.id });
      assertError(res, 403, 'forbidden');
      assert.deepEqual(await membershipRows(b.org.id, b.admin.userId), [{ role_code: 'admin' }]);
    });

    it("row-level security hides B's members from a transaction scoped to A, even when the query names B", async () => {
      const a = await orgWithAdmin();
      const b = await orgWithAdmin();
      const me = (await t.call('GET', '/v1/me', { token: a.admin.token })).json().data;
      const scopeA = { role: 'app_rls' as const, principalId: a.admin.userId, orgId: a.org.id, permissions: me.current_permissions };
      const page = await t.db.withScope(scopeA, (tx) => listMembers(tx, b.org.id, {}));
      assert.deepEqual(page, { data: [], pagination: { page: 1, limit: 50, total: 0 } });
      const own = await t.db.withScope(scopeA, (tx) => listMembers(tx, a.org.id, {}));
      assert.equal(own.pagination.total, 1);
      await assert.rejects(
        t.db.withScope(scopeA, (tx) =>
          removeMember(tx, { ctx: { principalId: a.admin.userId } as any, ip: null }, b.org.id, b.admin.userId),
        ),
        (err: any) => err.code === 'not_found',
      );
      assert.deepEqual(await membershipRows(b.org.id, b.admin.userId), [{ role_code: 'admin' }]);
    });
  });
});
