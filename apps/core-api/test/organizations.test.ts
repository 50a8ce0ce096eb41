import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, startTestApp, uniqueEmail, uniqueSlug, type TestApp, assertError, TEMPLATE_GRANTS } from './helpers.ts';

// POST /v1/organizations, GET /v1/organizations/{id} and GET /v1/public/organizations/resolve
// (spec 2.5, 2.7, 4.2, 5.3, 7, 8).

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

// Default grants of spec 2.7.
describe('organizations', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  async function counts() {
    const { rows } = await t.db.query<{ orgs: number; roles: number; grants: number; audits: number }>(
      `select (select count(*)::int from organizations) as orgs,
              (select count(*)::int from roles) as roles,
              (select count(*)::int from role_permissions) as grants,
              (select count(*)::int from audit_logs where action = 'organization.created') as audits`,
    );
    return rows[0]!;
  }

  async function orgBySlug(slug: string) {
    const { rows } = await t.db.query<{ id: string; name: string; language_code: string }>(
      'select id, name, language_code from organizations where slug = $1',
      [slug],
    );
    return rows[0] ?? null;
  }

  const create = (token: string, body: unknown) => t.call('POST', '/v1/organizations', { token, body });

  describe('POST /v1/organizations', () => {
    it('a superadmin creates one: 201 with the organization, language_code defaults to en', async () => {
      const token = await t.superadmin();
      const slug = uniqueSlug();
      const res = await create(token, { name: 'North Clinic', slug });
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      const d = body.data;
      assert.deepEqual(Object.keys(d).sort(), ['created_at', 'id', 'language_code', 'name', 'slug', 'updated_at']);
      assert.match(d.id, UUID_V7);
      assert.equal(d.slug, slug);
      assert.equal(d.name, 'North Clinic');
      assert.equal(d.language_code, 'en');
      assert.match(d.created_at, RFC3339_UTC);
      assert.match(d.updated_at, RFC3339_UTC);
      assert.ok(Math.abs(Date.parse(d.created_at) - Date.now()) < 5 * 60_000);
      assert.deepEqual(await orgBySlug(slug), { id: d.id, name: 'North Clinic', language_code: 'en' });
    });

    it('language_code is stored as given, with no list of allowed values', async () => {
      const token = await t.superadmin();
      for (const code of ['de', 'ro', 'pt-BR']) {
        const slug = uniqueSlug();
        const res = await create(token, { name: `Clinic ${code}`, slug, language_code: code });
        assert.equal(res.statusCode, 201, res.body);
        assert.equal(res.json().data.language_code, code);
        assert.equal((await orgBySlug(slug))!.language_code, code);
      }
    });

    it('clones exactly the three system role templates, with their permission sets, and audits the creation', async () => {
      const email = uniqueEmail('creator');
      const token = await t.superadmin(email);
      const creatorId = (await t.call('GET', '/v1/me', { token })).json().data.id;
      const res = await create(token, { name: 'Clone check', slug: uniqueSlug() });
      assert.equal(res.statusCode, 201, res.body);
      const orgId = res.json().data.id;

      const { rows: roles } = await t.db.query<{ id: string; code: string; is_system: boolean }>(
        'select id, code, is_system from roles where organization_id = $1 order by code',
        [orgId],
      );
      assert.deepEqual(
        roles.map((r) => r.code),
        ['admin', 'customer_support', 'specialist'],
      );
      assert.ok(
        roles.every((r) => r.is_system),
        'every clone is a system role',
      );

      const { rows: grants } = await t.db.query<{ code: string; perms: string[]; orgs: string[] }>(
        `select r.code, array_agg(rp.permission_code order by rp.permission_code) as perms,
                array_agg(distinct rp.organization_id::text) as orgs
         from roles r join role_permissions rp on rp.role_id = r.id
         where r.organization_id = $1 group by r.code order by r.code`,
        [orgId],
      );
      assert.deepEqual(Object.fromEntries(grants.map((g) => [g.code, g.perms])), TEMPLATE_GRANTS);
      for (const g of grants) assert.deepEqual(g.orgs, [orgId], `role_permissions of ${g.code} carry the organization id`);

      // The clones are copies: the templates are untouched and still without an organization.
      const { rows: templates } = await t.db.query<{ code: string; perms: string[] }>(
        `select r.code, array_agg(rp.permission_code order by rp.permission_code) as perms
         from roles r join role_permissions rp on rp.role_id = r.id
         where r.organization_id is null group by r.code order by r.code`,
      );
      assert.deepEqual(Object.fromEntries(templates.map((g) => [g.code, g.perms])), TEMPLATE_GRANTS);

      const { rows: audits } = await t.db.query<{ organization_id: string; actor_user_id: string; entity_type: string; entity_id: string }>(
        `select organization_id, actor_user_id, entity_type, entity_id from audit_logs where action = 'organization.created' and entity_id = $1`,
        [orgId],
      );
      assert.deepEqual(audits, [{ organization_id: orgId, actor_user_id: creatorId, entity_type: 'organization', entity_id: orgId }]);
    });

    it('a non-superadmin gets 403 forbidden and nothing is created', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const plain = await t.token(uniqueEmail('plain'));
      const patient = await t.addPatient(org.id, uniqueEmail('patient'));
      for (const token of [admin.token, plain, patient.token]) {
        const slug = uniqueSlug();
        assertError(await create(token, { name: 'Nope', slug }), 403, 'forbidden');
        // Even with its own organization in scope.
        assertError(await t.call('POST', '/v1/organizations', { token, org: org.id, body: { name: 'Nope', slug } }), 403, 'forbidden');
        assert.equal(await orgBySlug(slug), null);
      }
    });

    it('without a token: 401 unauthorized', async () => {
      const slug = uniqueSlug();
      assertError(await t.call('POST', '/v1/organizations', { body: { name: 'Nope', slug } }), 401, 'unauthorized');
      assert.equal(await orgBySlug(slug), null);
    });

    it('a taken slug: 409 slug_taken, and nothing changes', async () => {
      const token = await t.superadmin();
      const slug = uniqueSlug();
      const first = await create(token, { name: 'First', slug });
      assert.equal(first.statusCode, 201, first.body);
      const before = await counts();
      const err = assertError(await create(token, { name: 'Second', slug, language_code: 'de' }), 409, 'slug_taken');
      assert.equal(err.fields, undefined);
      assert.deepEqual(await counts(), before);
      assert.deepEqual(await orgBySlug(slug), { id: first.json().data.id, name: 'First', language_code: 'en' });
    });

    it('an invalid body: 400 validation_error with fields naming the input, and nothing created', async () => {
      const token = await t.superadmin();
      const before = await counts();
      const cases: { body: unknown; field: string }[] = [
        { body: { slug: uniqueSlug() }, field: 'name' },
        { body: { name: '', slug: uniqueSlug() }, field: 'name' },
        { body: { name: 'No slug' }, field: 'slug' },
        { body: { name: 'Bad', slug: 'Bad Slug' }, field: 'slug' },
        { body: { name: 'Bad', slug: '-leading-hyphen' }, field: 'slug' },
        { body: { name: 'Bad', slug: 'a'.repeat(64) }, field: 'slug' },
        { body: { name: 'Extra', slug: uniqueSlug(), color: 'blue' }, field: 'color' },
        { body: { name: 'Lang', slug: uniqueSlug(), language_code: '' }, field: 'language_code' },
        { body: { name: 42, slug: uniqueSlug() }, field: 'name' },
      ];
      for (const c of cases) {
        const err = assertError(await create(token, c.body), 400, 'validation_error');
        assert.equal(typeof err.fields?.[c.field], 'string', `${JSON.stringify(c.body)} -> ${JSON.stringify(err)}`);
      }
      assertError(await t.call('POST', '/v1/organizations', { token, rawBody: '{"name": "x", ' }), 400, 'invalid_body');
      assert.deepEqual(await counts(), before);
    });

    it('honours Idempotency-Key: a retry replays the stored 201 and creates nothing more', async () => {
      const token = await t.superadmin();
      const slug = uniqueSlug();
      const key = `create-${slug}`;
      const send = (body: unknown) => t.call('POST', '/v1/organizations', { token, body, headers: { 'idempotency-key': key } });
      const first = await send({ name: 'Once', slug });
      assert.equal(first.statusCode, 201, first.body);
      assert.equal(first.headers['idempotency-replayed'], undefined);
      const before = await counts();
      const retry = await send({ name: 'Once', slug });
      assert.equal(retry.statusCode, 201, retry.body);
      assert.equal(retry.headers['idempotency-replayed'], 'true');
      assert.equal(retry.body, first.body, 'byte-for-byte');
      assert.deepEqual(await counts(), before);
      // The same key with another body is refused rather than replayed.
      assertError(await send({ name: 'Twice', slug }), 422, 'idempotency_key_reused');
      // Without the key the retry is a new request, and the slug is taken.
      assertError(await create(token, { name: 'Once', slug }), 409, 'slug_taken');
    });

    it('atomic: when cloning the roles fails, the organization does not exist either', async () => {
      const token = await t.superadmin();
      const before = await counts();
      // Make the role cloning fail for organizations whose slug starts with "atomic-" only: the
      // organization row is inserted first, then the roles and their grants, in one transaction.
      await t.db.exec(`
        create function test_fail_role_grants() returns trigger language plpgsql as $$
        begin
          if exists (select 1 from organizations where id = new.organization_id and slug like 'atomic-%') then
            raise exception 'role cloning failed on purpose';
          end if;
          return new;
        end $$;
        create trigger test_fail_role_grants before insert on role_permissions
          for each row execute function test_fail_role_grants();`);
      try {
        const slug = uniqueSlug('atomic');
        const err = assertError(await create(token, { name: 'Half made', slug }), 500, 'internal_error');
        assert.doesNotMatch(err.message, /on purpose|role_permissions|trigger/, 'internals are not shown to the client');
        assert.equal(await orgBySlug(slug), null);
        assert.deepEqual(await counts(), before);
        // The trigger lets other slugs through: the failure above was the cloning, not the setup.
        assert.equal((await create(token, { name: 'Whole', slug: uniqueSlug() })).statusCode, 201);
      } finally {
        await t.db.exec('drop trigger test_fail_role_grants on role_permissions; drop function test_fail_role_grants();');
      }
    });
  });

  describe('GET /v1/organizations/{id}', () => {
    it('admin, specialist, customer support and patient of the organization read it: 200', async () => {
      const org = await t.createOrg({ name: 'Readable', language_code: 'ro' });
      const callers = [
        await t.addMember(org.id, uniqueEmail('admin'), 'admin'),
        await t.addMember(org.id, uniqueEmail('spec'), 'specialist'),
        await t.addMember(org.id, uniqueEmail('support'), 'customer_support'),
        await t.addPatient(org.id, uniqueEmail('patient')),
      ];
      for (const c of callers) {
        const res = await t.call('GET', `/v1/organizations/${org.id}`, { token: c.token });
        assert.equal(res.statusCode, 200, res.body);
        const d = res.json().data;
        assert.deepEqual(Object.keys(d).sort(), ['created_at', 'id', 'language_code', 'name', 'slug', 'updated_at']);
        assert.match(d.created_at, RFC3339_UTC);
        assert.deepEqual(d, org, 'the organization as it was created');
      }
    });

    it('a member of another organization: 403 forbidden; an admin of A cannot read B, whatever header it sends', async () => {
      const a = await t.createOrg();
      const b = await t.createOrg();
      const adminA = await t.addMember(a.id, uniqueEmail('admin-a'), 'admin');
      const patientA = await t.addPatient(a.id, uniqueEmail('patient-a'));
      for (const token of [adminA.token, patientA.token]) {
        assertError(await t.call('GET', `/v1/organizations/${b.id}`, { token }), 403, 'forbidden');
        assertError(await t.call('GET', `/v1/organizations/${b.id}`, { token, org: a.id }), 403, 'forbidden');
        assertError(await t.call('GET', `/v1/organizations/${b.id}`, { token, org: b.id }), 403, 'forbidden');
      }
      // A user with no membership at all.
      assertError(await t.call('GET', `/v1/organizations/${a.id}`, { as: uniqueEmail('stranger') }), 403, 'forbidden');
      // While A stays readable for its admin, even with B in the header: the path wins.
      assert.equal((await t.call('GET', `/v1/organizations/${a.id}`, { token: adminA.token, org: b.id })).statusCode, 200);
    });

    it('a patient whose link is soft-deleted: 403 forbidden', async () => {
      const org = await t.createOrg();
      const patient = await t.addPatient(org.id, uniqueEmail('former'));
      assert.equal((await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token })).statusCode, 200);
      await t.db.query('update patients set deleted_at = now() where organization_id = $1 and user_id = $2', [org.id, patient.userId]);
      assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: patient.token }), 403, 'forbidden');
    });

    it('a superadmin reads any organization: 200', async () => {
      const org = await t.createOrg();
      const res = await t.call('GET', `/v1/organizations/${org.id}`, { token: await t.superadmin() });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.id, org.id);
    });

    it('an organization that does not exist: 404 organization_not_found, for members and superadmins', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      const missing = '01900000-0000-7000-8000-0000000000bb';
      assertError(await t.call('GET', `/v1/organizations/${missing}`, { token: await t.superadmin() }), 404, 'organization_not_found');
      assertError(await t.call('GET', `/v1/organizations/${missing}`, { token: admin.token }), 404, 'organization_not_found');
    });

    it('a malformed id: 404 not_found', async () => {
      const org = await t.createOrg();
      const admin = await t.addMember(org.id, uniqueEmail('admin'), 'admin');
      for (const id of ['not-a-uuid', '123', `${org.id}x`]) {
        assertError(await t.call('GET', `/v1/organizations/${id}`, { token: admin.token }), 404, 'not_found');
        assertError(await t.call('GET', `/v1/organizations/${id}`, { token: await t.superadmin() }), 404, 'not_found');
      }
    });

    it('without a token: 401 unauthorized', async () => {
      const org = await t.createOrg();
      assertError(await t.call('GET', `/v1/organizations/${org.id}`), 401, 'unauthorized');
      assertError(await t.call('GET', `/v1/organizations/${org.id}`, { token: 'nope' }), 401, 'unauthorized');
    });
  });

  describe('GET /v1/public/organizations/resolve', () => {
    const resolve = (query: string) => t.call('GET', `/v1/public/organizations/resolve?${query}`);

    it('by slug: 200 with id, slug, name and language_code only, no token needed', async () => {
      const org = await t.createOrg({ name: 'Resolvable', language_code: 'ro' });
      const res = await resolve(`slug=${org.slug}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.deepEqual(Object.keys(body), ['data']);
      assert.deepEqual(body.data, { id: org.id, slug: org.slug, name: 'Resolvable', language_code: 'ro' });
      assert.deepEqual(Object.keys(body.data).sort(), ['id', 'language_code', 'name', 'slug']);
    });

    it('by domain: an unverified domain is 404 organization_not_found, a verified one resolves', async () => {
      const org = await t.createOrg({ name: 'Domain clinic' });
      const domain = `${uniqueSlug('book')}.example.com`;
      await t.db.query(
        'insert into organization_domains (organization_id, domain, verification_token, verified_at) values ($1, $2, $3, null)',
        [org.id, domain, 'token-unverified'],
      );
      assertError(await resolve(`domain=${domain}`), 404, 'organization_not_found');
      await t.db.query('update organization_domains set verified_at = now() where domain = $1', [domain]);
      const res = await resolve(`domain=${domain}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().data, { id: org.id, slug: org.slug, name: 'Domain clinic', language_code: 'en' });
      // The slug of an organization is not one of its domains, and the domain is not a slug.
      assertError(await resolve(`domain=${org.slug}.example.org`), 404, 'organization_not_found');
    });

    it('neither or both of slug and domain: 422 validation_failed', async () => {
      const org = await t.createOrg();
      for (const q of ['', 'slug=', 'other=1', `slug=${org.slug}&domain=example.com`]) {
        const err = assertError(await resolve(q), 422, 'validation_failed');
        assert.ok(err.fields && Object.keys(err.fields).length > 0, `${q}: ${JSON.stringify(err)}`);
      }
    });

    it('an unknown slug or domain: 404 organization_not_found', async () => {
      assertError(await resolve(`slug=${uniqueSlug('missing')}`), 404, 'organization_not_found');
      assertError(await resolve('slug=Not%20A%20Slug'), 404, 'organization_not_found');
      assertError(await resolve('domain=nowhere.example.net'), 404, 'organization_not_found');
    });
  });
});

