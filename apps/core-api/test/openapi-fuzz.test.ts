import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/**
 * An input fuzzer driven by the API's own description: for every operation of /openapi.json, values
 * are drawn from its parameter and body schemas (valid ones, edge values and hostile ones: NUL
 * characters, unpaired surrogates, huge and fractional numbers, wrong types, unknown fields) and sent
 * as a superadmin, a clinic admin and a patient. No answer may be a 5xx: bad input is the caller's
 * error (4xx in the spec's envelope), never the server's. The runs are bounded and seeded, so a
 * failure reproduces; fast-check shrinks it to the smallest request that still fails.
 *
 * FUZZ_SEED=<n> runs another seed; FUZZ_DEBUG='GET /v1/patients' prints every answer of matching operations.
 */
type Schema = Record<string, any>;
interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; required?: boolean; schema: Schema }[];
  body: Schema | null;
  contentType: string | null;
}

const RUNS_PER_OPERATION = 15;
const SEED = Number(process.env.FUZZ_SEED ?? 20261125);

const hostileStrings = fc.constantFrom(
  '',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\ud83d',
  '\u202e',
  ' ',
  '%',
  '%00',
  '../../etc/passwd',
  "'; drop table users; --",
  '9'.repeat(400),
  '-1',
  '1e308',
  'NaN',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '2026-02-30T25:61:00Z',
  '0000-01-01',
  '9999-12-31T23:59:59.999Z',
  'x'.repeat(70_000),
);
const hostileNumbers = fc.constantFrom(0, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, 1e308, -1e308, 0.5, Number.MIN_VALUE);
const anyJson = fc.jsonValue({ maxDepth: 2 });

function resolve(schema: Schema, spec: Schema): Schema {
  let s = schema;
  while (s?.$ref) {
    const name = String(s.$ref).replace('#/components/schemas/', '');
    s = spec.components.schemas[name];
  }
  return s ?? {};
}

function stringFor(schema: Schema): fc.Arbitrary<string> {
  const valid: fc.Arbitrary<string>[] = [];
  if (schema.enum) valid.push(fc.constantFrom(...schema.enum.map(String)));
  else if (schema.format === 'uuid') valid.push(fc.uuid());
  else if (schema.format === 'date-time') valid.push(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
  else if (schema.format === 'date') valid.push(fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)));
  else if (schema.format === 'email') valid.push(fc.emailAddress());
  else valid.push(fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) }));
  return fc.oneof({ weight: 8, arbitrary: fc.oneof(...valid) }, fc.string({ unit: 'binary', maxLength: 20 }), hostileStrings);
}

/** Values for a JSON schema: mostly of its shape, sometimes anything at all. */
function valueFor(raw: Schema, spec: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(raw, spec);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s: Schema) => valueFor(s, spec, depth)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  let shaped: fc.Arbitrary<unknown>;
  switch (type) {
    case 'string':
      shaped = stringFor(schema);
      break;
    case 'integer':
      shaped = fc.oneof(fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 1000, 1000) }), hostileNumbers);
      break;
    case 'number':
      shaped = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), hostileNumbers);
      break;
    case 'boolean':
      shaped = fc.boolean();
      break;
    case 'null':
      shaped = fc.constant(null);
      break;
    case 'array':
      shaped = depth > 3 ? fc.constant([]) : fc.array(valueFor(schema.items ?? {}, spec, depth + 1), { maxLength: 3 });
      break;
    case 'object': {
      if (depth > 3) return fc.constant({});
      const props = Object.entries<Schema>(schema.properties ?? {});
      const required = new Set<string>(schema.required ?? []);
      const record = fc.record(Object.fromEntries(props.map(([k, s]) => [k, valueFor(s, spec, depth + 1)])), {
        requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)),
      });
      const extra =
        schema.additionalProperties && typeof schema.additionalProperties === 'object'
          ? fc.dictionary(fc.string({ maxLength: 8 }), valueFor(schema.additionalProperties, spec, depth + 1), { maxKeys: 3 })
          : fc.dictionary(
              hostileStrings.filter((k) => k.length < 50),
              anyJson,
              { maxKeys: 1 },
            );
      shaped = fc.tuple(record, fc.option(extra, { freq: 4 })).map(([r, e]) => ({ ...(e ?? {}), ...r }));
      break;
    }
    default:
      shaped = anyJson;
  }
  return fc.oneof({ weight: 6, arbitrary: shaped }, { weight: 1, arbitrary: anyJson });
}

