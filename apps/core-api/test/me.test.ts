import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NIL_UUID } from '@clinic/db';
import { startTestApp, uniqueEmail, type TestApp, TEMPLATE_GRANTS } from './helpers.ts';

// GET /v1/me (spec 2.3, 4.4) and PUT /v1/me/switch-organization (spec 4.4), with the organization
// context order of spec 4.1.

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const ADMIN_CODES = TEMPLATE_GRANTS.admin!;
const STAFF_CODES = TEMPLATE_GRANTS.specialist!;

const sorted = (xs: readonly string[]) => [...xs].sort();

describe('GET /v1/me and PUT /v1/me/switch-organization', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  async function me(token: string, org?: string) {
    const res = await t.call('GET', '/v1/me', { token, ...(org ? { org } : {}) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data;
  }

  async function roleId(orgId: string, code: string): Promise<string> {
    const { rows } = await t.db.query<{ id: string }>('select id from roles where organization_id = $1 and code = $2', [orgId, code]);
    return rows[0]!.id;
  }

  async function storedOrg(userId: string): Promise<string | null> {
    const { rows } = await t.db.query<{ current_organization_id: string | null }>(
      'select current_organization_id from users where id = $1',
      [userId],
    );
    return rows[0]!.current_organization_id;
  }

  async function switchAudits(userId: string) {
    const { rows } = await t.db.query<{ organization_id: string | null; entity_type: string; entity_id: string | null }>(
      `select organization_id, entity_type, entity_id from audit_logs where action = 'user.switched_organization' and actor_user_id = $1 order by created_at`,
      [userId],
    );
    return rows;
  }

  const switchTo = (token: string, body: unknown) => t.call('PUT', '/v1/me/switch-organization', { token, body });

  function assertError(res: { statusCode: number; body: string; json: () => any }, status: number, code: string) {
    assert.equal(res.statusCode, status, res.body);
    const err = res.json().error;
    assert.equal(err.code, code, res.body);
    assert.equal(typeof err.message, 'string');
    assert.ok(err.message.length > 0);
    return err;
  }

  describe('GET /v1/me', () => {
    it('returns every field of spec 2.3 with the right types and values', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const email = uniqueEmail('shape');
      const member = await t.addMember(a.id, email, 'admin');
      await t.addPatient(b.id, email);

      const res = await t.call('GET', '/v1/me', { token: member.token });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      const d = body.data;
      assert.deepEqual(
        sorted(Object.keys(d)),
        sorted([
          'id',
          'email',
          'is_superadmin',
          'platform_roles',
          'confirmed',
          'last_activity',
          'current_organization_id',
          'memberships',
          'current_role_code',
          'current_permissions',
          'is_staff_at_current_org',
          'is_patient_at_current_org',
          'patient_org_ids',
          'preferred_language',
        ]),
      );
      assert.match(d.id, UUID_V7);
      assert.equal(d.id, member.userId);
      assert.equal(d.email, email);
      assert.equal(d.is_superadmin, false);
      assert.deepEqual(d.platform_roles, []);
      assert.equal(d.confirmed, true);
      // The request itself is recorded as activity, so it is a timestamp here (RFC 3339 in UTC).
      assert.equal(typeof d.last_activity, 'string');
      assert.match(d.last_activity, RFC3339_UTC);
      assert.ok(Math.abs(Date.parse(d.last_activity) - Date.now()) < 5 * 60_000, d.last_activity);
      assert.equal(d.current_organization_id, a.id);
      assert.deepEqual(d.memberships, [{ organization_id: a.id, role_id: await roleId(a.id, 'admin'), role_code: 'admin' }]);
      assert.equal(d.current_role_code, 'admin');
      assert.ok(Array.isArray(d.current_permissions));
      assert.ok(d.current_permissions.every((c: unknown) => typeof c === 'string'));
      assert.equal(d.is_staff_at_current_org, true);
      assert.equal(d.is_patient_at_current_org, false);
      assert.deepEqual(d.patient_org_ids, [b.id]);
      assert.equal(d.preferred_language, null, 'null until PATCH /v1/me sets it (it inherits the organization language)');

      // At the organization where the user is a patient: patient, not staff, no role.
      const atB = await me(member.token, b.id);
      assert.equal(atB.current_organization_id, b.id);
      assert.equal(atB.is_staff_at_current_org, false);
      assert.equal(atB.is_patient_at_current_org, true);
      assert.equal(atB.current_role_code, '');
      assert.deepEqual(atB.current_permissions, []);
      assert.deepEqual(atB.patient_org_ids, [b.id]);
    });

    it('a soft-deleted patient row does not count as a patient link', async () => {
      const org = await t.createOrg();
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      assert.equal((await me(patient.token, org.id)).is_patient_at_current_org, true);
      await t.db.query('update patients set deleted_at = now() where organization_id = $1 and user_id = $2', [org.id, patient.userId]);
      const d = await me(patient.token, org.id);
      assert.equal(d.is_patient_at_current_org, false);
      assert.deepEqual(d.patient_org_ids, []);
    });

    it('needs a valid bearer token: 401 unauthorized', async () => {
      assertError(await t.call('GET', '/v1/me'), 401, 'unauthorized');
      assertError(await t.call('GET', '/v1/me', { token: 'not-a-jwt' }), 401, 'unauthorized');
      const forged = `${(await t.token(uniqueEmail())).slice(0, -4)}AAAA`;
      assertError(await t.call('GET', '/v1/me', { token: forged }), 401, 'unauthorized');
    });

    it('X-Organization-ID of an organization that does not exist: 404 organization_not_found', async () => {
      const user = await t.addMember((await t.createOrg()).id, uniqueEmail(), 'admin');
      assertError(
        await t.call('GET', '/v1/me', { token: user.token, org: '01900000-0000-7000-8000-000000000000' }),
        404,
        'organization_not_found',
      );
    });

    it('X-Organization-ID that is not a uuid: 400 validation_error naming the header', async () => {
      const user = await t.addMember((await t.createOrg()).id, uniqueEmail(), 'admin');
      const err = assertError(await t.call('GET', '/v1/me', { token: user.token, org: 'not-a-uuid' }), 400, 'validation_error');
      assert.ok(err.fields && 'X-Organization-ID' in err.fields, JSON.stringify(err));
    });
  });

  describe('organization context order (spec 4.1)', () => {
    it('header wins; else the stored organization; else the first membership by creation; after removal from the stored one, the first membership', async () => {
      // A is created before B, so A has the smaller id: "first by creation" of the memberships
      // (B first) differs from "first by id" (A).
      const a = await t.createOrg();
      const b = await t.createOrg();
      const c = await t.createOrg();
      const email = uniqueEmail('order');
      const user = await t.addMember(b.id, email, 'specialist');
      await t.addMember(a.id, email, 'admin');
      await t.addMember(c.id, email, 'customer_support');
      assert.ok(a.id < b.id);

      // (3) first membership by creation
      let d = await me(user.token);
      assert.equal(d.current_organization_id, b.id);
      assert.equal(d.current_role_code, 'specialist');
      assert.deepEqual(
        d.memberships.map((m: { organization_id: string }) => m.organization_id),
        [b.id, a.id, c.id],
        'memberships are listed in creation order',
      );

      // (1) the header wins over the first membership
      d = await me(user.token, a.id);
      assert.equal(d.current_organization_id, a.id);
      assert.equal(d.current_role_code, 'admin');

      // (2) the stored organization, after a switch
      const sw = await switchTo(user.token, { organization_id: c.id });
      assert.equal(sw.statusCode, 200, sw.body);
      d = await me(user.token);
      assert.equal(d.current_organization_id, c.id);
      assert.equal(d.current_role_code, 'customer_support');

      // (1) the header still wins over the stored organization
      d = await me(user.token, a.id);
      assert.equal(d.current_organization_id, a.id);
      assert.equal(d.current_role_code, 'admin');

      // Removed from the stored organization: back to the first membership, though C is still stored.
      await t.db.query('delete from memberships where user_id = $1 and organization_id = $2', [user.userId, c.id]);
      assert.equal(await storedOrg(user.userId), c.id);
      d = await me(user.token);
      assert.equal(d.current_organization_id, b.id);
      assert.equal(d.current_role_code, 'specialist');
      assert.equal(d.is_staff_at_current_org, true);
    });

    it('no membership and no header: no organization (null), no role, no permissions', async () => {
      await t.createOrg();
      const token = await t.token(uniqueEmail('nobody'));
      const d = await me(token);
      assert.equal(d.current_organization_id, null);
      assert.equal(d.current_role_code, '');
      assert.deepEqual(d.current_permissions, []);
      assert.deepEqual(d.memberships, []);
      assert.equal(d.is_staff_at_current_org, false);
      assert.equal(d.is_patient_at_current_org, false);
    });

    it('a patient without membership gets no organization by default: patient links are not memberships', async () => {
      const org = await t.createOrg();
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      const d = await me(patient.token);
      assert.equal(d.current_organization_id, null);
      assert.deepEqual(d.patient_org_ids, [org.id]);
      assert.equal(d.is_patient_at_current_org, false);
    });
  });

  describe('role and permissions of the chosen organization', () => {
    it('an admin sees exactly the admin template codes', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const d = await me(admin.token);
      assert.equal(d.current_role_code, 'admin');
      assert.deepEqual(sorted(d.current_permissions), ADMIN_CODES);
      assert.equal(d.current_permissions.length, new Set(d.current_permissions).size, 'no duplicates');
    });

    it("a specialist and a customer support member see their templates' codes", async () => {
      const org = await t.createOrg();
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      const support = await t.addMember(org.id, uniqueEmail('support'), 'customer_support');
      const ds = await me(specialist.token);
      assert.equal(ds.current_role_code, 'specialist');
      assert.deepEqual(ds.current_permissions, STAFF_CODES);
      const dc = await me(support.token);
      assert.equal(dc.current_role_code, 'customer_support');
      assert.deepEqual(dc.current_permissions, TEMPLATE_GRANTS.customer_support);
    });

    it('admin in A and specialist in B: role and permissions follow the header', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const email = uniqueEmail('two-orgs');
      const user = await t.addMember(a.id, email, 'admin');
      await t.addMember(b.id, email, 'specialist');

      const atA = await me(user.token, a.id);
      assert.equal(atA.current_organization_id, a.id);
      assert.equal(atA.current_role_code, 'admin');
      assert.deepEqual(sorted(atA.current_permissions), ADMIN_CODES);
      assert.equal(atA.is_staff_at_current_org, true);

      const atB = await me(user.token, b.id);
      assert.equal(atB.current_organization_id, b.id);
      assert.equal(atB.current_role_code, 'specialist');
      assert.deepEqual(atB.current_permissions, STAFF_CODES);
      assert.equal(atB.is_staff_at_current_org, true);

      assert.deepEqual(
        sorted(atB.memberships.map((m: { organization_id: string; role_code: string }) => `${m.organization_id}:${m.role_code}`)),
        sorted([`${a.id}:admin`, `${b.id}:specialist`]),
      );
    });

    it('permissions are read from the organization clone, not the role name: an edited clone shows its own set', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const email = uniqueEmail('edited');
      const user = await t.addMember(a.id, email, 'specialist');
      await t.addMember(b.id, email, 'specialist');
      await t.db.query(
        `insert into role_permissions (role_id, permission_code, organization_id) select id, 'audit_log.view_org', organization_id from roles where organization_id = $1 and code = 'specialist'`,
        [a.id],
      );
      assert.deepEqual(sorted((await me(user.token, a.id)).current_permissions), sorted(['audit_log.view_org', ...STAFF_CODES]));
      assert.deepEqual((await me(user.token, b.id)).current_permissions, STAFF_CODES);
    });

    it('a superadmin without tenant scope: empty role code, no permissions, no organization', async () => {
      await t.createOrg();
      const token = await t.superadmin();
      const d = await me(token);
      assert.equal(d.is_superadmin, true);
      assert.deepEqual(d.platform_roles, ['superadmin']);
      assert.equal(d.current_organization_id, null);
      assert.equal(d.current_role_code, '');
      assert.deepEqual(d.current_permissions, []);
      assert.deepEqual(d.memberships, []);
      assert.equal(d.is_staff_at_current_org, false);
    });

    it('a superadmin with X-Organization-ID is scoped to it and passes every check there', async () => {
      const org = await t.createOrg();
      const token = await t.superadmin();
      const d = await me(token, org.id);
      assert.equal(d.is_superadmin, true);
      assert.equal(d.current_organization_id, org.id);
      assert.equal(d.is_staff_at_current_org, false);
      assert.equal(d.current_role_code, '');
      for (const code of ADMIN_CODES) assert.ok(d.current_permissions.includes(code), code);
    });

    it('a non-member sending X-Organization-ID of an existing organization: scoped to it, not staff, no permissions, and 403 on the organization', async () => {
      const own = await t.createOrg();
      const other = await t.createOrg();
      const user = await t.addMember(own.id, uniqueEmail('outsider'), 'admin');
      const d = await me(user.token, other.id);
      assert.equal(d.current_organization_id, other.id);
      assert.equal(d.is_staff_at_current_org, false);
      assert.equal(d.is_patient_at_current_org, false);
      assert.equal(d.current_role_code, '');
      assert.deepEqual(d.current_permissions, []);
      assertError(await t.call('GET', `/v1/organizations/${other.id}`, { token: user.token, org: other.id }), 403, 'forbidden');
      // The member's own organization stays readable.
      assert.equal((await t.call('GET', `/v1/organizations/${own.id}`, { token: user.token })).statusCode, 200);
    });
  });

  describe('PUT /v1/me/switch-organization', () => {
    it('a body that is not JSON: 400 invalid_body', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail(), 'admin');
      const err = assertError(
        await t.call('PUT', '/v1/me/switch-organization', { token: user.token, rawBody: '{"organization_id": ' }),
        400,
        'invalid_body',
      );
      assert.equal(err.fields, undefined);
      assert.equal(await storedOrg(user.userId), null);
    });

    it('a missing organization_id: 400 validation_error with fields.organization_id', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail(), 'admin');
      for (const body of [{}, { organization: org.id }]) {
        const err = assertError(await switchTo(user.token, body), 400, 'validation_error');
        assert.equal(typeof err.fields?.organization_id, 'string', JSON.stringify(err));
      }
      assert.equal(await storedOrg(user.userId), null);
    });

    it('the nil UUID or a non-uuid organization_id: 400 validation_error with fields.organization_id', async () => {
      const org = await t.createOrg();
      const user = await t.addMember(org.id, uniqueEmail(), 'admin');
      for (const value of [NIL_UUID, 'not-a-uuid', 42, null]) {
        const err = assertError(await switchTo(user.token, { organization_id: value }), 400, 'validation_error');
        assert.equal(typeof err.fields?.organization_id, 'string', `${JSON.stringify(value)}: ${JSON.stringify(err)}`);
      }
      assert.equal(await storedOrg(user.userId), null);
      assert.deepEqual(await switchAudits(user.userId), []);
    });

    it('a superadmin switching to the nil UUID is refused too: 400 validation_error', async () => {
      const token = await t.superadmin();
      assertError(await switchTo(token, { organization_id: NIL_UUID }), 400, 'validation_error');
    });

    it('into an organization the caller is not a member of: 403 forbidden, nothing stored or audited', async () => {
      const own = await t.createOrg();
      const other = await t.createOrg();
      const user = await t.addMember(own.id, uniqueEmail(), 'admin');
      assertError(await switchTo(user.token, { organization_id: other.id }), 403, 'forbidden');
      // Being a patient there is not a membership either.
      await t.addPatient(other.id, uniqueEmail('other-patient'));
      const patientAndStaff = await t.addMember(own.id, uniqueEmail('both'), 'specialist');
      await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [other.id, patientAndStaff.userId]);
      assertError(await switchTo(patientAndStaff.token, { organization_id: other.id }), 403, 'forbidden');
      // Sending the target organization as X-Organization-ID does not make the caller a member.
      assertError(
        await t.call('PUT', '/v1/me/switch-organization', { token: user.token, org: other.id, body: { organization_id: other.id } }),
        403,
        'forbidden',
      );
      assert.equal(await storedOrg(user.userId), null);
      assert.equal(await storedOrg(patientAndStaff.userId), null);
      assert.deepEqual(await switchAudits(user.userId), []);
      assert.equal((await me(user.token)).current_organization_id, own.id);
    });

    it('success: 200 with current_organization_id and a message, stored, audited in the destination, and used by later requests', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const email = uniqueEmail('switcher');
      const user = await t.addMember(a.id, email, 'admin');
      await t.addMember(b.id, email, 'specialist');
      assert.equal((await me(user.token)).current_organization_id, a.id);

      // Upper-case input is the same uuid.
      const res = await switchTo(user.token, { organization_id: b.id.toUpperCase() });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      assert.deepEqual(sorted(Object.keys(body.data)), ['current_organization_id', 'message']);
      assert.equal(body.data.current_organization_id, b.id);
      assert.equal(typeof body.data.message, 'string');
      assert.ok(body.data.message.length > 0);

      assert.equal(await storedOrg(user.userId), b.id);
      const audits = await switchAudits(user.userId);
      assert.equal(audits.length, 1);
      assert.equal(audits[0]!.organization_id, b.id, 'the audit entry is in the destination organization');
      assert.equal(audits[0]!.entity_type, 'user');
      assert.equal(audits[0]!.entity_id, user.userId);

      const d = await me(user.token);
      assert.equal(d.current_organization_id, b.id);
      assert.equal(d.current_role_code, 'specialist');
      assert.deepEqual(d.current_permissions, STAFF_CODES);

      // And back again.
      assert.equal((await switchTo(user.token, { organization_id: a.id })).statusCode, 200);
      assert.equal((await me(user.token)).current_organization_id, a.id);
      assert.deepEqual(
        (await switchAudits(user.userId)).map((r) => r.organization_id),
        [b.id, a.id],
      );
    });

    it('a superadmin is exempt from membership: 200, stored and audited', async () => {
      const org = await t.createOrg();
      const email = uniqueEmail('super');
      const token = await t.superadmin(email);
      const id = (await me(token)).id;
      const res = await switchTo(token, { organization_id: org.id });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.current_organization_id, org.id);
      assert.equal(await storedOrg(id), org.id);
      assert.deepEqual(
        (await switchAudits(id)).map((r) => r.organization_id),
        [org.id],
      );
    });

    it('a superadmin switching to an organization that does not exist: 404 organization_not_found', async () => {
      const token = await t.superadmin();
      const id = (await me(token)).id;
      assertError(await switchTo(token, { organization_id: '01900000-0000-7000-8000-0000000000aa' }), 404, 'organization_not_found');
      assert.equal(await storedOrg(id), null);
      assert.deepEqual(await switchAudits(id), []);
    });

    it('without a token: 401 unauthorized', async () => {
      const org = await t.createOrg();
      assertError(await t.call('PUT', '/v1/me/switch-organization', { body: { organization_id: org.id } }), 401, 'unauthorized');
      assertError(
        await t.call('PUT', '/v1/me/switch-organization', { token: 'garbage', body: { organization_id: org.id } }),
        401,
        'unauthorized',
      );
    });
  });
});