describe('GET /v1/public/organizations/resolve rate limiting (spec 8)', () => {
  // Two more instances on one extra database: one with a budget of 3 per minute, one whose Redis
  // does not answer.
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let limited: TestApp;
  let broken: TestApp;
  let slug: string;
  before(async () => {
    database = await freshDatabase();
    const env = { RATELIMIT_PUBLIC_RESOLVE_LIMIT: '3', RATELIMIT_PUBLIC_RESOLVE_WINDOW: '60' };
    limited = await startTestApp({ database, env });
    broken = await startTestApp({ database, migrate: false, env: { ...env, REDIS_URL: 'redis://127.0.0.1:1' } });
    slug = (await limited.createOrg()).slug;
  });
  after(async () => {
    await limited?.close();
    await broken?.close();
    await database?.drop();
  });

  const resolveFrom = (app: TestApp, ip: string, query = `slug=${slug}`) =>
    app.app.inject({ method: 'GET', url: `/v1/public/organizations/resolve?${query}`, remoteAddress: ip });

  function limitHeaders(res: { headers: Record<string, unknown> }) {
    const h = res.headers;
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
      assert.match(String(h[name]), /^\d+$/, `${name} is an integer: ${String(h[name])}`);
    }
    return { limit: Number(h['x-ratelimit-limit']), remaining: Number(h['x-ratelimit-remaining']), reset: Number(h['x-ratelimit-reset']) };
  }

  it('carries X-RateLimit-* on every response and refuses the 4th request with 429 rate_limited and Retry-After', async () => {
    const ip = '203.0.113.10';
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await resolveFrom(limited, ip);
      assert.equal(res.statusCode, 200, res.body);
      const h = limitHeaders(res);
      assert.equal(h.limit, 3);
      assert.ok(h.reset >= 1 && h.reset <= 60, `reset ${h.reset}`);
      remaining.push(h.remaining);
    }
    assert.deepEqual(remaining, [2, 1, 0]);

    const denied = await resolveFrom(limited, ip);
    assertError(denied, 429, 'rate_limited');
    const h = limitHeaders(denied);
    assert.equal(h.limit, 3);
    assert.equal(h.remaining, 0);
    assert.ok(h.reset >= 1 && h.reset <= 60);
    const retryAfter = String(denied.headers['retry-after']);
    assert.match(retryAfter, /^\d+$/, 'Retry-After is integer seconds');
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60);
    // Denied also when the query would otherwise fail: the limit comes first.
    assertError(await resolveFrom(limited, ip, 'slug=does-not-exist'), 429, 'rate_limited');
  });

  it('counts and labels every request to the route, whatever its outcome (404, 422 of either kind)', async () => {
    const ip = '203.0.113.20';
    const outcomes = [
      [`slug=${uniqueSlug('missing')}`, 404],
      ['', 422],
      [`slug=${'a'.repeat(64)}`, 422],
    ] as const;
    const remaining: number[] = [];
    for (const [query, status] of outcomes) {
      const res = await resolveFrom(limited, ip, query);
      assert.equal(res.statusCode, status, `${query}: ${res.body}`);
      const h = limitHeaders(res);
      assert.equal(h.limit, 3, `${query}: the resolve limit, not another one`);
      remaining.push(h.remaining);
    }
    assert.deepEqual(remaining, [2, 1, 0]);
    assertError(await resolveFrom(limited, ip), 429, 'rate_limited');
  });

  it('each client address has its own budget', async () => {
    const first = '203.0.113.30';
    const second = '203.0.113.31';
    for (let i = 0; i < 3; i++) assert.equal((await resolveFrom(limited, first)).statusCode, 200);
    assertError(await resolveFrom(limited, first), 429, 'rate_limited');
    const other = await resolveFrom(limited, second);
    assert.equal(other.statusCode, 200, other.body);
    assert.equal(limitHeaders(other).remaining, 2);
  });

  it('fails open: with the limiter store unreachable, requests beyond the limit still pass', async () => {
    const ip = '203.0.113.40';
    for (let i = 0; i < 5; i++) {
      const res = await resolveFrom(broken, ip);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.slug, slug);
      assert.equal(limitHeaders(res).limit, 3);
    }
  });
});
