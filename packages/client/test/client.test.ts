import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { startTestApp, uniqueEmail, uniqueSlug, type TestApp } from '../../../apps/core-api/test/helpers.ts';
import { GENERATE_COMMAND, loadOpenApi, operationsOf, renderAll, SRC_DIR } from '../scripts/generate.ts';
import { ApiError, createClient, operations, type Client, type ResponseOf } from '../src/index.ts';

// The typed client (architecture section 3, spec 9.5) against a core API listening on a real port, and
// the guard that keeps the committed openapi.json (and what is generated from it) in step with the routes.

describe('@clinic/client against a listening server', () => {
  let t: TestApp;
  let baseUrl: string;
  before(async () => {
    t = await startTestApp();
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => t.close());

  const clientFor = (token?: string, organizationId?: string) =>
    createClient({ baseUrl, ...(token ? { token } : {}), ...(organizationId ? { organizationId } : {}) });

  it('has one method per operation id, and nothing else', () => {
    const client = clientFor();
    assert.deepEqual(Object.keys(client).sort(), Object.keys(operations).sort());
    for (const id of ['getMe', 'switchOrganization', 'createOrganization', 'getOrganization', 'resolveOrganization', 'listUsers']) {
      assert.equal(typeof (client as unknown as Record<string, unknown>)[id], 'function', id);
    }
  });

  it('getMe, createOrganization, getOrganization and resolveOrganization', async () => {
    const email = uniqueEmail('su');
    const su = clientFor(await t.superadmin(email));

    const me = await su.getMe();
    assert.equal(me.status, 200);
    assert.equal(me.error, null);
    assert.equal(me.data.data.email, email);
    assert.equal(me.data.data.is_superadmin, true);
    assert.match(me.headers.get('x-request-id') ?? '', /.{8,}/);

    const slug = uniqueSlug();
    const created = await su.createOrganization({ body: { name: 'Client Clinic', slug, language_code: 'ro' } });
    assert.equal(created.status, 201);
    const org = created.data.data;
    assert.deepEqual(
      { slug: org.slug, name: org.name, language_code: org.language_code },
      { slug, name: 'Client Clinic', language_code: 'ro' },
    );

    const got = await su.getOrganization({ params: { id: org.id } });
    assert.equal(got.status, 200);
    assert.deepEqual(got.data.data, org);

    // A public route: no token at all.
    const resolved = await clientFor().resolveOrganization({ query: { slug } });
    assert.equal(resolved.status, 200);
    assert.deepEqual(resolved.data.data, { id: org.id, slug, name: 'Client Clinic', language_code: 'ro' });
    assert.ok(resolved.headers.get('x-ratelimit-limit'), 'rate-limit headers reach the caller');
  });

  it('switchOrganization stores the default organization that getMe then reports', async () => {
    const a = await t.createOrg();
    const b = await t.createOrg();
    const email = uniqueEmail('staff');
    await t.addMember(a.id, email, 'specialist');
    await t.addMember(b.id, email, 'admin');
    const client = clientFor(await t.token(email));

    const switched = await client.switchOrganization({ body: { organization_id: b.id } });
    assert.equal(switched.status, 200);
    assert.equal(switched.data.data.current_organization_id, b.id);
    const me = await client.getMe();
    assert.equal(me.data.data.current_organization_id, b.id);
    assert.equal(me.data.data.current_role_code, 'admin');
    // X-Organization-ID per call wins over the stored choice.
    const scoped = await client.getMe({ organizationId: a.id });
    assert.equal(scoped.data.data.current_organization_id, a.id);
    assert.equal(scoped.data.data.current_role_code, 'specialist');
  });

  it('errors reject with a typed ApiError carrying the envelope: 403 forbidden', async () => {
    const org = await t.createOrg();
    const client = clientFor(await t.token(uniqueEmail('outsider')));
    const err = await client.switchOrganization({ body: { organization_id: org.id } }).then(
      () => assert.fail('expected a 403'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 403);
    assert.equal(err.code, 'forbidden');
    assert.equal(err.operationId, 'switchOrganization');
    assert.equal(err.fields, undefined);
    assert.equal(err.message, err.body.error.message);
    assert.deepEqual(Object.keys(err.body), ['error']);

    await assert.rejects(clientFor(await t.token(uniqueEmail('plain'))).createOrganization({ body: { name: 'No', slug: uniqueSlug() } }), {
      name: 'ApiError',
      status: 403,
      code: 'forbidden',
    });
  });

  it('validation errors carry fields; 401 and 404 come through too', async () => {
    const client = clientFor(await t.token(uniqueEmail('v')));
    await assert.rejects(client.switchOrganization({ body: { organization_id: '00000000-0000-0000-0000-000000000000' } }), (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.status, 400);
      assert.equal(e.code, 'validation_error');
      assert.ok(e.fields && 'organization_id' in e.fields, JSON.stringify(e.body));
      return true;
    });
    await assert.rejects(clientFor().getMe(), { status: 401, code: 'unauthorized' });
    await assert.rejects(clientFor().resolveOrganization({ query: { slug: uniqueSlug('missing') } }), {
      status: 404,
      code: 'organization_not_found',
    });
  });

  it('with throwOnError: false, errors resolve as { data: null, error }', async () => {
    const client = createClient({ baseUrl, throwOnError: false });
    const res = await client.getMe();
    assert.equal(res.status, 401);
    assert.equal(res.data, null);
    assert.ok(res.error instanceof ApiError);
    assert.equal(res.error.code, 'unauthorized');
  });

  it('listUsers: the picker through the client, with the organization from the client options', async () => {
    const org = await t.createOrg();
    const email = uniqueEmail('picker');
    await t.addMember(org.id, email, 'specialist');
    const client = clientFor(await t.token(email), org.id);
    const res = await client.listUsers({ query: { q: `  ${email.slice(0, 12).toUpperCase()} ` } });
    assert.deepEqual(res.data, { data: [{ id: res.data.data[0]!.id, email, role_code: 'specialist' }] });
    // A per-call organization overrides the client's: not a member there, so no directory permission.
    const other = await t.createOrg();
    await assert.rejects(client.listUsers({ organizationId: other.id }), { status: 403, code: 'forbidden' });
  });

  it('sends JSON, Authorization, X-Organization-ID and Idempotency-Key; a token may be a function', async () => {
    const seen: Array<{ url: string; init: RequestInit }> = [];
    const recording: typeof fetch = async (input, init) => {
      seen.push({ url: String(input), init: init ?? {} });
      return fetch(input, init);
    };
    let calls = 0;
    const su = await t.superadmin();
    const client = createClient({
      baseUrl: `${baseUrl}/`,
      token: async () => {
        calls++;
        return su;
      },
      organizationId: null,
      fetch: recording,
    });
    const slug = uniqueSlug();
    await client.createOrganization({
      body: { name: 'Recorded', slug },
      idempotencyKey: 'create-recorded-1',
      headers: { 'x-request-id': 'client-test-0001' },
    });
    const org = (await client.resolveOrganization({ query: { slug, domain: undefined } })).data.data;
    await client.getOrganization({ params: { id: org.id }, organizationId: org.id });

    assert.equal(calls, 3);
    const [post, resolve, get] = seen.map((s) => ({
      url: s.url,
      method: s.init.method,
      headers: s.init.headers as Record<string, string>,
      body: s.init.body,
    }));
    assert.equal(post!.url, `${baseUrl}/v1/organizations`);
    assert.equal(post!.method, 'POST');
    assert.equal(post!.headers['content-type'], 'application/json');
    assert.equal(post!.headers.authorization, `Bearer ${su}`);
    assert.equal(post!.headers['idempotency-key'], 'create-recorded-1');
    assert.equal(post!.headers['x-request-id'], 'client-test-0001');
    assert.equal(post!.headers['x-organization-id'], undefined);
    assert.deepEqual(JSON.parse(String(post!.body)), { name: 'Recorded', slug });
    assert.equal(resolve!.url, `${baseUrl}/v1/public/organizations/resolve?slug=${slug}`);
    assert.equal(resolve!.headers['content-type'], undefined, 'no body, no content-type');
    assert.equal(resolve!.body, undefined);
    assert.equal(get!.url, `${baseUrl}/v1/organizations/${org.id}`);
    assert.equal(get!.headers['x-organization-id'], org.id);
  });

  it('a missing path parameter is a TypeError before any request', async () => {
    const client = clientFor();
    await assert.rejects((client.getOrganization as (r: unknown) => Promise<unknown>)({ params: {} }), (e: unknown) => {
      assert.ok(e instanceof TypeError);
      assert.match(e.message, /getOrganization: missing path parameter "id"/);
      return true;
    });
  });
});

/** Compile-time checks (tsc runs over the tests); never called. */
export function typeChecks(client: Client): void {
  // @ts-expect-error getOrganization needs params.id
  void client.getOrganization();
  // @ts-expect-error unknown path parameter
  void client.getOrganization({ params: { nope: 'x' } });
  // @ts-expect-error the body needs organization_id as a string
  void client.switchOrganization({ body: { organization_id: 1 } });
  // @ts-expect-error switchOrganization needs a body
  void client.switchOrganization();
  // @ts-expect-error no such operation
  void client.noSuchOperation;
  void client.getMe();
  void client.listUsers({ query: { q: 'ann', limit: '5' } });
  void client.resolveOrganization({ query: { slug: 'x' } });
  const email: ResponseOf<'getMe'>['data']['email'] = 'a@b.c';
  // @ts-expect-error email is a string
  const wrong: ResponseOf<'getMe'>['data']['email'] = 1;
  void email;
  void wrong;
}

/** JSON pointers where two JSON values differ, so a stale description fails with a readable message. */
function diffPaths(a: unknown, b: unknown, at = ''): string[] {
  if (Object.is(a, b)) return [];
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (!isObj(a) || !isObj(b) || Array.isArray(a) !== Array.isArray(b)) return [`${at || '/'}: changed`];
  const out: string[] = [];
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const p = `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (!(k in a)) out.push(`${p}: added by the routes`);
    else if (!(k in b)) out.push(`${p}: no longer in the routes`);
    else out.push(...diffPaths(a[k], b[k], p));
  }
  if (!out.length && JSON.stringify(Object.keys(a)) !== JSON.stringify(Object.keys(b))) out.push(`${at || '/'}: key order changed`);
  return out;
}

describe('@clinic/client generated files', () => {
  it(`are up to date with the routes (else run \`${GENERATE_COMMAND}\`)`, async () => {
    const doc = await loadOpenApi();
    const committedJson = await readFile(`${SRC_DIR}openapi.json`, 'utf8').catch(() => 'null');
    const fresh = await renderAll(doc);
    const committedDoc = JSON.parse(committedJson);
    const ids = (d: unknown) => {
      try {
        return operationsOf(d as Parameters<typeof operationsOf>[0]).map((o) => `${o.id} (${o.method} ${o.path})`);
      } catch {
        return [];
      }
    };
    const [was, now] = [ids(committedDoc), ids(doc)];
    const differences = [
      ...now.filter((o) => !was.includes(o)).map((o) => `operation ${o}: added by the routes`),
      ...was.filter((o) => !now.includes(o)).map((o) => `operation ${o}: no longer in the routes`),
      ...diffPaths(committedDoc, doc),
    ];
    assert.deepEqual(
      differences,
      [],
      `packages/client/src/openapi.json is stale: the routes changed. Run \`${GENERATE_COMMAND}\` and commit packages/client/src.\n` +
        `Differences (committed vs routes):\n  ${differences.slice(0, 15).join('\n  ')}${differences.length > 15 ? `\n  ... ${differences.length - 15} more` : ''}`,
    );
    for (const [name, content] of Object.entries(fresh)) {
      const committed = await readFile(`${SRC_DIR}${name}`, 'utf8').catch(() => null);
      assert.ok(committed === content, `packages/client/src/${name} is stale. Run \`${GENERATE_COMMAND}\` and commit packages/client/src.`);
    }
  });

  it('operations.ts lists every operation of openapi.json with its method and path', async () => {
    const doc = JSON.parse(await readFile(`${SRC_DIR}openapi.json`, 'utf8'));
    const fromDoc = Object.fromEntries(operationsOf(doc).map((o) => [o.id, { method: o.method, path: o.path }]));
    assert.deepEqual(
      { ...operations },
      fromDoc,
      `packages/client/src/operations.ts does not match openapi.json. Run \`${GENERATE_COMMAND}\`.`,
    );
  });
});