/** Percent-encodes a string as a client would send its bytes; an unpaired surrogate becomes its 3 WTF-8 bytes. */
function percentEncode(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (c >= 0xd800 && c <= 0xdfff && !pair) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
      continue;
    }
    const ch = pair ? s.slice(i, ++i + 1) : s[i]!;
    out += encodeURIComponent(ch);
  }
  return out;
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
}

function operationsOf(spec: Schema): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries<Schema>(spec.paths)) {
    for (const [method, op] of Object.entries<Schema>(methods)) {
      const content = op.requestBody?.content ?? {};
      const contentType = Object.keys(content)[0] ?? null;
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).filter((p: Schema) => p.in !== 'header' || p.name.toLowerCase() === 'idempotency-key'),
        body: contentType ? (content[contentType].schema ?? {}) : null,
        contentType,
      });
    }
  }
  return ops;
}

describe('fuzzing every operation of /openapi.json finds no 5xx', () => {
  let t: TestApp;
  let spec: Schema;
  let callers: { name: string; token: string; org: string }[];
  /**
   * Ids the API has handed out, by the resource path that answered them (path parameters left out):
   * seeded with the fixtures' and grown with every id a 2xx answer carries. A path parameter draws
   * from the ids of its own resource first (a custom field's id for /v1/custom-fields/{id}/rollback).
   */
  const realIds: string[] = [];
  const idsByResource = new Map<string, string[]>();
  const resourceOf = (path: string) =>
    path
      .split('/')
      .filter((seg) => seg && !seg.startsWith('{') && !/^[0-9a-f]{8}-[0-9a-f-]{27}$/i.test(seg))
      .join('/');
  const realIdFor = (op: Operation) =>
    fc.nat().map((i) => {
      const key = resourceOf(op.path);
      const own = [...idsByResource].filter(([k]) => key.startsWith(k)).sort((a, b) => b[0].length - a[0].length)[0]?.[1];
      const pool = own?.length && i % 4 !== 0 ? own : realIds;
      return pool[i % pool.length]!;
    });
  const harvest = (body: string, path: string) => {
    try {
      const data = JSON.parse(body)?.data;
      for (const row of Array.isArray(data) ? data : [data]) {
        if (typeof row?.id !== 'string') continue;
        if (!realIds.includes(row.id)) realIds.push(row.id);
        const key = resourceOf(path);
        const ids = idsByResource.get(key) ?? [];
        if (!ids.includes(row.id)) idsByResource.set(key, [...ids, row.id]);
      }
    } catch {
      // not JSON: nothing to harvest
    }
  };
  let orgId = '';
  /** A path parameter: the organization where the path names one, else an id the API handed out, sometimes anything. */
  const pathValue = (op: Operation, p: Operation['params'][number], index: number): fc.Arbitrary<unknown> => {
    const namesOrg = p.name === 'org_id' || (index === 0 && p.name === 'id' && op.path.startsWith('/v1/organizations/'));
    return fc.oneof(
      { weight: 3, arbitrary: namesOrg ? fc.constant(orgId) : realIdFor(op) },
      { weight: 1, arbitrary: valueFor(p.schema, spec) },
    );
  };
  /** Mostly absent, so that one hostile optional parameter does not hide the rest of the operation. */
  const optional = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: a });

  before(async () => {
    // Limits high enough that the fuzzer meets the routes, not the rate limiter (which has its own tests).
    t = await startTestApp({
      env: { RATELIMIT_API_LIMIT: '1000000', RATELIMIT_PUBLIC_RESOLVE_LIMIT: '1000000', BREAK_GLASS_RATE_LIMIT: '1000000' },
    });
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    spec = res.json();
    const su = await t.superadmin();
    const org = await t.createOrg();
    const admin = await t.addMember(org.id, uniqueEmail('fuzz-admin'), 'admin');
    const patient = await t.addPatient(org.id, uniqueEmail('fuzz-patient'));
    // A counterexample names the caller, not its token.
    const caller = (name: string, token: string) => ({ name, token, org: org.id, [fc.toStringMethod]: () => name });
    callers = [caller('superadmin', su), caller('admin', admin.token), caller('patient', patient.token)];
    orgId = org.id;
    realIds.push(org.id, admin.userId, patient.userId);
    // One of each resource the routes act on, made through the API, so that generated requests
    // reach versions, rollbacks, forms and files instead of stopping at 404.
    const make = async (url: string, body: unknown) => {
      const res = await t.call('POST', url, { token: su, org: org.id, body });
      assert.ok(res.statusCode < 300, `fixture ${url}: ${res.statusCode} ${res.body}`);
      harvest(res.body, url);
      return res.json().data;
    };
    const patientRow = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!;
    realIds.push(patientRow.id);
    const field = await make('/v1/custom-fields', { entity_type: 'form', key: 'fuzz_note', label: 'Note', field_type: 'text' });
    const template = await make('/v1/form-templates', { name: 'Fuzz', fields: [{ custom_field_id: field.id }] });
    await make('/v1/forms', { form_template_id: template.id, patient_id: patientRow.id });
    await make(`/v1/organizations/${org.id}/locations`, { name: 'Fuzz room', timezone: 'Europe/Bucharest' });
  });
  after(() => t?.close());

  it('covers every operation (the description lists them all)', () => {
    assert.ok(operationsOf(spec).length >= 100, 'the fuzzer found fewer operations than the API has');
  });

  it('answers every generated request below 500', async () => {
    const failures: string[] = [];
    const reachedHandler = new Set<string>();
    // Two passes: the first harvests ids from what it created, so the second reaches more handlers.
    // Operations that take things away (deletions, erasure, leaving) go last in each pass, so that
    // the fixtures live long enough for the rest to get past the permission checks.
    const destructive = (op: Operation) => op.method === 'DELETE' || /\/(erase|restrict|leave)$/.test(op.path);
    const ordered = [...operationsOf(spec).filter((o) => !destructive(o)), ...operationsOf(spec).filter(destructive)];
    for (const op of [...ordered, ...ordered]) {
      const pathParams = op.params.filter((p) => p.in === 'path');
      const queryParams = op.params.filter((p) => p.in === 'query');
      const headerParams = op.params.filter((p) => p.in === 'header');
      const request = fc.record({
        caller: fc.constantFrom(...callers),
        path: fc.tuple(...pathParams.map((p, i) => pathValue(op, p, i))),
        query: fc.tuple(...queryParams.map((p) => optional(valueFor(p.schema, spec)))),
        headers: fc.tuple(...headerParams.map((p) => optional(valueFor(p.schema, spec)))),
        body: op.body ? valueFor(op.body, spec) : fc.constant(undefined),
        rawBody: fc.option(fc.constantFrom('{', '[]', 'null', '"\\ud800"', '{"a":1e999}', '\u0000'), { freq: 6 }),
      });
      try {
        await fc.assert(
          fc.asyncProperty(request, async (r) => {
            let url = op.path;
            pathParams.forEach((p, i) => {
              url = url.replace(`{${p.name}}`, percentEncode(text(r.path[i])) || 'x');
            });
            const qs = queryParams
              .map((p, i) => (r.query[i] === null ? null : `${p.name}=${percentEncode(text(r.query[i]))}`))
              .filter(Boolean)
              .join('&');
            const headers: Record<string, string> = { authorization: `Bearer ${r.caller.token}`, 'x-organization-id': r.caller.org };
            headerParams.forEach((p, i) => {
              const v = r.headers[i];
              // A header value cannot carry control characters at all (the HTTP client refuses to send them).
              if (v !== null) headers[p.name] = text(v).replace(/[^\x20-\x7e]/g, '?');
            });
            let payload: string | undefined;
            if (op.body && op.contentType === 'application/json') {
              payload = r.rawBody ?? JSON.stringify(r.body);
              headers['content-type'] = 'application/json';
            }
            const res = await t.app.inject({
              method: op.method as 'GET',
              url: qs ? `${url}?${qs}` : url,
              headers,
              ...(payload !== undefined ? { payload } : {}),
            });
            if (process.env.FUZZ_DEBUG && `${op.method} ${op.path}`.includes(process.env.FUZZ_DEBUG))
              console.log(res.statusCode, url.slice(0, 120), qs.slice(0, 120), res.body.slice(0, 160));
            if (res.statusCode < 300) {
              reachedHandler.add(`${op.method} ${op.path}`);
              harvest(res.body, url);
            }
            if (res.statusCode >= 500) {
              throw new Error(
                `${op.method} ${url}${qs ? `?${qs}` : ''} as ${r.caller.name} -> ${res.statusCode} ${res.body.slice(0, 300)}`,
              );
            }
          }),
          { numRuns: RUNS_PER_OPERATION, seed: SEED, endOnFailure: false },
        );
      } catch (err) {
        failures.push(`${op.method} ${op.path}: ${(err as Error).message.split('\n').slice(0, 6).join(' | ')}`);
      }
    }
    assert.deepEqual(failures, [], `5xx answers (FUZZ_SEED=${SEED}):\n${failures.join('\n')}`);
    // The fuzzer is worth something only if it gets past validation: most operations must have
    // answered a success at least once, so their handlers and SQL ran on generated input.
    const ops = operationsOf(spec);
    assert.ok(
      reachedHandler.size >= 25,
      `only ${reachedHandler.size} of ${ops.length} operations answered a success: the generators no longer fit the API`,
    );
  });
});
