import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, uniqueEmail, type TestApp, assertError, type Res } from './helpers.ts';

// Locations (spec 4.5, Planned; 2.7 locations.manage; 4.1 list conventions; 7 errors): readable by
// any staff member of the organization, written only with locations.manage.

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MISSING = '01900000-0000-7000-8000-000000000000';

const uniqueName = (prefix = 'Location') => `${prefix} ${randomBytes(4).toString('hex')}`;

describe('locations', () => {
  let t: TestApp;
  let orgA: { id: string };
  let orgB: { id: string };
  let adminA: string;
  let adminB: string;
  let specialistA: string;
  let supportA: string;
  let patientA: string;
  let superadmin: string;

  before(async () => {
    t = await startTestApp();
    orgA = await t.createOrg({ name: 'Clinic A' });
    orgB = await t.createOrg({ name: 'Clinic B' });
    adminA = (await t.addMember(orgA.id, uniqueEmail('admin-a'), 'admin')).token;
    adminB = (await t.addMember(orgB.id, uniqueEmail('admin-b'), 'admin')).token;
    specialistA = (await t.addMember(orgA.id, uniqueEmail('spec-a'), 'specialist')).token;
    supportA = (await t.addMember(orgA.id, uniqueEmail('support-a'), 'customer_support')).token;
    patientA = (await t.addPatient(orgA.id, uniqueEmail('patient-a'))).token;
    superadmin = await t.superadmin();
  });
  after(() => t.close());

  const base = (orgId: string) => `/v1/organizations/${orgId}/locations`;
  const create = (token: string, orgId: string, body: unknown, headers?: Record<string, string>) =>
    t.call('POST', base(orgId), { token, body, ...(headers ? { headers } : {}) });
  const get = (token: string, orgId: string, id: string) => t.call('GET', `${base(orgId)}/${id}`, { token });
  const list = (token: string, orgId: string, query = '') => t.call('GET', `${base(orgId)}${query ? `?${query}` : ''}`, { token });
  const patch = (token: string, orgId: string, id: string, body: unknown) => t.call('PATCH', `${base(orgId)}/${id}`, { token, body });
  const remove = (token: string, orgId: string, id: string) => t.call('DELETE', `${base(orgId)}/${id}`, { token });

  async function created(token: string, orgId: string, body: Record<string, unknown> = {}) {
    const res = await create(token, orgId, { name: uniqueName(), timezone: 'Europe/Bucharest', ...body });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().data;
  }

  async function auditRows(entityId: string) {
    const { rows } = await t.db.query<{ action: string; organization_id: string; actor_user_id: string; entity_type: string; data: any }>(
      `select action, organization_id, actor_user_id, entity_type, data from audit_logs where entity_id = $1 order by created_at, id`,
      [entityId],
    );
    return rows;
  }

  const userId = async (token: string) => (await t.call('GET', '/v1/me', { token })).json().data.id as string;

  describe('POST (createLocation)', () => {
    it('creates a location (201), normalised, and audits it with its fields', async () => {
      const name = uniqueName('Main');
      const res = await create(adminA, orgA.id, {
        name: `  ${name} `,
        address_line1: ' Str. Lunga 1 ',
        address_line2: '',
        city: 'Brasov',
        region: 'BV',
        postal_code: '500000',
        country: 'ro',
        timezone: 'europe/bucharest',
        phone: '+40 268 000 000',
      });
      assert.equal(res.statusCode, 201, res.body);
      const l = res.json().data;
      assert.match(l.id, UUID_V7);
      assert.equal(l.organization_id, orgA.id);
      assert.deepEqual(
        { ...l, id: undefined, created_at: undefined, updated_at: undefined },
        {
          id: undefined,
          organization_id: orgA.id,
          name,
          address_line1: 'Str. Lunga 1',
          address_line2: null,
          city: 'Brasov',
          region: 'BV',
          postal_code: '500000',
          country: 'RO',
          timezone: 'Europe/Bucharest',
          phone: '+40268000000',
          created_at: undefined,
          updated_at: undefined,
        },
      );
      assert.match(l.created_at, RFC3339_UTC);
      assert.equal(l.updated_at, l.created_at);

      const audit = await auditRows(l.id);
      assert.equal(audit.length, 1);
      assert.equal(audit[0]!.action, 'location.created');
      assert.equal(audit[0]!.entity_type, 'location');
      assert.equal(audit[0]!.organization_id, orgA.id);
      assert.equal(audit[0]!.actor_user_id, await userId(adminA));
      assert.equal(audit[0]!.data.name, name);
      assert.equal(audit[0]!.data.country, 'RO');
      assert.equal(audit[0]!.data.timezone, 'Europe/Bucharest');
    });

    it('needs only name and timezone; the rest is null; time zone links become their canonical zone', async () => {
      const l = await created(adminA, orgA.id, { timezone: 'US/Eastern' });
      for (const k of ['address_line1', 'address_line2', 'city', 'region', 'postal_code', 'country', 'phone']) assert.equal(l[k], null, k);
      assert.equal(l.timezone, 'America/New_York');
      assert.equal((await created(adminA, orgA.id, { timezone: 'UTC' })).timezone, 'UTC');
    });

    it('400 validation_error with fields for every invalid input', async () => {
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ timezone: 'UTC' }, ['name']],
        [{ name: uniqueName() }, ['timezone']],
        [{ name: '   ', timezone: 'UTC' }, ['name']],
        [{ name: 'x'.repeat(201), timezone: 'UTC' }, ['name']],
        [{ name: 42, timezone: 'UTC' }, ['name']],
        [{ name: uniqueName(), timezone: 'Mars/Olympus_Mons' }, ['timezone']],
        [{ name: uniqueName(), timezone: '+02:00' }, ['timezone']],
        [{ name: uniqueName(), timezone: 'UTC+2' }, ['timezone']],
        [{ name: uniqueName(), timezone: 'UTC', country: 'ZZ' }, ['country']],
        [{ name: uniqueName(), timezone: 'UTC', country: 'EU' }, ['country']],
        [{ name: uniqueName(), timezone: 'UTC', country: 'ROU' }, ['country']],
        [{ name: uniqueName(), timezone: 'UTC', country: '1A' }, ['country']],
        [{ name: uniqueName(), timezone: 'UTC', phone: 'call me maybe' }, ['phone']],
        [{ name: uniqueName(), timezone: 'UTC', phone: '+-' }, ['phone']],
        [{ name: uniqueName(), timezone: 'UTC', postal_code: '1'.repeat(21) }, ['postal_code']],
        [{ name: uniqueName(), timezone: 'UTC', city: 7 }, ['city']],
        [{ name: uniqueName(), timezone: 'UTC', organization_id: orgB.id }, ['organization_id']],
        // Semantic checks report every field at once.
        [{ name: ' ', timezone: 'Nowhere/Land', country: 'XX' }, ['country', 'name', 'timezone']],
      ];
      for (const [body, fields] of cases) {
        const err = assertError(await create(adminA, orgA.id, body), 400, 'validation_error');
        assert.deepEqual(Object.keys(err.fields).sort(), fields, `${JSON.stringify(body)} -> ${JSON.stringify(err.fields)}`);
      }
      assertError(await t.call('POST', base(orgA.id), { token: adminA, rawBody: '{"name":' }), 400, 'invalid_body');
    });

    it('names are unique in an organization, case-insensitively (409 location_name_taken); other organizations may reuse them', async () => {
      const l = await created(adminA, orgA.id);
      assertError(await create(adminA, orgA.id, { name: l.name.toUpperCase(), timezone: 'UTC' }), 409, 'location_name_taken');
      assert.equal((await create(adminB, orgB.id, { name: l.name, timezone: 'UTC' })).statusCode, 201);
    });

    it('honours Idempotency-Key: a retry replays the first response and creates nothing', async () => {
      const body = { name: uniqueName('Idem'), timezone: 'UTC' };
      const headers = { 'idempotency-key': `loc-${randomBytes(6).toString('hex')}` };
      const first = await create(adminA, orgA.id, body, headers);
      assert.equal(first.statusCode, 201, first.body);
      const second = await create(adminA, orgA.id, body, headers);
      assert.equal(second.body, first.body);
      assert.equal(second.headers['idempotency-replayed'], 'true');
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from locations where name = $1', [body.name]);
      assert.equal(rows[0]!.n, 1);
    });

    it('only locations.manage writes: specialist, support, patient and admin of another organization get 403', async () => {
      for (const token of [specialistA, supportA, patientA, adminB]) {
        assertError(await create(token, orgA.id, { name: uniqueName(), timezone: 'UTC' }), 403, 'forbidden');
      }
      assertError(await t.call('POST', base(orgA.id), { body: { name: uniqueName(), timezone: 'UTC' } }), 401, 'unauthorized');
    });
  });

  describe('GET one (getLocation)', () => {
    it('any staff member reads it (admin, specialist, support) and a superadmin; a patient or an outsider gets 403', async () => {
      const l = await created(adminA, orgA.id);
      for (const token of [adminA, specialistA, supportA, superadmin]) {
        const res = await get(token, orgA.id, l.id);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json().data, l);
      }
      assertError(await get(patientA, orgA.id, l.id), 403, 'forbidden');
      assertError(await get(adminB, orgA.id, l.id), 403, 'forbidden');
    });

    it("404 not_found for an unknown id, another organization's location, or a malformed id", async () => {
      const l = await created(adminA, orgA.id);
      assertError(await get(adminA, orgA.id, MISSING), 404, 'not_found');
      assertError(await get(adminB, orgB.id, l.id), 404, 'not_found');
      assertError(await get(superadmin, orgB.id, l.id), 404, 'not_found');
      assertError(await get(adminA, orgA.id, 'nope'), 404, 'not_found');
    });
  });

  describe('GET list (listLocations)', () => {
    let org: { id: string };
    let admin: string;
    let specialist: string;
    let rows: Array<{ id: string; name: string; city: string | null }>;

    before(async () => {
      org = await t.createOrg();
      admin = (await t.addMember(org.id, uniqueEmail('admin'), 'admin')).token;
      specialist = (await t.addMember(org.id, uniqueEmail('spec'), 'specialist')).token;
      rows = [];
      for (const [name, city] of [
        ['beta', 'Cluj'],
        ['Alpha', 'Brasov'],
        ['delta 100%', null],
        ['Gamma', 'Cluj-Napoca'],
        ['epsilon', 'Iasi'],
      ] as const) {
        rows.push(await created(admin, org.id, { name, city }));
      }
      await created(adminB, orgB.id, { name: 'alpha', city: 'Cluj' });
    });

    const ids = (res: Res) => res.json().data.map((r: { id: string }) => r.id);

    it('a specialist lists them: newest first, with pagination, only this organization', async () => {
      const res = await list(specialist, org.id);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(body.pagination, { page: 1, limit: 50, total: 5 });
      assert.deepEqual(ids(res), rows.map((r) => r.id).reverse());
    });

    it('a patient, an admin of another organization and no token are refused', async () => {
      assertError(await list(patientA, orgA.id), 403, 'forbidden');
      assertError(await list(adminB, org.id), 403, 'forbidden');
      assertError(await t.call('GET', base(org.id)), 401, 'unauthorized');
    });

    it('page and limit: offset pages, total ignores them, out-of-range values clamp', async () => {
      const p2 = await list(admin, org.id, 'limit=2&page=2');
      assert.deepEqual(p2.json().pagination, { page: 2, limit: 2, total: 5 });
      assert.deepEqual(
        ids(p2),
        rows
          .map((r) => r.id)
          .reverse()
          .slice(2, 4),
      );
      const beyond = await list(admin, org.id, 'limit=2&page=9');
      assert.deepEqual(beyond.json(), { data: [], pagination: { page: 9, limit: 2, total: 5 } });
      assert.deepEqual((await list(admin, org.id, 'limit=100000&page=0')).json().pagination, { page: 1, limit: 500, total: 5 });
      assert.deepEqual((await list(admin, org.id, 'limit=abc&page=-3')).json().pagination, { page: 1, limit: 50, total: 5 });
    });

    it('sort: name (case-insensitive), -name, created_at; unknown fields are 422 with fields.sort', async () => {
      const names = (res: Res) => res.json().data.map((r: { name: string }) => r.name);
      assert.deepEqual(names(await list(admin, org.id, 'sort=name')), ['Alpha', 'beta', 'delta 100%', 'epsilon', 'Gamma']);
      assert.deepEqual(names(await list(admin, org.id, 'sort=-name')), ['Gamma', 'epsilon', 'delta 100%', 'beta', 'Alpha']);
      assert.deepEqual(
        ids(await list(admin, org.id, 'sort=created_at')),
        rows.map((r) => r.id),
      );
      const err = assertError(await list(admin, org.id, 'sort=city'), 422, 'validation_failed');
      assert.match(err.fields.sort, /unknown sort field "city"; allowed: name, created_at/);
    });

    it('q: trimmed, case-insensitive substring of name or city; LIKE wildcards are literal', async () => {
      const names = async (q: string) =>
        (await list(admin, org.id, `q=${encodeURIComponent(q)}&sort=name`)).json().data.map((r: { name: string }) => r.name);
      assert.deepEqual(await names('  ALPHA '), ['Alpha']);
      assert.deepEqual(await names('cluj'), ['beta', 'Gamma']);
      assert.deepEqual(await names('%'), ['delta 100%']);
      assert.deepEqual(await names('_'), []);
      assert.deepEqual(await names(''), ['Alpha', 'beta', 'delta 100%', 'epsilon', 'Gamma']);
      const res = await list(admin, org.id, 'q=cluj&limit=1');
      assert.equal(res.json().pagination.total, 2);
    });

    it('created_at_after / created_at_before are inclusive; a malformed bound is 422', async () => {
      // The stored instant to the microsecond (a JS Date would cut it to milliseconds).
      const { rows: times } = await t.db.query<{ at: string }>(
        `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at from locations where id = $1`,
        [rows[2]!.id],
      );
      const at = times[0]!.at;
      const after = await list(admin, org.id, `created_at_after=${encodeURIComponent(at)}&sort=created_at`);
      assert.deepEqual(
        ids(after),
        rows.slice(2).map((r) => r.id),
      );
      const before = await list(admin, org.id, `created_at_before=${encodeURIComponent(at)}&sort=created_at`);
      assert.deepEqual(
        ids(before),
        rows.slice(0, 3).map((r) => r.id),
      );
      assert.equal((await list(admin, org.id, 'created_at_before=2000-01-01')).json().pagination.total, 0);
      const err = assertError(await list(admin, org.id, 'created_at_after=yesterday'), 422, 'validation_failed');
      assert.ok(err.fields.created_at_after);
    });

    it('a superadmin lists any organization, and only that one', async () => {
      const res = await list(superadmin, org.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().pagination.total, 5);
    });
  });

  describe('PATCH (updateLocation)', () => {
    it('changes only the fields given, bumps updated_at, and audits each change with from and to', async () => {
      const l = await created(adminA, orgA.id, { city: 'Brasov', phone: '+40 268 000 000', region: 'BV' });
      const res = await patch(adminA, orgA.id, l.id, { city: ' Sibiu ', phone: null, region: '', timezone: 'Europe/Bucharest' });
      assert.equal(res.statusCode, 200, res.body);
      const u = res.json().data;
      assert.deepEqual({ ...u, updated_at: undefined }, { ...l, city: 'Sibiu', phone: null, region: null, updated_at: undefined });
      assert.ok(new Date(u.updated_at) > new Date(l.updated_at), 'updated_at moves');
      assert.deepEqual((await get(specialistA, orgA.id, l.id)).json().data, u);

      const audit = await auditRows(l.id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['location.created', 'location.updated'],
      );
      // timezone was given with its current value: not a change.
      assert.deepEqual(audit[1]!.data, {
        changes: { city: { from: 'Brasov', to: 'Sibiu' }, region: { from: 'BV', to: null }, phone: { from: '+40268000000', to: null } },
      });
      assert.equal(audit[1]!.actor_user_id, await userId(adminA));
    });

    it('a PATCH that changes nothing writes nothing', async () => {
      const l = await created(adminA, orgA.id);
      const res = await patch(adminA, orgA.id, l.id, { name: ` ${l.name} `, country: null });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().data, l);
      assert.deepEqual(
        (await auditRows(l.id)).map((a) => a.action),
        ['location.created'],
      );
    });

    it('validation: empty body, null name or timezone, bad values, unknown fields -> 400 with fields', async () => {
      const l = await created(adminA, orgA.id);
      assert.ok(assertError(await patch(adminA, orgA.id, l.id, {}), 400, 'validation_error').fields._body);
      assert.ok(assertError(await patch(adminA, orgA.id, l.id, { name: null }), 400, 'validation_error').fields.name);
      assert.ok(assertError(await patch(adminA, orgA.id, l.id, { timezone: null }), 400, 'validation_error').fields.timezone);
      assert.ok(assertError(await patch(adminA, orgA.id, l.id, { timezone: 'Atlantis/Capital' }), 400, 'validation_error').fields.timezone);
      assert.ok(assertError(await patch(adminA, orgA.id, l.id, { country: 'QO' }), 400, 'validation_error').fields.country);
      assert.ok(assertError(await patch(adminA, orgA.id, l.id, { id: MISSING }), 400, 'validation_error').fields.id);
      assert.deepEqual((await get(adminA, orgA.id, l.id)).json().data, l, 'unchanged');
    });

    it('renaming onto another location of the organization is 409 location_name_taken', async () => {
      const a = await created(adminA, orgA.id);
      const b = await created(adminA, orgA.id);
      assertError(await patch(adminA, orgA.id, b.id, { name: a.name.toLowerCase() }), 409, 'location_name_taken');
      // Changing only the case of its own name is fine.
      assert.equal((await patch(adminA, orgA.id, a.id, { name: a.name.toUpperCase() })).json().data.name, a.name.toUpperCase());
    });

    it("only locations.manage: 403 for staff without it; another organization's location is 404", async () => {
      const l = await created(adminA, orgA.id);
      for (const token of [specialistA, supportA, patientA, adminB])
        assertError(await patch(token, orgA.id, l.id, { city: 'X' }), 403, 'forbidden');
      assertError(await patch(adminB, orgB.id, l.id, { city: 'X' }), 404, 'not_found');
      assertError(await patch(adminA, orgA.id, MISSING, { city: 'X' }), 404, 'not_found');
      assert.equal((await get(adminA, orgA.id, l.id)).json().data.city, null);
    });
  });

  describe('DELETE (deleteLocation)', () => {
    it('deletes (204); the audit entry keeps what it was; a second delete is 404', async () => {
      const l = await created(adminA, orgA.id, { city: 'Cluj', country: 'RO' });
      const res = await remove(adminA, orgA.id, l.id);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assertError(await get(adminA, orgA.id, l.id), 404, 'not_found');
      assertError(await remove(adminA, orgA.id, l.id), 404, 'not_found');
      const audit = await auditRows(l.id);
      assert.deepEqual(
        audit.map((a) => a.action),
        ['location.created', 'location.deleted'],
      );
      assert.equal(audit[1]!.data.name, l.name);
      assert.equal(audit[1]!.data.city, 'Cluj');
      assert.equal(audit[1]!.organization_id, orgA.id);
    });

    it('the name is free again once deleted', async () => {
      const l = await created(adminA, orgA.id);
      assert.equal((await remove(adminA, orgA.id, l.id)).statusCode, 204);
      assert.equal((await create(adminA, orgA.id, { name: l.name, timezone: 'UTC' })).statusCode, 201);
    });

    it("only locations.manage; another organization's location is 404 and survives", async () => {
      const l = await created(adminA, orgA.id);
      for (const token of [specialistA, supportA, patientA, adminB]) assertError(await remove(token, orgA.id, l.id), 403, 'forbidden');
      assertError(await remove(adminB, orgB.id, l.id), 404, 'not_found');
      assert.equal((await get(adminA, orgA.id, l.id)).statusCode, 200);
      assert.deepEqual(
        (await auditRows(l.id)).map((a) => a.action),
        ['location.created'],
      );
    });
  });

  describe('superadmin and row-level security', () => {
    it('a superadmin creates, updates and deletes in any organization; entries carry that organization', async () => {
      const l = await created(superadmin, orgB.id, { city: 'Iasi' });
      assert.equal(l.organization_id, orgB.id);
      assert.equal((await patch(superadmin, orgB.id, l.id, { city: 'Arad' })).json().data.city, 'Arad');
      assertError(await remove(superadmin, orgA.id, l.id), 404, 'not_found');
      assert.equal((await remove(superadmin, orgB.id, l.id)).statusCode, 204);
      assert.deepEqual(
        (await auditRows(l.id)).map((a) => [a.action, a.organization_id]),
        [
          ['location.created', orgB.id],
          ['location.updated', orgB.id],
          ['location.deleted', orgB.id],
        ],
      );
    });

    it('app_rls: staff and patients read, non-members see nothing, writes need locations.manage', async () => {
      const l = await created(adminA, orgA.id);
      const scope = (principalId: string, permissions: string[], orgId = orgA.id) => ({
        role: 'app_rls' as const,
        principalId,
        orgId,
        permissions,
      });
      const count = (s: ReturnType<typeof scope>) =>
        t.db.withScope(
          s,
          async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from locations where id = $1', [l.id])).rows[0]!.n,
        );

      assert.equal(
        await count(scope(await userId(specialistA), ['organizations.view_directory'])),
        1,
        'a specialist, no permission needed',
      );
      // A patient reads the clinic's locations, as its public booking page shows them (migration 0067: the
      // slots of a patient's own booking come from the locations' zones); a patient of A naming B reads none of them.
      assert.equal(await count(scope(await userId(patientA), [])), 1, 'a patient of the clinic');
      assert.equal(await count(scope(await userId(patientA), [], orgB.id)), 0, "a patient of A naming B reads none of A's");
      // Permissions do not make a staff member: B's admin with A in its settings and every code still sees nothing.
      assert.equal(await count(scope(await userId(adminB), ['locations.manage', 'organizations.view_directory', 'data.view_deleted'])), 0);
      // The specialist with B in its settings sees nothing of A.
      assert.equal(await count(scope(await userId(specialistA), ['organizations.view_directory'], orgB.id)), 0);

      const specialist = scope(await userId(specialistA), ['organizations.view_directory']);
      await assert.rejects(
        t.db.withScope(specialist, (tx) =>
          tx.query(`insert into locations (organization_id, name, timezone) values ($1, $2, 'UTC')`, [orgA.id, uniqueName()]),
        ),
        /row-level security/,
      );
      const touched = await t.db.withScope(specialist, async (tx) => {
        const u = await tx.query(`update locations set city = 'hacked' where id = $1`, [l.id]);
        const d = await tx.query(`delete from locations where id = $1`, [l.id]);
        return u.rowCount + d.rowCount;
      });
      assert.equal(touched, 0);
      assert.equal((await get(adminA, orgA.id, l.id)).json().data.city, null);
    });
  });
});
