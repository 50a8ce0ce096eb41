import fc from 'fast-check';

/**
 * An input fuzzer driven by a service's own description, shared by the core API, telemetry and
 * composer tests: for every operation of its /openapi.json, values are drawn from the operation's
 * parameter and body schemas (valid ones, edge values and hostile ones: NUL characters, unpaired
 * surrogates, huge and fractional numbers, wrong types, unknown fields) and sent as each of the
 * test's callers. No answer may be a 5xx: bad input is the caller's error (4xx in the spec's
 * envelope), never the server's. The runs are bounded and seeded, so a failure reproduces;
 * fast-check shrinks it to the smallest request that still fails.
 *
 * FUZZ_SEED=<n> runs another seed; FUZZ_DEBUG='GET /v1/patients' prints every answer of matching operations.
 */
export type Schema = Record<string, any>;
export interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; required?: boolean; schema: Schema }[];
  body: Schema | null;
  contentType: string | null;
}
export type Param = Operation['params'][number];

export const SEED = Number(process.env.FUZZ_SEED ?? 20261125);

const HOSTILE_STRINGS = [
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
];
export const hostileStrings = fc.constantFrom(...HOSTILE_STRINGS);
export const hostileNumbers = fc.constantFrom(0, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, 1e308, -1e308, 0.5, Number.MIN_VALUE);
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
export function valueFor(raw: Schema, spec: Schema, depth = 0): fc.Arbitrary<unknown> {
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
    case 'integer': {
      // Small numbers (up to 1000) where the schema allows them; a floor above 1000 (a year) gets the 1000 above it.
      const min = schema.minimum ?? -5;
      const max = min <= 1000 ? Math.min(schema.maximum ?? 1000, 1000) : Math.min(schema.maximum ?? min + 1000, min + 1000);
      shaped = fc.oneof(fc.integer({ min, max }), hostileNumbers);
      break;
    }
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

const INT32 = 2 ** 31;
/** Integers in [min, max] (a multiple of `step`): fast-check's integers are 32-bit, so wider bounds add their ends. */
function integerIn(min: number, max: number, step = 1): fc.Arbitrary<number> {
  const lo = Math.ceil(min / step);
  const hi = Math.floor(max / step);
  const inner = fc.integer({ min: Math.max(lo, -INT32), max: Math.min(hi, INT32 - 1) }).map((k) => k * step);
  return lo >= -INT32 && hi < INT32 ? inner : fc.oneof(inner, fc.constantFrom(lo * step, hi * step));
}

/**
 * Values that a schema accepts (bounds, lengths, formats, patterns, enums, required keys, no
 * unknown ones), with text from all of Unicode: requests that get past validation, so that the
 * handler and its SQL meet unusual but lawful input. Mixed with valueFor through FuzzOptions.bodyValue.
 */
export function validValueFor(raw: Schema, spec: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(raw, spec);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s: Schema) => validValueFor(s, spec, depth)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      const minLength = schema.minLength ?? 0;
      const maxLength = schema.maxLength ?? Math.max(40, minLength);
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'date-time' || schema.format === 'date') {
        const dates = fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2200-12-31T23:59:59Z'), noInvalidDate: true });
        return dates.map((d) => (schema.format === 'date' ? d.toISOString().slice(0, 10) : d.toISOString()));
      }
      if (schema.format === 'email') return fc.emailAddress().filter((e) => e.length <= maxLength);
      if (schema.pattern)
        return fc.stringMatching(new RegExp(schema.pattern)).filter((v) => [...v].length >= minLength && [...v].length <= maxLength);
      const text = fc.string({ unit: 'grapheme', minLength, maxLength: Math.min(maxLength, Math.max(40, minLength)) });
      // Lawful for the schema, not for storage: NUL, lone surrogates, bidi overrides (the text guard's to refuse).
      const hostile = HOSTILE_STRINGS.filter((v) => v.length >= minLength && v.length <= maxLength);
      return hostile.length ? fc.oneof({ weight: 4, arbitrary: text }, { weight: 1, arbitrary: fc.constantFrom(...hostile) }) : text;
    }
    case 'integer':
      return integerIn(schema.minimum ?? -INT32, schema.maximum ?? INT32 - 1, schema.multipleOf ?? 1);
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = schema.minItems ?? 0;
      const items = depth > 3 ? fc.constant({}) : validValueFor(schema.items ?? {}, spec, depth + 1);
      return fc.array(items, { minLength, maxLength: Math.min(schema.maxItems ?? 3, Math.max(3, minLength)) });
    }
    case 'object': {
      const props = Object.entries<Schema>(schema.properties ?? {});
      const required = new Set<string>(schema.required ?? []);
      return fc.record(Object.fromEntries(props.map(([k, s]) => [k, validValueFor(s, spec, depth + 1)])), {
        requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)),
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

/** Percent-encodes a string as a client would send its bytes; an unpaired surrogate becomes its 3 WTF-8 bytes. */
export function percentEncode(s: string): string {
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

export function operationsOf(spec: Schema): Operation[] {
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

/**
 * Ids the service has handed out, by the resource path that answered them (path parameters left
 * out): seeded with the fixtures' and grown with every id a 2xx answer carries. A path parameter
 * draws from the ids of its own resource first (a custom field's id for /v1/custom-fields/{id}/rollback).
 */
export function createIdPool(initial: string[] = []) {
  const all: string[] = [...initial];
  const byResource = new Map<string, string[]>();
  const resourceOf = (path: string) =>
    path
      .split('/')
      .filter((seg) => seg && !seg.startsWith('{') && !/^[0-9a-f]{8}-[0-9a-f-]{27}$/i.test(seg))
      .join('/');
  return {
    all,
    /** Keeps the ids in a 2xx answer's `data` (an object or a list), under the resource of `path`. */
    harvest(body: string, path: string) {
      try {
        const data = JSON.parse(body)?.data;
        for (const row of Array.isArray(data) ? data : [data]) {
          if (typeof row?.id !== 'string') continue;
          if (!all.includes(row.id)) all.push(row.id);
          const key = resourceOf(path);
          const ids = byResource.get(key) ?? [];
          if (!ids.includes(row.id)) byResource.set(key, [...ids, row.id]);
        }
      } catch {
        // not JSON: nothing to harvest
      }
    },
    /** An id for a path parameter of `op`: mostly its own resource's, sometimes any. */
    idFor(op: Operation): fc.Arbitrary<string> {
      return fc.nat().map((i) => {
        const key = resourceOf(op.path);
        const own = [...byResource].filter(([k]) => key.startsWith(k)).sort((a, b) => b[0].length - a[0].length)[0]?.[1];
        const pool = own?.length && i % 4 !== 0 ? own : all;
        return pool[i % pool.length]!;
      });
    },
  };
}

/** What a caller adds to every request (its credentials); it may depend on the request (a signature). */
export interface FuzzCaller {
  name: string;
  headers(req: { method: string; path: string; payload: string | undefined }): Record<string, string>;
}

/** A caller whose counterexamples name it, not its token. */
export function fuzzCaller(name: string, headers: FuzzCaller['headers']): FuzzCaller {
  return { name, headers, [fc.toStringMethod]: () => name } as FuzzCaller;
}

export interface Answer {
  statusCode: number;
  body: string;
}

export interface FuzzOptions {
  spec: Schema;
  /** In the order to run (an operation listed twice runs twice). */
  operations: Operation[];
  callers: FuzzCaller[];
  inject(req: { method: string; url: string; headers: Record<string, string>; payload?: string }): Promise<Answer>;
  /** A path parameter's values; default: from its schema. */
  pathValue?(op: Operation, p: Param, index: number): fc.Arbitrary<unknown>;
  /** A JSON body's values; default: valueFor its schema (e.g. mixed with validValueFor to get past validation). */
  bodyValue?(op: Operation & { body: Schema }): fc.Arbitrary<unknown>;
  /** When a raw body replaces the generated one: MOSTLY_RAW_BODIES (the core test's) or SOMETIMES_RAW_BODIES. */
  rawBody: fc.Arbitrary<string | null>;
  /** Sees every answer (to harvest ids); throwing fails the case like a 5xx does. */
  onAnswer?(op: Operation, req: { url: string; caller: FuzzCaller }, res: Answer): void;
  runs: number;
  seed?: number;
}

/** Bodies that are not what the operation takes (or not JSON at all), sent instead of the generated one. */
const rawBodies = fc.constantFrom('{', '[]', 'null', '"\\ud800"', '{"a":1e999}', '\u0000');
/**
 * The core test's mix, kept as it was written: fc.option's `freq` is the odds of null (1 in 6), so
 * five requests in six carry a raw body and one the generated body.
 */
export const MOSTLY_RAW_BODIES = fc.option(rawBodies, { freq: 6 });
/** One request in six carries a raw body; the others the generated body. */
export const SOMETIMES_RAW_BODIES = fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: rawBodies });

/** Mostly absent, so that one hostile optional parameter does not hide the rest of the operation. */
const optional = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: a });

