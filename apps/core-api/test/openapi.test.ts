import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

interface Operation {
  method: string;
  path: string;
  operationId?: string;
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, unknown>;
}

function operationsOf(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) out.push({ method, path, ...item[method] });
  }
  return out;
}

/** Public routes by spec 5.2 (plus the health probes): everything else under /v1 needs a bearer token. */
const isPublic = (path: string) => path === '/health' || path.startsWith('/health/') || path.startsWith('/v1/public/');

describe('OpenAPI description', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await startTestApp();
    const res = await t.call('GET', '/openapi.json');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    doc = res.json();
  });
  after(() => t.close());

  it('is OpenAPI 3.1.0 with a title and version', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(typeof doc.info.title, 'string');
    assert.equal(doc.info.version, t.config.systemInfo.version);
  });

  it('every operation has an operation id, and no two share one', () => {
    const ops = operationsOf(doc);
    assert.ok(ops.length >= 8, `only ${ops.length} operations`);
    const missing = ops.filter((o) => !o.operationId).map((o) => `${o.method.toUpperCase()} ${o.path}`);
    assert.deepEqual(missing, [], `operations without an operationId: ${missing.join(', ')}`);
    const ids = ops.map((o) => o.operationId!);
    const dupes = ids.filter((id, i) => ids.indexOf(id) !== i);
    assert.deepEqual(dupes, [], `duplicate operationIds: ${dupes.join(', ')}`);
    for (const id of ids) assert.match(id, /^[a-z][A-Za-z0-9]*$/, `operationId ${id} is not camelCase`);
  });

  it('names the callable operations with the client wrapper names (spec 9.5)', () => {
    const byId = new Map(operationsOf(doc).map((o) => [o.operationId, `${o.method.toUpperCase()} ${o.path}`]));
    const expected: Record<string, string> = {
      getMe: 'GET /v1/me',
      switchOrganization: 'PUT /v1/me/switch-organization',
      createOrganization: 'POST /v1/organizations',
      getOrganization: 'GET /v1/organizations/{id}',
      resolveOrganization: 'GET /v1/public/organizations/resolve',
      getHealth: 'GET /health',
      getSystemInfo: 'GET /v1/public/system-info',
    };
    for (const [id, route] of Object.entries(expected)) assert.equal(byId.get(id), route, `operationId ${id}`);
  });

  it('only documents API routes: no docs, OpenAPI or control endpoints', () => {
    for (const path of Object.keys(doc.paths)) {
      assert.ok(path === '/health' || path.startsWith('/health/') || path.startsWith('/v1/'), `unexpected path ${path}`);
    }
  });

  it('declares bearerAuth, and every protected operation requires it while public ones do not', () => {
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    assert.equal(doc.security, undefined, 'a global security requirement would mark public routes as protected');
    for (const op of operationsOf(doc)) {
      const name = `${op.operationId} (${op.method.toUpperCase()} ${op.path})`;
      if (isPublic(op.path)) {
        assert.ok(!op.security || op.security.length === 0, `${name} is public but declares security`);
      } else {
        assert.ok(
          op.security?.some((s) => 'bearerAuth' in s),
          `${name} does not declare bearerAuth`,
        );
      }
    }
  });

  it('the protected/public split matches the server: a protected operation without a token is 401', async () => {
    for (const op of operationsOf(doc)) {
      const url = op.path.replace(/\{[^}]+\}/g, '0190a000-0000-7000-8000-000000000001');
      const res = await t.call(op.method.toUpperCase(), url, op.method === 'get' ? {} : { body: {} });
      if (isPublic(op.path)) assert.notEqual(res.statusCode, 401, `${op.operationId}: ${res.body}`);
      else assert.equal(res.statusCode, 401, `${op.operationId}: ${res.statusCode} ${res.body}`);
    }
  });

  it('GET /docs serves the HTML documentation page', async () => {
    let res = await t.call('GET', '/docs');
    for (let hops = 0; hops < 3 && res.statusCode >= 300 && res.statusCode < 400; hops++) {
      res = await t.call('GET', new URL(String(res.headers.location), 'http://localhost/docs').pathname);
    }
    assert.equal(res.statusCode, 200, res.body.slice(0, 200));
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(res.body, /<html/i);
    const slash = await t.call('GET', '/docs/');
    assert.equal(slash.statusCode, 200);
    assert.match(slash.body, /<html/i);
  });
});
