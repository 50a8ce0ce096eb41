import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, uniqueEmail, uniqueSlug, type TestApp, assertError, type Res } from './helpers.ts';

// GET /v1/organizations, PATCH /v1/organizations/{id} and GET /v1/organizations/{id}/settings
// (spec 2.5, 2.7, 4.1, 4.2, 4.5, 7, 8), with the organization_settings table of migration 0007.

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const ORG_KEYS = ['created_at', 'id', 'language_code', 'name', 'slug', 'updated_at'];

const tag = () => randomBytes(4).toString('hex');

describe('organizations: list, update, settings', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const list = (token: string, query = '', org?: string) => t.call('GET', `/v1/organizations${query}`, { token, ...(org ? { org } : {}) });
  const ids = (res: Res) => res.json().data.map((o: { id: string }) => o.id);

  async function listed(token: string, query = '') {
    const res = await list(token, query);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }

  async function orgRow(id: string) {
    const { rows } = await t.db.query<{ name: string; slug: string; language_code: string; updated_at: Date }>(
      'select name, slug, language_code, updated_at from organizations where id = $1',
      [id],
    );
    return rows[0]!;
  }

  async function updateAudits(orgId: string) {
    const { rows } = await t.db.query<{
      organization_id: string;
      actor_user_id: string;
      entity_type: string;
      entity_id: string;
      data: any;
    }>(
      `select organization_id, actor_user_id, entity_type, entity_id, data from audit_logs
       where action = 'organization.updated' and entity_id = $1 order by created_at, id`,
      [orgId],
    );
    return rows;
  }

  /** A user who is admin in A, specialist in B, patient in C; D is someone else's organization. */
  async function world(prefix = 'w') {
    const k = tag();
    const a = await t.createOrg({ name: `${prefix} Alpha ${k}`, slug: uniqueSlug('alpha') });
    const b = await t.createOrg({ name: `${prefix} beta ${k}`, slug: uniqueSlug('beta') });
    const c = await t.createOrg({ name: `${prefix} Gamma ${k}`, slug: uniqueSlug('gamma') });
    const d = await t.createOrg({ name: `${prefix} Delta ${k}`, slug: uniqueSlug('delta') });
    const email = uniqueEmail('multi');
    const user = await t.addMember(a.id, email, 'admin');
    await t.addMember(b.id, email, 'specialist');
    await t.db.query('insert into patients (organization_id, user_id) values ($1, $2)', [c.id, user.userId]);
    return { a, b, c, d, user, k };
  }

  describe('GET /v1/organizations', () => {
    it('lists the organizations where the caller is staff, newest first, in the list envelope', async () => {
      const { a, b, user } = await world();
      const body = await listed(user.token);
      assert.deepEqual(Object.keys(body).sort(), ['data', 'pagination']);
      assert.deepEqual(body.pagination, { page: 1, limit: 50, total: 2 });
      // Not the patient organization C, not the unrelated D: staff memberships only.
      assert.deepEqual(
        body.data.map((o: { id: string }) => o.id),
        [b.id, a.id],
      );
      for (const o of body.data) {
        assert.deepEqual(Object.keys(o).sort(), ORG_KEYS);
        assert.match(o.created_at, RFC3339_UTC);
      }
      assert.equal(body.data[1].slug, a.slug);
      assert.equal(body.data[1].name, a.name);
      assert.equal(body.data[1].language_code, 'en');
    });

    it('X-Organization-ID does not change the list', async () => {
      const { a, b, c, d, user } = await world();
      for (const org of [a.id, c.id, d.id]) {
        const res = await list(user.token, '', org);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(ids(res), [b.id, a.id]);
      }
    });

    it('a patient-only user and a brand-new user get an empty page', async () => {
      const org = await t.createOrg();
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      assert.deepEqual(await listed(patient.token), { data: [], pagination: { page: 1, limit: 50, total: 0 } });
      const fresh = await t.token(uniqueEmail('fresh'));
      assert.deepEqual(await listed(fresh), { data: [], pagination: { page: 1, limit: 50, total: 0 } });
    });

    it('a superadmin gets every organization', async () => {
      const { d } = await world();
      const token = await t.superadmin();
      const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from organizations');
      const body = await listed(token, '?limit=500');
      assert.equal(body.pagination.total, rows[0]!.n);
      assert.equal(body.data.length, rows[0]!.n);
      assert.ok(body.data.some((o: { id: string }) => o.id === d.id));
      // Newest first by default.
      const created = body.data.map((o: { created_at: string }) => Date.parse(o.created_at));
      assert.deepEqual(
        created,
        [...created].sort((x, y) => y - x),
      );
    });

    it('sorts by name (case-insensitive), slug and created_at, either direction', async () => {
      const { a, b, k, user } = await world();
      // a "w Alpha", b "w beta", e "w ALPINE": by lower(name) a < e < b; by raw bytes e would come first.
      const e = await t.createOrg({ name: `w ALPINE ${k}`, slug: uniqueSlug('zeta') });
      await t.db.query(
        `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
        [user.userId, e.id],
      );
      const order = async (sort: string) => ids(await list(user.token, `?sort=${encodeURIComponent(sort)}`));
      assert.deepEqual(await order('name'), [a.id, e.id, b.id]);
      assert.deepEqual(await order('-name'), [b.id, e.id, a.id]);
      assert.deepEqual(await order('+name'), [a.id, e.id, b.id]);
      assert.deepEqual(await order('slug'), [a.id, b.id, e.id]);
      assert.deepEqual(await order('-slug'), [e.id, b.id, a.id]);
      assert.deepEqual(await order('created_at'), [a.id, b.id, e.id]);
      assert.deepEqual(await order('-created_at'), [e.id, b.id, a.id]);
      assert.deepEqual(await order(''), [e.id, b.id, a.id], 'blank sort is the default');
      // Ties on the first key fall to the next one: a and e get the same name, after "w beta".
      await t.db.query('update organizations set name = $2 where id = any($1::uuid[])', [[a.id, e.id], `w same ${k}`]);
      assert.deepEqual(await order('name,-created_at'), [b.id, e.id, a.id]);
      assert.deepEqual(await order('name,created_at'), [b.id, a.id, e.id]);
    });

    it('an unknown, repeated or empty sort field: 422 validation_failed with fields.sort', async () => {
      const { user } = await world();
      for (const sort of ['id', 'language_code', 'name,bogus', 'name,name', 'name,', '-', '__proto__']) {
        const err = assertError(await list(user.token, `?sort=${encodeURIComponent(sort)}`), 422, 'validation_failed');
        assert.equal(typeof err.fields?.sort, 'string', `${sort}: ${JSON.stringify(err)}`);
      }
      const err = assertError(await list(user.token, '?sort=bogus'), 422, 'validation_failed');
      assert.match(err.fields.sort, /name, slug, created_at/, 'the reason lists the allowed fields');
    });

    it('paginates: page and limit, total ignores pagination, out-of-range values are clamped', async () => {
      const { a, b, user } = await world();
      const page = async (q: string) => listed(user.token, q);
      let body = await page('?limit=1');
      assert.deepEqual(body.pagination, { page: 1, limit: 1, total: 2 });
      assert.deepEqual(
        body.data.map((o: { id: string }) => o.id),
        [b.id],
      );
      body = await page('?limit=1&page=2');
      assert.deepEqual(body.pagination, { page: 2, limit: 1, total: 2 });
      assert.deepEqual(
        body.data.map((o: { id: string }) => o.id),
        [a.id],
      );
      body = await page('?limit=1&page=3');
      assert.deepEqual(body, { data: [], pagination: { page: 3, limit: 1, total: 2 } });
      assert.deepEqual((await page('?page=0')).pagination, { page: 1, limit: 50, total: 2 });
      assert.deepEqual((await page('?page=-4&limit=abc')).pagination, { page: 1, limit: 50, total: 2 });
      assert.deepEqual((await page('?limit=100000')).pagination, { page: 1, limit: 500, total: 2 });
      assert.deepEqual((await page('?limit=0')).pagination, { page: 1, limit: 50, total: 2 });
    });

    it('q matches a substring of the name or the slug, case-insensitively; LIKE wildcards are literal', async () => {
      const { a, b, k, user } = await world('q');
      assert.deepEqual(ids(await list(user.token, `?q=${encodeURIComponent(`ALPHA ${k}`)}`)), [a.id]);
      assert.deepEqual(ids(await list(user.token, `?q=${b.slug.slice(0, 10)}`)), [b.id]);
      assert.deepEqual(ids(await list(user.token, `?q=${encodeURIComponent(`  ${k}  `)}`)), [b.id, a.id], 'trimmed');
      const body = await listed(user.token, '?q=%25');
      assert.deepEqual(body, { data: [], pagination: { page: 1, limit: 50, total: 0 } });
      assert.equal((await listed(user.token, '?q=_')).pagination.total, 0);
      assert.equal((await listed(user.token, '?q=')).pagination.total, 2, 'an empty q filters nothing');
    });

    it('created_at_after / created_at_before filter inclusively; a malformed bound is 422 naming the key', async () => {
      const { a, b, user } = await world();
      // The exact stored instant, with microseconds (the JSON timestamp stops at milliseconds).
      const { rows } = await t.db.query<{ at: string }>(
        `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at from organizations where id = $1`,
        [b.id],
      );
      const bAt = encodeURIComponent(rows[0]!.at);
      assert.deepEqual(ids(await list(user.token, `?created_at_after=${bAt}`)), [b.id]);
      assert.deepEqual(ids(await list(user.token, `?created_at_before=${bAt}`)), [b.id, a.id]);
      assert.deepEqual(ids(await list(user.token, `?created_at_after=${bAt}&created_at_before=${bAt}`)), [b.id]);
      assert.deepEqual(ids(await list(user.token, '?created_at_before=2000-01-01')), []);
      assert.deepEqual(ids(await list(user.token, '?created_at_after=2999-01-01')), []);
      const err = assertError(await list(user.token, '?created_at_after=yesterday'), 422, 'validation_failed');
      assert.equal(typeof err.fields?.created_at_after, 'string');
      const err2 = assertError(await list(user.token, '?created_at_before=2026-02-30'), 422, 'validation_failed');
      assert.equal(typeof err2.fields?.created_at_before, 'string');
    });

    it('unknown query keys are ignored; without a token: 401 unauthorized', async () => {
      const { user } = await world();
      assert.equal((await listed(user.token, '?color=blue&status=x')).pagination.total, 2);
      assertError(await t.call('GET', '/v1/organizations'), 401, 'unauthorized');
    });
  });

  describe('PATCH /v1/organizations/{id}', () => {
    const patch = (token: string, id: string, body: unknown, org?: string) =>
      t.call('PATCH', `/v1/organizations/${id}`, { token, body, ...(org ? { org } : {}) });

    it('an admin changes one field: 200 with the organization, only that field changes, audited with from and to', async () => {
      const org = await t.createOrg({ name: 'Before' });
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const stamp = (await orgRow(org.id)).updated_at;
      const res = await patch(admin.token, org.id, { name: 'After' });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      assert.deepEqual(Object.keys(body.data).sort(), ORG_KEYS);
      assert.equal(body.data.id, org.id);
      assert.equal(body.data.name, 'After');
      assert.equal(body.data.slug, org.slug);
      assert.equal(body.data.language_code, 'en');
      assert.ok(Date.parse(body.data.updated_at) > stamp.getTime(), 'updated_at moves');
      assert.deepEqual(
        { ...(await orgRow(org.id)), updated_at: undefined },
        { name: 'After', slug: org.slug, language_code: 'en', updated_at: undefined },
      );
      assert.deepEqual(await updateAudits(org.id), [
        {
          organization_id: org.id,
          actor_user_id: admin.userId,
          entity_type: 'organization',
          entity_id: org.id,
          data: { changes: { name: { from: 'Before', to: 'After' } } },
        },
      ]);
      // GET reads the change back.
      assert.equal((await t.call('GET', `/v1/organizations/${org.id}`, { token: admin.token })).json().data.name, 'After');
    });

    it('changes slug and language_code together; language_code is stored as given (no list of values)', async () => {
      const org = await t.createOrg({ name: 'Multi' });
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const slug = uniqueSlug('renamed');
      const res = await patch(admin.token, org.id, { slug, language_code: 'de-AT', name: 'Multi' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.slug, slug);
      assert.equal(res.json().data.language_code, 'de-AT');
      // The unchanged name is not part of the diff.
      assert.deepEqual(
        (await updateAudits(org.id)).map((a) => a.data),
        [{ changes: { slug: { from: org.slug, to: slug }, language_code: { from: 'en', to: 'de-AT' } } }],
      );
      // Resolve follows the new slug, and the old one is gone.
      assert.equal((await t.call('GET', `/v1/public/organizations/resolve?slug=${slug}`)).json().data.id, org.id);
      assertError(await t.call('GET', `/v1/public/organizations/resolve?slug=${org.slug}`), 404, 'organization_not_found');
      for (const code of ['xx', 'klingon', 'RO']) {
        const r = await patch(admin.token, org.id, { language_code: code });
        assert.equal(r.statusCode, 200, r.body);
        assert.equal((await orgRow(org.id)).language_code, code);
      }
    });

    it('a body that changes nothing: 200, nothing written, no audit entry', async () => {
      const org = await t.createOrg({ name: 'Same' });
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const before = await orgRow(org.id);
      const res = await patch(admin.token, org.id, { name: 'Same', slug: org.slug, language_code: 'en' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.name, 'Same');
      assert.deepEqual(await orgRow(org.id), before);
      assert.deepEqual(await updateAudits(org.id), []);
    });

    it('a slug used by another organization: 409 slug_taken, nothing changed or audited', async () => {
      const other = await t.createOrg();
      const org = await t.createOrg({ name: 'Keep' });
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const before = await orgRow(org.id);
      const err = assertError(await patch(admin.token, org.id, { slug: other.slug, name: 'Changed' }), 409, 'slug_taken');
      assert.equal(err.fields, undefined);
      assert.deepEqual(await orgRow(org.id), before);
      assert.deepEqual(await updateAudits(org.id), []);
    });

    it('an empty body, unknown fields and invalid values: 400 validation_error naming the input, nothing changed', async () => {
      const org = await t.createOrg({ name: 'Valid' });
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const before = await orgRow(org.id);
      const cases: { body: unknown; field: string }[] = [
        { body: {}, field: '_body' },
        { body: { color: 'blue' }, field: 'color' },
        { body: { name: 'Ok', id: org.id }, field: 'id' },
        { body: { name: '' }, field: 'name' },
        { body: { name: '   ' }, field: 'name' },
        { body: { name: 'x'.repeat(201) }, field: 'name' },
        { body: { name: 42 }, field: 'name' },
        { body: { name: null }, field: 'name' },
        { body: { slug: 'Upper-Case' }, field: 'slug' },
        { body: { slug: 'trailing-' }, field: 'slug' },
        { body: { slug: 'a'.repeat(64) }, field: 'slug' },
        { body: { language_code: '' }, field: 'language_code' },
        { body: { language_code: 'x'.repeat(36) }, field: 'language_code' },
        { body: { language_code: null }, field: 'language_code' },
      ];
      for (const c of cases) {
        const err = assertError(await patch(admin.token, org.id, c.body), 400, 'validation_error');
        assert.equal(typeof err.fields?.[c.field], 'string', `${JSON.stringify(c.body)} -> ${JSON.stringify(err)}`);
      }
      for (const body of ['[]', '"name"', 'null']) {
        const res = await t.call('PATCH', `/v1/organizations/${org.id}`, { token: admin.token, rawBody: body });
        assert.equal(res.statusCode, 400, `${body}: ${res.body}`);
      }
      assertError(await t.call('PATCH', `/v1/organizations/${org.id}`, { token: admin.token, rawBody: '{"name": ' }), 400, 'invalid_body');
      assert.deepEqual(await orgRow(org.id), before);
      assert.deepEqual(await updateAudits(org.id), []);
    });

    it('without organizations.update: specialist, customer support and patient get 403 forbidden', async () => {
      const org = await t.createOrg({ name: 'Guarded' });
      const specialist = await t.addMember(org.id, uniqueEmail('spec'), 'specialist');
      const support = await t.addMember(org.id, uniqueEmail('support'), 'customer_support');
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      const plain = await t.token(uniqueEmail('plain'));
      for (const token of [specialist.token, support.token, patient.token, plain]) {
        assertError(await patch(token, org.id, { name: 'Hijacked' }), 403, 'forbidden');
        // An empty body is refused by the gate first: nothing about the organization is revealed.
        assertError(await patch(token, org.id, {}), 403, 'forbidden');
      }
      assert.equal((await orgRow(org.id)).name, 'Guarded');
      assert.deepEqual(await updateAudits(org.id), []);
    });

    it('an admin of A cannot update B (403), even with A in X-Organization-ID; a permission granted in A does not apply to B', async () => {
      const a = await t.createOrg({ name: 'A' });
      const b = await t.createOrg({ name: 'B' });
      const email = uniqueEmail('cross');
      const admin = await t.addMember(a.id, email, 'admin');
      assertError(await patch(admin.token, b.id, { name: 'Taken over' }), 403, 'forbidden');
      assertError(await patch(admin.token, b.id, { name: 'Taken over' }, a.id), 403, 'forbidden');
      // Staff in B without the permission there: still 403.
      await t.addMember(b.id, email, 'specialist');
      assertError(await patch(admin.token, b.id, { name: 'Taken over' }, a.id), 403, 'forbidden');
      assert.equal((await orgRow(b.id)).name, 'B');
      assert.deepEqual(await updateAudits(b.id), []);
      // Its own organization works.
      assert.equal((await patch(admin.token, a.id, { name: 'A2' }, b.id)).statusCode, 200);
    });

    it('a role whose clone was given organizations.update may update: the gate reads codes, not role names', async () => {
      const org = await t.createOrg({ name: 'Codes' });
      const support = await t.addMember(org.id, uniqueEmail('support'), 'customer_support');
      await t.db.query(
        `insert into role_permissions (role_id, permission_code, organization_id)
         select id, 'organizations.update', organization_id from roles where organization_id = $1 and code = 'customer_support'`,
        [org.id],
      );
      const res = await patch(support.token, org.id, { name: 'Codes 2' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await updateAudits(org.id))[0]!.actor_user_id, support.userId);
    });

    it('a superadmin may update any organization, audited with the superadmin as actor', async () => {
      const org = await t.createOrg({ name: 'Console' });
      const email = uniqueEmail('super');
      const token = await t.superadmin(email);
      const superId = (await t.call('GET', '/v1/me', { token })).json().data.id;
      const res = await patch(token, org.id, { language_code: 'ro' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.language_code, 'ro');
      assert.deepEqual(await updateAudits(org.id), [
        {
          organization_id: org.id,
          actor_user_id: superId,
          entity_type: 'organization',
          entity_id: org.id,
          data: { changes: { language_code: { from: 'en', to: 'ro' } } },
        },
      ]);
      // A taken slug is 409 for a superadmin too.
      assertError(await patch(token, org.id, { slug: (await t.createOrg()).slug }), 409, 'slug_taken');
    });

    it('an organization that does not exist: 404 organization_not_found; a malformed id: 404 not_found; no token: 401', async () => {
      const token = await t.superadmin();
      assertError(await patch(token, '01900000-0000-7000-8000-0000000000ff', { name: 'x' }), 404, 'organization_not_found');
      assertError(await patch(token, 'not-a-uuid', { name: 'x' }), 404, 'not_found');
      const org = await t.createOrg({ name: 'Anon' });
      assertError(await t.call('PATCH', `/v1/organizations/${org.id}`, { body: { name: 'x' } }), 401, 'unauthorized');
      assert.equal((await orgRow(org.id)).name, 'Anon');
    });

    it('the audit entry is written in the same transaction: when it fails, the update is rolled back', async () => {
      const org = await t.createOrg({ name: 'Atomic' });
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const poison = `Poison ${tag()}`;
      // A trigger that refuses exactly this audit entry (other tests running meanwhile are unaffected).
      const fn = `test_refuse_${tag()}`;
      await t.db.exec(
        `create function ${fn}() returns trigger language plpgsql as $$ begin
           if new.data -> 'changes' -> 'name' ->> 'to' = '${poison}' then raise exception 'audit refused'; end if;
           return new; end $$;
         create trigger ${fn} before insert on audit_logs for each row execute function ${fn}();`,
      );
      try {
        const res = await patch(admin.token, org.id, { name: poison });
        assertError(res, 500, 'internal_error');
        assert.doesNotMatch(res.body, /audit refused/, 'internals are not exposed');
        assert.equal((await orgRow(org.id)).name, 'Atomic');
        assert.deepEqual(await updateAudits(org.id), []);
      } finally {
        await t.db.exec(`drop trigger ${fn} on audit_logs; drop function ${fn}();`);
      }
    });
  });

  describe('GET /v1/organizations/{id}/settings', () => {
    const settings = (token: string, id: string, org?: string) =>
      t.call('GET', `/v1/organizations/${id}/settings`, { token, ...(org ? { org } : {}) });

    it('every staff role reads them (organizations.view_directory): organization_id, language_code, default_timezone, calendar_title, updated_at', async () => {
      const org = await t.createOrg({ language_code: 'ro' });
      for (const role of ['admin', 'specialist', 'customer_support']) {
        const member = await t.addMember(org.id, uniqueEmail(role), role);
        const res = await settings(member.token, org.id);
        assert.equal(res.statusCode, 200, `${role}: ${res.body}`);
        const body = res.json();
        assert.deepEqual(Object.keys(body), ['data']);
        assert.deepEqual(Object.keys(body.data).sort(), [
          'calendar_title',
          'default_timezone',
          'language_code',
          'organization_id',
          'updated_at',
        ]);
        assert.equal(body.data.organization_id, org.id);
        assert.equal(body.data.language_code, 'ro');
        assert.equal(body.data.default_timezone, 'UTC');
        assert.match(body.data.updated_at, RFC3339_UTC);
      }
    });

    it('language_code follows PATCH /v1/organizations/{id}, and updated_at moves with it', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const before = (await settings(admin.token, org.id)).json().data;
      assert.equal(before.language_code, 'en');
      assert.equal(
        (await t.call('PATCH', `/v1/organizations/${org.id}`, { token: admin.token, body: { language_code: 'ro' } })).statusCode,
        200,
      );
      const after = (await settings(admin.token, org.id)).json().data;
      assert.equal(after.language_code, 'ro');
      assert.ok(Date.parse(after.updated_at) > Date.parse(before.updated_at));
    });

    it('a patient, a stranger and an admin of another organization get 403 forbidden; a superadmin reads them', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const adminA = await t.addMember(a.id, uniqueEmail('admin-a'), 'admin');
      const patient = await t.addPatient(b.id, uniqueEmail('patient'));
      const stranger = await t.token(uniqueEmail('stranger'));
      assertError(await settings(adminA.token, b.id), 403, 'forbidden');
      assertError(await settings(adminA.token, b.id, a.id), 403, 'forbidden');
      assertError(await settings(patient.token, b.id), 403, 'forbidden');
      assertError(await settings(stranger, b.id), 403, 'forbidden');
      const su = await t.superadmin();
      const res = await settings(su, b.id);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.organization_id, b.id);
    });

    it('an organization that does not exist: 404 organization_not_found; no token: 401', async () => {
      const su = await t.superadmin();
      assertError(await settings(su, '01900000-0000-7000-8000-0000000000ee'), 404, 'organization_not_found');
      assertError(await t.call('GET', `/v1/organizations/${(await t.createOrg()).id}/settings`), 401, 'unauthorized');
    });

    it('every organization has exactly one settings row, created with it (also by direct insert), removed with it', async () => {
      const slug = uniqueSlug('direct');
      const { rows } = await t.db.query<{ id: string }>(`insert into organizations (slug, name) values ($1, 'Direct') returning id`, [
        slug,
      ]);
      const id = rows[0]!.id;
      const { rows: missing } = await t.db.query<{ n: number }>(
        `select count(*)::int as n from organizations o where (select count(*) from organization_settings s where s.organization_id = o.id) <> 1`,
      );
      assert.equal(missing[0]!.n, 0);
      await t.db.query('delete from organizations where id = $1', [id]);
      const { rows: gone } = await t.db.query<{ n: number }>(
        'select count(*)::int as n from organization_settings where organization_id = $1',
        [id],
      );
      assert.equal(gone[0]!.n, 0);
    });

    it('row-level security: read needs view_directory at the organization in scope; update needs update_settings; no insert or delete', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const admin = await t.addMember(a.id, uniqueEmail('admin'), 'admin');
      const scope = (orgId: string, permissions: string[]) => ({ role: 'app_rls' as const, principalId: admin.userId, orgId, permissions });
      const count = (orgId: string, permissions: string[], target: string) =>
        t.db.withScope(
          scope(orgId, permissions),
          async (tx) =>
            (await tx.query<{ n: number }>('select count(*)::int as n from organization_settings where organization_id = $1', [target]))
              .rows[0]!.n,
        );
      assert.equal(await count(a.id, ['organizations.view_directory'], a.id), 1);
      assert.equal(await count(a.id, ['organizations.update'], a.id), 0, 'organizations.update alone does not read settings');
      assert.equal(await count(b.id, ['organizations.view_directory'], a.id), 0, "another organization's scope sees nothing of A");
      const { rows: all } = await t.db.query<{ n: number }>('select count(*)::int as n from organization_settings');
      assert.ok(all[0]!.n >= 2);
      assert.equal(
        await t.db.withScope(
          scope(a.id, ['organizations.view_directory']),
          async (tx) => (await tx.query<{ n: number }>('select count(*)::int as n from organization_settings')).rows[0]!.n,
        ),
        1,
        'an unfiltered read sees only the organization in scope',
      );

      const update = (orgId: string, permissions: string[], target: string) =>
        t.db.withScope(
          scope(orgId, permissions),
          async (tx) =>
            (await tx.query(`update organization_settings set default_timezone = 'Europe/Bucharest' where organization_id = $1`, [target]))
              .rowCount,
        );
      assert.equal(await update(a.id, ['organizations.view_directory', 'organizations.update'], a.id), 0);
      assert.equal(await update(b.id, ['organizations.view_directory', 'organizations.update_settings'], a.id), 0);
      assert.equal(await update(a.id, ['organizations.view_directory', 'organizations.update_settings'], a.id), 1);
      const su = await t.superadmin();
      assert.equal((await settings(su, a.id)).json().data.default_timezone, 'Europe/Bucharest');

      for (const sql of [
        `insert into organization_settings (organization_id) values ('${b.id}')`,
        `delete from organization_settings where organization_id = '${a.id}'`,
      ]) {
        for (const role of ['app_rls', 'app_bypass'] as const) {
          await assert.rejects(
            t.db.withScope({ ...scope(a.id, ['organizations.update_settings']), role }, (tx) => tx.query(sql)),
            /permission denied/,
            `${role}: ${sql}`,
          );
        }
      }
    });
  });
});