/**
 * Runs `runs` generated requests per operation. Returns the failures (one line per operation whose
 * property failed: a 5xx, or what onAnswer threw) and the operations that answered a success at least once.
 */
export async function fuzzOperations(o: FuzzOptions): Promise<{ failures: string[]; reachedHandler: Set<string> }> {
  const seed = o.seed ?? SEED;
  const failures: string[] = [];
  const reachedHandler = new Set<string>();
  for (const op of o.operations) {
    const pathParams = op.params.filter((p) => p.in === 'path');
    const queryParams = op.params.filter((p) => p.in === 'query');
    const headerParams = op.params.filter((p) => p.in === 'header');
    const request = fc.record({
      caller: fc.constantFrom(...o.callers),
      path: fc.tuple(...pathParams.map((p, i) => (o.pathValue ? o.pathValue(op, p, i) : valueFor(p.schema, o.spec)))),
      query: fc.tuple(...queryParams.map((p) => optional(valueFor(p.schema, o.spec)))),
      headers: fc.tuple(...headerParams.map((p) => optional(valueFor(p.schema, o.spec)))),
      body: op.body ? (o.bodyValue?.({ ...op, body: op.body }) ?? valueFor(op.body, o.spec)) : fc.constant(undefined),
      rawBody: o.rawBody,
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
          let payload: string | undefined;
          if (op.body && op.contentType === 'application/json') payload = r.rawBody ?? JSON.stringify(r.body);
          const headers: Record<string, string> = r.caller.headers({ method: op.method, path: url, payload });
          headerParams.forEach((p, i) => {
            const v = r.headers[i];
            // A header value cannot carry control characters at all (the HTTP client refuses to send them).
            if (v !== null) headers[p.name] = text(v).replace(/[^\x20-\x7e]/g, '?');
          });
          if (payload !== undefined) headers['content-type'] = 'application/json';
          const res = await o.inject({
            method: op.method,
            url: qs ? `${url}?${qs}` : url,
            headers,
            ...(payload !== undefined ? { payload } : {}),
          });
          if (process.env.FUZZ_DEBUG && `${op.method} ${op.path}`.includes(process.env.FUZZ_DEBUG))
            console.log(res.statusCode, url.slice(0, 120), qs.slice(0, 120), res.body.slice(0, 160));
          if (res.statusCode < 300) reachedHandler.add(`${op.method} ${op.path}`);
          o.onAnswer?.(op, { url, caller: r.caller }, res);
          if (res.statusCode >= 500) {
            throw new Error(`${op.method} ${url}${qs ? `?${qs}` : ''} as ${r.caller.name} -> ${res.statusCode} ${res.body.slice(0, 300)}`);
          }
        }),
        { numRuns: o.runs, seed, endOnFailure: false },
      );
    } catch (err) {
      failures.push(`${op.method} ${op.path}: ${(err as Error).message.split('\n').slice(0, 6).join(' | ')}`);
    }
  }
  return { failures, reachedHandler };
}
