import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listRoles } from '../src/modules/roles/service.ts';
import { startTestApp, uniqueEmail, type TestApp, assertError, TEMPLATE_GRANTS } from './helpers.ts';

// GET, POST /v1/organizations/{id}/roles, PATCH and DELETE /v1/organizations/{id}/roles/{roleId}
// (spec 2.7, 4.1, 4.2, 7): system clones and custom roles, permission editing, the last-admin rule.

const ROLE_KEYS = ['code', 'created_at', 'id', 'is_system', 'name', 'permissions'];
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('roles', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const url = (orgId: string) => `/v1/organizations/${orgId}/roles`;
  const list = (token: string, orgId: string, qs = '') => t.call('GET', `${url(orgId)}${qs}`, { token });
  const create = (token: string, orgId: string, body: unknown, headers?: Record<string, string>) =>
    t.call('POST', url(orgId), { token, body, ...(headers ? { headers } : {}) });
  const patch = (token: string, orgId: string, roleId: string, body: unknown) =>
    t.call('PATCH', `${url(orgId)}/${roleId}`, { token, body });
  const del = (token: string, orgId: string, roleId: string) => t.call('DELETE', `${url(orgId)}/${roleId}`, { token });

  async function orgWithAdmin() {
    const org = await t.createOrg();
    const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
    return { org, admin };
  }

  async function audits(orgId: string, action?: string) {
    const { rows } = await t.db.query<{ action: string; actor_user_id: string; entity_id: string; data: any }>(
      `select action, actor_user_id, entity_id, data from audit_logs
       where organization_id = $1 and action like 'role.%' and ($2::text is null or action = $2) order by created_at, id`,
      [orgId, action ?? null],
    );
    return rows;
  }

  async function roleOf(orgId: string, code: string) {
    const res = await list(await t.superadmin(), orgId, `?code=${code}`);
    return res.json().data[0] as { id: string; code: string; name: string; is_system: boolean; permissions: string[] };
  }

  const permissionsOf = async (token: string, orgId: string) =>
    (await t.call('GET', '/v1/me', { token, org: orgId })).json().data.current_permissions as string[];

  describe('GET /v1/organizations/{id}/roles', () => {
    it('lists the system clones with sorted permission codes, in the list envelope', async () => {
      const { org, admin } = await orgWithAdmin();
      const res = await list(admin.token, org.id, '?sort=code');
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(body.pagination, { page: 1, limit: 50, total: 3 });
      for (const r of body.data) {
        assert.deepEqual(Object.keys(r).sort(), ROLE_KEYS);
        assert.match(r.id, UUID_V7);
        assert.equal(r.is_system, true);
        assert.deepEqual(r.permissions, [...r.permissions].sort());
      }
      assert.deepEqual(
        body.data.map((r: any) => r.code),
        ['admin', 'customer_support', 'specialist'],
      );
      const adminRole = body.data[0];
      assert.equal(adminRole.name, 'Administrator');
      assert.ok(adminRole.permissions.includes('organizations.manage_members'));
      assert.deepEqual(body.data[2].permissions, TEMPLATE_GRANTS.specialist);
      // The same as the database holds for this organization's clones, and no template.
      const { rows } = await t.db.query<{ id: string }>('select id from roles where organization_id = $1 order by code', [org.id]);
      assert.deepEqual(
        body.data.map((r: any) => r.id),
        rows.map((r) => r.id),
      );
    });

    it('includes custom roles; sorts by the allow-list; filters is_system and code; 422 on an unknown sort field', async () => {
      const { org, admin } = await orgWithAdmin();
      assert.equal((await create(admin.token, org.id, { code: 'front_desk', name: 'Front desk', permissions: [] })).statusCode, 201);
      const newest = (await list(admin.token, org.id)).json();
      assert.equal(newest.pagination.total, 4);
      assert.equal(newest.data[0].code, 'front_desk', 'newest first by default');
      assert.equal(newest.data[0].is_system, false);
      assert.deepEqual(
        (await list(admin.token, org.id, '?sort=-name&limit=2')).json().data.map((r: any) => r.name),
        ['Specialist', 'Front desk'],
      );
      assert.deepEqual(
        (await list(admin.token, org.id, '?is_system=false')).json().data.map((r: any) => r.code),
        ['front_desk'],
      );
      assert.equal((await list(admin.token, org.id, '?is_system=true')).json().pagination.total, 3);
      const err = assertError(await list(admin.token, org.id, '?sort=permissions'), 422, 'validation_failed');
      assert.match(err.fields.sort, /allowed: code, name, created_at/);
    });

    it('needs organizations.manage_members: 403 for a specialist and for the admin of another organization; superadmin passes', async () => {
      const { org } = await orgWithAdmin();
      const other = await orgWithAdmin();
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      assertError(await list(specialist.token, org.id), 403, 'forbidden');
      assertError(await list(other.admin.token, org.id), 403, 'forbidden');
      assertError(await t.call('GET', url(org.id)), 401, 'unauthorized');
      const res = await list(await t.superadmin(), org.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().pagination.total, 3);
    });

    it("row-level security hides another organization's roles from a transaction scoped to this one", async () => {
      const a = await orgWithAdmin();
      const b = await orgWithAdmin();
      const perms = await permissionsOf(a.admin.token, a.org.id);
      const scopeA = { role: 'app_rls' as const, principalId: a.admin.userId, orgId: a.org.id, permissions: perms };
      assert.equal((await t.db.withScope(scopeA, (tx) => listRoles(tx, b.org.id, {}))).pagination.total, 0);
      assert.equal((await t.db.withScope(scopeA, (tx) => listRoles(tx, a.org.id, {}))).pagination.total, 3);
    });
  });

  describe('POST /v1/organizations/{id}/roles', () => {
    it('creates a custom role: 201, is_system false, permissions de-duplicated and sorted, audited', async () => {
      const { org, admin } = await orgWithAdmin();
      const res = await create(admin.token, org.id, {
        code: 'therapist_lead',
        name: 'Lead therapist',
        permissions: ['organizations.view_directory', 'audit_log.view_org', 'organizations.view_directory'],
      });
      assert.equal(res.statusCode, 201, res.body);
      const role = res.json().data;
      assert.deepEqual(Object.keys(role).sort(), ROLE_KEYS);
      assert.equal(role.code, 'therapist_lead');
      assert.equal(role.is_system, false);
      assert.deepEqual(role.permissions, ['audit_log.view_org', 'organizations.view_directory']);
      const [entry] = await audits(org.id, 'role.created');
      assert.deepEqual(entry, {
        action: 'role.created',
        actor_user_id: admin.userId,
        entity_id: role.id,
        data: { code: 'therapist_lead', name: 'Lead therapist', permissions: ['audit_log.view_org', 'organizations.view_directory'] },
      });
      // Assignable at once, and its holders get exactly its permissions.
      const email = uniqueEmail('lead');
      assert.equal(
        (await t.call('POST', `/v1/organizations/${org.id}/members`, { token: admin.token, body: { email, role_code: 'therapist_lead' } }))
          .statusCode,
        201,
      );
      assert.deepEqual(await permissionsOf(await t.token(email), org.id), ['audit_log.view_org', 'organizations.view_directory']);
    });

    it('409 role_code_taken for a code the organization has (custom or system); other organizations do not matter', async () => {
      const { org, admin } = await orgWithAdmin();
      assert.equal((await create(admin.token, org.id, { code: 'nurse', name: 'Nurse', permissions: [] })).statusCode, 201);
      assertError(await create(admin.token, org.id, { code: 'nurse', name: 'Nurse 2', permissions: [] }), 409, 'role_code_taken');
      assertError(await create(admin.token, org.id, { code: 'admin', name: 'Second admin', permissions: [] }), 409, 'role_code_taken');
      const other = await orgWithAdmin();
      assert.equal((await create(other.admin.token, other.org.id, { code: 'nurse', name: 'Nurse', permissions: [] })).statusCode, 201);
      assert.equal((await audits(org.id, 'role.created')).length, 1);
    });

    it('400 validation_error: unknown permission codes (fields.permissions), a bad code, missing or unknown fields', async () => {
      const { org, admin } = await orgWithAdmin();
      let err = assertError(
        await create(admin.token, org.id, { code: 'x', name: 'X', permissions: ['organizations.update', 'rockets.launch'] }),
        400,
        'validation_error',
      );
      assert.match(err.fields.permissions, /unknown permission codes: rockets\.launch/);
      for (const code of ['Nurse', '1nurse', 'nurse-lead', '', 'a'.repeat(64)]) {
        err = assertError(await create(admin.token, org.id, { code, name: 'N', permissions: [] }), 400, 'validation_error');
        assert.ok(err.fields.code, code);
      }
      err = assertError(await create(admin.token, org.id, { code: 'nurse', permissions: [] }), 400, 'validation_error');
      assert.equal(err.fields.name, 'is required');
      err = assertError(
        await create(admin.token, org.id, { code: 'nurse', name: 'N', permissions: [], is_system: true }),
        400,
        'validation_error',
      );
      assert.equal(err.fields.is_system, 'is not a known field');
      assert.equal((await list(admin.token, org.id)).json().pagination.total, 3);
      assert.deepEqual(await audits(org.id), []);
    });

    it('honours Idempotency-Key; 403 for a specialist; a superadmin passes', async () => {
      const { org, admin } = await orgWithAdmin();
      const body = { code: 'billing', name: 'Billing', permissions: ['export.csv'] };
      const headers = { 'idempotency-key': `create-role-${Date.now()}` };
      const first = await create(admin.token, org.id, body, headers);
      assert.equal(first.statusCode, 201, first.body);
      const again = await create(admin.token, org.id, body, headers);
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotency-replayed'], 'true');
      assert.equal(again.body, first.body);
      assert.equal((await audits(org.id, 'role.created')).length, 1);

      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      assertError(await create(specialist.token, org.id, { code: 'mine', name: 'Mine', permissions: [] }), 403, 'forbidden');
      assert.equal((await create(await t.superadmin(), org.id, { code: 'by_su', name: 'By superadmin', permissions: [] })).statusCode, 201);
    });
  });

  describe('PATCH /v1/organizations/{id}/roles/{roleId}', () => {
    it('renames and replaces the permission set of a custom role; the change is audited as a diff and applies at once', async () => {
      const { org, admin } = await orgWithAdmin();
      const created = (
        await create(admin.token, org.id, { code: 'nurse', name: 'Nurse', permissions: ['organizations.view_directory'] })
      ).json().data;
      const email = uniqueEmail('nurse');
      await t.call('POST', `/v1/organizations/${org.id}/members`, { token: admin.token, body: { email, role_code: 'nurse' } });

      const res = await patch(admin.token, org.id, created.id, {
        code: 'senior_nurse',
        name: 'Senior nurse',
        permissions: ['patients.view_org', 'audit_log.view_org'],
      });
      assert.equal(res.statusCode, 200, res.body);
      const role = res.json().data;
      assert.equal(role.id, created.id);
      assert.equal(role.code, 'senior_nurse');
      assert.equal(role.name, 'Senior nurse');
      assert.deepEqual(role.permissions, ['audit_log.view_org', 'patients.view_org']);
      const [entry] = await audits(org.id, 'role.updated');
      assert.equal(entry!.entity_id, created.id);
      assert.deepEqual(entry!.data, {
        code: 'nurse',
        changes: {
          code: { from: 'nurse', to: 'senior_nurse' },
          name: { from: 'Nurse', to: 'Senior nurse' },
          permissions: { added: ['audit_log.view_org', 'patients.view_org'], removed: ['organizations.view_directory'] },
        },
      });
      const me = (await t.call('GET', '/v1/me', { as: email, org: org.id })).json().data;
      assert.equal(me.current_role_code, 'senior_nurse');
      assert.deepEqual(me.current_permissions, ['audit_log.view_org', 'patients.view_org']);
    });

    it('system roles: name and permissions are editable, the code is not (409 system_role_immutable)', async () => {
      const { org, admin } = await orgWithAdmin();
      const specialist = await roleOf(org.id, 'specialist');
      const err = assertError(await patch(admin.token, org.id, specialist.id, { code: 'therapist' }), 409, 'system_role_immutable');
      assert.match(err.message, /system role/);
      // Sending the same code is no change at all.
      const res = await patch(admin.token, org.id, specialist.id, {
        code: 'specialist',
        name: 'Therapist',
        permissions: ['organizations.view_directory', 'consents.view_org'],
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.code, 'specialist');
      assert.equal(res.json().data.name, 'Therapist');
      assert.deepEqual(res.json().data.permissions, ['consents.view_org', 'organizations.view_directory']);
      assert.equal(res.json().data.is_system, true);
      assert.equal((await audits(org.id, 'role.updated')).length, 1);
    });

    it('an empty or unchanged patch is 200 with the role and writes no audit entry', async () => {
      const { org, admin } = await orgWithAdmin();
      const role = await roleOf(org.id, 'customer_support');
      for (const body of [{}, { name: role.name }, { permissions: [...role.permissions].reverse() }]) {
        const res = await patch(admin.token, org.id, role.id, body);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json().data.permissions, role.permissions);
      }
      assert.deepEqual(await audits(org.id), []);
    });

    it('409 role_code_taken, 400 on unknown permissions, 404 for a role of another organization or unknown id', async () => {
      const { org, admin } = await orgWithAdmin();
      const nurse = (await create(admin.token, org.id, { code: 'nurse', name: 'Nurse', permissions: [] })).json().data;
      assertError(await patch(admin.token, org.id, nurse.id, { code: 'admin' }), 409, 'role_code_taken');
      const err = assertError(await patch(admin.token, org.id, nurse.id, { permissions: ['nope.nope'] }), 400, 'validation_error');
      assert.ok(err.fields.permissions);
      assertError(await patch(admin.token, org.id, nurse.id, { name: '' }), 400, 'validation_error');
      const other = await t.createOrg();
      const foreign = await roleOf(other.id, 'specialist');
      assertError(await patch(admin.token, org.id, foreign.id, { name: 'Mine now' }), 404, 'not_found');
      assertError(await patch(admin.token, org.id, '01900000-0000-7000-8000-000000000abc', { name: 'X' }), 404, 'not_found');
      assert.equal((await roleOf(other.id, 'specialist')).name, 'Specialist');
      // The templates (no organization) are not this organization's roles either.
      const { rows } = await t.db.query<{ id: string }>(`select id from roles where organization_id is null and code = 'admin'`);
      assertError(await patch(admin.token, org.id, rows[0]!.id, { name: 'Template' }), 404, 'not_found');
      assert.deepEqual(await audits(org.id, 'role.updated'), []);
    });

    it('last_admin: manage_members cannot leave the only role that gives it to members, until another role gives it too', async () => {
      const { org, admin } = await orgWithAdmin();
      const adminRole = await roleOf(org.id, 'admin');
      const without = adminRole.permissions.filter((p) => p !== 'organizations.manage_members');
      const err = assertError(await patch(admin.token, org.id, adminRole.id, { permissions: without }), 409, 'last_admin');
      assert.match(err.message, /first/);
      assertError(await patch(await t.superadmin(), org.id, adminRole.id, { permissions: [] }), 409, 'last_admin');
      assert.deepEqual((await roleOf(org.id, 'admin')).permissions, adminRole.permissions);
      assert.deepEqual(await audits(org.id), []);

      // A role nobody holds may lose it freely.
      const owner = (
        await create(admin.token, org.id, { code: 'owner', name: 'Owner', permissions: ['organizations.manage_members'] })
      ).json().data;
      const ownerPatched = await patch(admin.token, org.id, owner.id, { permissions: [] });
      assert.equal(ownerPatched.statusCode, 200, ownerPatched.body);
      // Once a member holds it through another role, the admin role may lose it.
      assert.equal((await patch(admin.token, org.id, owner.id, { permissions: ['organizations.manage_members'] })).statusCode, 200);
      const ownerEmail = uniqueEmail('owner');
      await t.call('POST', `/v1/organizations/${org.id}/members`, { token: admin.token, body: { email: ownerEmail, role_code: 'owner' } });
      const res = await patch(admin.token, org.id, adminRole.id, { permissions: without });
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(!res.json().data.permissions.includes('organizations.manage_members'));
      // The former admin lost the permission with the request that removed it.
      assertError(await t.call('GET', `/v1/organizations/${org.id}/members`, { token: admin.token }), 403, 'forbidden');
      // Now the owner role is the only one giving it to members.
      assertError(await patch(await t.token(ownerEmail), org.id, owner.id, { permissions: [] }), 409, 'last_admin');
    });

    it('403 for a specialist and for the admin of another organization', async () => {
      const { org } = await orgWithAdmin();
      const other = await orgWithAdmin();
      const role = await roleOf(org.id, 'specialist');
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      assertError(await patch(specialist.token, org.id, role.id, { permissions: ['organizations.manage_members'] }), 403, 'forbidden');
      assertError(await patch(other.admin.token, org.id, role.id, { name: 'Hijacked' }), 403, 'forbidden');
      assert.equal((await roleOf(org.id, 'specialist')).name, 'Specialist');
    });
  });

  describe('DELETE /v1/organizations/{id}/roles/{roleId}', () => {
    it('deletes an unused custom role: 204, gone from the list, audited', async () => {
      const { org, admin } = await orgWithAdmin();
      const role = (await create(admin.token, org.id, { code: 'temp', name: 'Temp', permissions: ['organizations.view_directory'] })).json()
        .data;
      const res = await del(admin.token, org.id, role.id);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assert.equal((await list(admin.token, org.id, '?code=temp')).json().pagination.total, 0);
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from role_permissions where role_id = $1', [role.id]);
      assert.equal(rows[0]!.n, 0);
      const [entry] = await audits(org.id, 'role.deleted');
      assert.deepEqual(entry, {
        action: 'role.deleted',
        actor_user_id: admin.userId,
        entity_id: role.id,
        data: { code: 'temp', name: 'Temp', permissions: ['organizations.view_directory'] },
      });
      assertError(await del(admin.token, org.id, role.id), 404, 'not_found');
    });

    it('409 system_role_immutable for system roles, 409 role_in_use while a member holds the role', async () => {
      const { org, admin } = await orgWithAdmin();
      for (const code of ['specialist', 'customer_support', 'admin']) {
        assertError(await del(admin.token, org.id, (await roleOf(org.id, code)).id), 409, 'system_role_immutable');
      }
      const role = (await create(admin.token, org.id, { code: 'nurse', name: 'Nurse', permissions: [] })).json().data;
      const email = uniqueEmail('nurse');
      await t.call('POST', `/v1/organizations/${org.id}/members`, { token: admin.token, body: { email, role_code: 'nurse' } });
      const err = assertError(await del(admin.token, org.id, role.id), 409, 'role_in_use');
      assert.match(err.message, /another role first/);
      assert.deepEqual(await audits(org.id, 'role.deleted'), []);
      // Reassign, then delete.
      await t.call('POST', `/v1/organizations/${org.id}/members`, { token: admin.token, body: { email, role_code: 'specialist' } });
      assert.equal((await del(admin.token, org.id, role.id)).statusCode, 204);
    });

    it('404 for a role of another organization or a malformed id; 403 for a specialist', async () => {
      const { org, admin } = await orgWithAdmin();
      const other = await orgWithAdmin();
      const foreign = (await create(other.admin.token, other.org.id, { code: 'nurse', name: 'Nurse', permissions: [] })).json().data;
      assertError(await del(admin.token, org.id, foreign.id), 404, 'not_found');
      assertError(await del(admin.token, org.id, 'xyz'), 404, 'not_found');
      assert.equal((await roleOf(other.org.id, 'nurse')).id, foreign.id);
      const specialist = await t.addMember(other.org.id, uniqueEmail('spec'), 'specialist');
      assertError(await del(specialist.token, other.org.id, foreign.id), 403, 'forbidden');
      assertError(await del(admin.token, other.org.id, foreign.id), 403, 'forbidden');
      assert.equal((await del(await t.superadmin(), other.org.id, foreign.id)).statusCode, 204);
    });
  });
});
