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
    /** The ids answered under the resource of `op`'s path (the longest one it nests under); empty when none. */
    idsFor(op: Operation): string[] {
      const key = resourceOf(op.path);
      return [...byResource].filter(([k]) => key.startsWith(k)).sort((a, b) => b[0].length - a[0].length)[0]?.[1] ?? [];
    },
    /** An id for a path parameter of `op`: mostly its own resource's, sometimes any. */
    idFor(op: Operation): fc.Arbitrary<string> {
      return fc.nat().map((i) => {
        const own = this.idsFor(op);
        const pool = own.length && i % 4 !== 0 ? own : all;
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
 * One enumerated request: what it changes from the operation's plain request (valid path, no query,
 * the plain body of plainValueFor, the caller's headers). `label` names it in a failure.
 */
export interface HostileCase {
  label: string;
  /** Path parameter values by name (raw text; percent-encoded when sent). */
  path?: Record<string, string>;
  /** A query string as sent (already encoded). */
  query?: string;
  /** Headers added to (or, with null, removed from) the caller's. */
  headers?: Record<string, string | null>;
  /** The raw body sent instead of the plain one; with `contentType` the header sent with it (null: none). */
  payload?: string;
  contentType?: string | null;
  /** Who sends it (default the options' first caller). */
  caller?: FuzzCaller;
  /** A value no route may take (10,000 levels of JSON, NUL, a lone surrogate): the answer must be a 4xx. */
  refuse?: boolean;
}

/** 10,000 levels of JSON nesting: a parser, validator or walker that recurses on it must not take the process down. */
export const DEEP_ARRAY = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
export const DEEP_OBJECT = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
/** 2^63 written out (JSON.stringify(2 ** 63) would round it): one past the largest bigint. */
const TWO_TO_63 = '9223372036854775808';

/** Hostile JSON values for one body field, as JSON text (so that 2^63 and 1e308 reach the parser verbatim), by its type. */
function hostileFieldValues(schema: Schema): [string, string][] {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const cases: [string, string][] = [
    ['object', '{"a":1}'],
    ['array', type === 'object' ? '[{}]' : '["a"]'],
    ['NUL', JSON.stringify('a\u0000b')],
    ['lone surrogate', '"\\ud800"'],
  ];
  if (type === 'integer' || type === 'number')
    cases.push(['2^63', TWO_TO_63], ['1e308', '1e308'], ['negative', '-1'], ['fraction', '0.5'], ['huge digits', '"99999999999999999999"']);
  else cases.push(['2^63', TWO_TO_63], ['null', 'null'], ['over-long string', JSON.stringify('x'.repeat(100_000))]);
  // Free-form values (no declared shape) are where a deep document could be stored.
  if (type === 'object' || type === 'array' || type === undefined) cases.push(['10,000 levels', DEEP_ARRAY]);
  return cases;
}

/** Hostile values that no route may accept, whatever the field: text PostgreSQL cannot store, and 10,000 levels of JSON. */
const UNTAKEABLE = new Set(['NUL', 'lone surrogate', '10,000 levels']);

/** Query values, as sent (encoded). */
const HOSTILE_QUERY: [string, string][] = [
  ['NUL', 'a%00b'],
  // A lone surrogate's bytes (WTF-8): the decoder turns them into U+FFFD, as it does other invalid UTF-8.
  ['lone surrogate', '%ED%A0%80'],
  ['2^63', TWO_TO_63],
  ['over-long', 'x'.repeat(10_000)],
];

/** Path values, raw (percent-encoded when sent). */
const HOSTILE_PATH: [string, string][] = [
  ['malformed uuid', 'not-a-uuid'],
  ['uuid with NUL', '01900000-0000-7000-8000-00000000000\u0000'],
  ['lone surrogate', '\ud800'],
  ['huge digits', '99999999999999999999'],
  ['over-long', 'x'.repeat(2_000)],
];

/** Idempotency-Key values a client could send (a header cannot carry what HTTP forbids, but inject can). */
const HOSTILE_IDEMPOTENCY: [string, string][] = [
  ['NUL and control', 'key-\u0000\u0001'],
  ['latin-1', 'cl\u00e9-\u00ff'],
  ['over-long', 'k'.repeat(5_000)],
];

/** Content-Type headers a JSON body can come with. */
const WRONG_CONTENT_TYPES: [string, string | null][] = [
  ['text/plain', 'text/plain'],
  ['form', 'application/x-www-form-urlencoded'],
  ['utf-16 json', 'application/json; charset=utf-16'],
  ['none', null],
];

/**
 * A plain value the schema accepts, the same every time: required keys only, the smallest lawful
 * number, the first enum value, an id by the field's name (`patient_id` from ids.patients) when the
 * caller knows one. The base that hostileCases changes one field of.
 */
export function plainValueFor(raw: Schema, spec: Schema, ids: Record<string, string> = {}, name = '', depth = 0): unknown {
  const schema = resolve(raw, spec);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives)
    return plainValueFor(alternatives.find((a: Schema) => resolve(a, spec).type !== 'null') ?? alternatives[0], spec, ids, name, depth);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  const idOf = (n: string) => ids[`${n.replace(/_ids?$/, '')}s`] ?? ids[n] ?? MISSING_ID;
  switch (type) {
    case 'string': {
      if (schema.format === 'uuid') return idOf(name);
      if (schema.format === 'date-time') return new Date(Date.UTC(2031, 0, 6, 10)).toISOString();
      if (schema.format === 'date') return '2031-01-06';
      if (schema.format === 'email') return 'fuzz@example.test';
      if (schema.pattern) {
        const [sample] = fc.sample(fc.stringMatching(new RegExp(schema.pattern)), { seed: SEED, numRuns: 1 });
        return sample;
      }
      return 'a'.repeat(Math.max(schema.minLength ?? 1, 1));
    }
    case 'integer':
    case 'number':
      return Math.min(
        Math.max(schema.minimum ?? 1, schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1),
        schema.maximum ?? Infinity,
      );
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array':
      if (depth > 4) return [];
      if (/_ids$/.test(name)) return [idOf(name)].slice(0, Math.max(schema.minItems ?? 1, 1));
      return Array.from({ length: schema.minItems ?? 0 }, () => plainValueFor(schema.items ?? {}, spec, ids, name, depth + 1));
    case 'object': {
      if (depth > 4) return {};
      const required = new Set<string>(schema.required ?? []);
      return Object.fromEntries(
        Object.entries<Schema>(schema.properties ?? {})
          .filter(([k]) => required.has(k))
          .map(([k, s]) => [k, plainValueFor(s, spec, ids, k, depth + 1)]),
      );
    }
    default:
      return {};
  }
}
const MISSING_ID = '01900000-0000-7000-8000-000000000000';

export interface CaseContext {
  spec: Schema;
  /** A lawful value for each path parameter (an own row's id). */
  pathValue(op: Operation, p: Param): string;
  /** Another clinic's real ids for the resource of `op`'s path (path parameters). */
  foreignPathIds(op: Operation, p: Param): string[];
  /** Ids of the caller's clinic and of another clinic by table (`patients`), for fields named like them. */
  ownIds: Record<string, string>;
  foreignIds: Record<string, string>;
  /** Header cases every operation gets (X-Organization-ID, X-Patient-ID), each with its caller. */
  headerCases: HostileCase[];
}

/**
 * The enumerated hostile requests of one operation: each path parameter, query parameter and
 * top-level body field in turn gets each hostile value (the rest plain), plus whole-body cases
 * (10,000 levels of nesting, an array for the object, wrong content types), Idempotency-Key values on
 * writes and the context's header cases. Deterministic: the same list every run.
 */
export function hostileCases(op: Operation, ctx: CaseContext): HostileCase[] {
  const cases: HostileCase[] = [];
  for (const p of op.params.filter((x) => x.in === 'path')) {
    for (const [label, v] of HOSTILE_PATH) cases.push({ label: `path ${p.name}: ${label}`, path: { [p.name]: v } });
    for (const [i, id] of ctx.foreignPathIds(op, p).slice(0, 1).entries())
      cases.push({ label: `path ${p.name}: other clinic's id ${i}`, path: { [p.name]: id } });
  }
  for (const p of op.params.filter((x) => x.in === 'query')) {
    // Only NUL must be refused here: the query decoder turns a lone surrogate's bytes into U+FFFD, lawful text.
    for (const [label, v] of HOSTILE_QUERY)
      cases.push({ label: `query ${p.name}: ${label}`, query: `${p.name}=${v}`, refuse: label === 'NUL' });
    cases.push({ label: `query ${p.name}: repeated`, query: `${p.name}=1&${p.name}=2` });
    const foreign = ctx.foreignIds[`${p.name.replace(/_id$/, '')}s`];
    if (/_id$/.test(p.name) && foreign) cases.push({ label: `query ${p.name}: other clinic's id`, query: `${p.name}=${foreign}` });
  }
  if (op.body && op.contentType === 'application/json') {
    const schema = resolve(op.body, ctx.spec);
    const base = plainValueFor(schema, ctx.spec, ctx.ownIds);
    const fields = Object.entries<Schema>(schema.properties ?? {});
    for (const [name, raw] of fields) {
      const field = resolve(raw, ctx.spec);
      const rest = JSON.stringify({ ...(base as object), [name]: 0 });
      // The field's value is spliced in as text, so that 2^63 and 1e308 reach the parser as written.
      const withValue = (json: string) => rest.replace(`${JSON.stringify(name)}:0`, () => `${JSON.stringify(name)}:${json}`);
      for (const [label, v] of hostileFieldValues(field))
        cases.push({ label: `body ${name}: ${label}`, payload: withValue(v), refuse: UNTAKEABLE.has(label) });
      const table = `${name.replace(/_ids?$/, '')}s`;
      if (/_ids?$/.test(name) && ctx.foreignIds[table]) {
        const id = JSON.stringify(ctx.foreignIds[table]);
        cases.push({ label: `body ${name}: other clinic's id`, payload: withValue(/_ids$/.test(name) ? `[${id}]` : id) });
      }
    }
    const plain = JSON.stringify(base);
    cases.push(
      { label: 'body: plain', payload: plain },
      { label: 'body: 10,000 levels of arrays', payload: DEEP_ARRAY, refuse: true },
      { label: 'body: 10,000 levels of objects', payload: DEEP_OBJECT, refuse: true },
      { label: 'body: an array for the object', payload: `[${plain}]` },
      { label: 'body: invalid UTF-8', payload: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]).toString('latin1') },
      { label: 'body: empty', payload: '' },
    );
    for (const [label, type] of WRONG_CONTENT_TYPES) cases.push({ label: `content-type: ${label}`, payload: plain, contentType: type });
  }
  if (op.method !== 'GET') {
    for (const [label, v] of HOSTILE_IDEMPOTENCY) cases.push({ label: `Idempotency-Key: ${label}`, headers: { 'idempotency-key': v } });
  }
  cases.push(...ctx.headerCases);
  return cases;
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
  /** Generated requests per operation (fast-check runs). */
  runs: number;
  seed?: number;
  /** Enumerated requests per operation (hostileCases), sent before the generated ones as the first caller (or the case's). */
  cases?(op: Operation): HostileCase[];
  /** A lawful value for a path parameter of the enumerated cases. */
  plainPath?(op: Operation, p: Param): string;
  /**
   * What the data looks like now (tenantState): read before and after every write request that is
   * refused (4xx), which must have changed nothing.
   */
  state?(): Promise<Record<string, string>>;
}

/** An error answer in the spec's envelope (spec 2.2): `{ error: { code, message, fields? } }` and nothing else. */
export function envelopeProblem(res: Answer): string | null {
  if (res.statusCode < 400) return null;
  let body: any;
  try {
    body = JSON.parse(res.body);
  } catch {
    return `${res.statusCode} not JSON: ${res.body.slice(0, 200)}`;
  }
  const e = body?.error;
  const ok =
    body !== null &&
    typeof body === 'object' &&
    Object.keys(body).join() === 'error' &&
    typeof e?.code === 'string' &&
    typeof e.message === 'string' &&
    e.message.length > 0 &&
    (e.fields === undefined ||
      (e.fields !== null && typeof e.fields === 'object' && Object.values(e.fields).every((v) => typeof v === 'string')));
  return ok ? null : `${res.statusCode} outside the envelope: ${res.body.slice(0, 200)}`;
}

/**
 * Counts every row written, per table, from now on: a row trigger on each table of the public schema
 * (but `exclude`) adds one to fuzz_writes, in the writing transaction, so a rolled-back write counts
 * nothing and any committed insert, update or delete does. Returns the reader of the counts: one
 * small query per check, in embedded and services modes alike. Test databases only (each test file
 * has its own, dropped at the end). `exclude`: tables that requests write by design whatever their
 * answer, or that a background runner advances while requests run.
 */
export async function writeCounter(
  db: { query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }> },
  exclude: string[] = [],
): Promise<() => Promise<Record<string, string>>> {
  await db.query(`create table fuzz_writes (tbl text primary key, n bigint not null)`);
  // Security definer: the application roles write through it without a grant on fuzz_writes.
  await db.query(
    `create function fuzz_count_write() returns trigger language plpgsql security definer set search_path = public as $$
     begin
       insert into fuzz_writes values (tg_table_name, 1) on conflict (tbl) do update set n = fuzz_writes.n + 1;
       return null;
     end $$`,
  );
  const { rows } = await db.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind = 'r' and not c.relispartition and c.relname <> 'fuzz_writes'
       and not (c.relname = any($1)) order by 1`,
    [exclude],
  );
  for (const { name } of rows) {
    await db.query(
      `create trigger fuzz_count_write after insert or update or delete on "${name}" for each row execute function fuzz_count_write()`,
    );
  }
  return async () =>
    Object.fromEntries(
      (await db.query<{ tbl: string; n: string }>('select tbl, n::text as n from fuzz_writes')).rows.map((r) => [r.tbl, r.n]),
    );
}

export interface FuzzResult {
  /** One line per operation that failed (a 5xx, a change on refusal, or what onAnswer threw). */
  failures: string[];
  /** Operations that answered a success at least once. */
  reachedHandler: Set<string>;
  /** Operations that got at least one request (`GET /v1/patients`). */
  fuzzed: Set<string>;
  /** Requests sent, in all. */
  requests: number;
}

/**
 * Runs, per operation, its enumerated cases (o.cases) and then `runs` generated requests. No answer
 * may be a 5xx, and a refused write must leave o.state as it found it.
 */
export async function fuzzOperations(o: FuzzOptions): Promise<FuzzResult> {
  const seed = o.seed ?? SEED;
  const failures: string[] = [];
  const reachedHandler = new Set<string>();
  const fuzzed = new Set<string>();
  let requests = 0;
  /** The state after the last refused write, while nothing else has run since (saves a read). */
  let known: Record<string, string> | null = null;

  const send = async (
    op: Operation,
    req: { url: string; headers: Record<string, string>; payload?: string },
    caller: FuzzCaller,
    refuse = false,
  ) => {
    const key = `${op.method} ${op.path}`;
    const write = op.method !== 'GET' && op.method !== 'HEAD';
    const before = write && o.state ? (known ?? (await o.state())) : null;
    known = null;
    const res = await o.inject({ method: op.method, ...req });
    requests++;
    fuzzed.add(key);
    if (process.env.FUZZ_DEBUG && key.includes(process.env.FUZZ_DEBUG))
      console.log(res.statusCode, req.url.slice(0, 160), (req.payload ?? '').slice(0, 80), res.body.slice(0, 160));
    if (res.statusCode < 300) reachedHandler.add(key);
    const what = () => `${op.method} ${req.url.slice(0, 200)} as ${caller.name} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
    if (res.statusCode >= 500) throw new Error(what());
    if (refuse && res.statusCode < 400) throw new Error(`taken, not refused: ${what()}`);
    o.onAnswer?.(op, { url: req.url.split('?')[0]!, caller }, res);
    if (before && res.statusCode >= 400) {
      const after = await o.state!();
      const changed = Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]);
      if (changed.length) throw new Error(`refused but changed ${changed.join(', ')}: ${what()}`);
      known = after;
    }
  };

  for (const op of o.operations) {
    const pathParams = op.params.filter((p) => p.in === 'path');
    const queryParams = op.params.filter((p) => p.in === 'query');
    const headerParams = op.params.filter((p) => p.in === 'header');
    const opFailures: string[] = [];
    for (const c of o.cases?.(op) ?? []) {
      const caller = c.caller ?? o.callers[0]!;
      let url = op.path;
      for (const p of pathParams) {
        const v = c.path?.[p.name] ?? o.plainPath?.(op, p) ?? MISSING_ID;
        url = url.replace(`{${p.name}}`, percentEncode(v) || 'x');
      }
      if (c.query) url += `?${c.query}`;
      const payload = c.payload;
      const headers = caller.headers({ method: op.method, path: url.split('?')[0]!, payload });
      if (payload !== undefined) {
        const type = c.contentType === undefined ? 'application/json' : c.contentType;
        if (type !== null) headers['content-type'] = type;
      }
      for (const [k, v] of Object.entries(c.headers ?? {})) {
        if (v === null) delete headers[k];
        else headers[k] = v;
      }
      try {
        await send(op, { url, headers, ...(payload !== undefined ? { payload } : {}) }, caller, c.refuse);
      } catch (err) {
        opFailures.push(`[${c.label}] ${(err as Error).message}`);
        known = null;
      }
    }
    if (opFailures.length)
      failures.push(`${op.method} ${op.path}: ${opFailures.length} case(s) failed; ${opFailures.slice(0, 3).join(' | ')}`);
    if (o.runs <= 0) continue;
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
          try {
            await send(op, { url: qs ? `${url}?${qs}` : url, headers, ...(payload !== undefined ? { payload } : {}) }, r.caller);
          } catch (err) {
            known = null;
            throw err;
          }
        }),
        { numRuns: o.runs, seed, endOnFailure: false },
      );
    } catch (err) {
      const lines = (err as Error).message.split('\n');
      const cause = lines.find((l) => /^Got (error|Error)/.test(l.trim())) ?? lines.slice(3).find((l) => l.trim()) ?? '';
      failures.push(`${op.method} ${op.path}: ${lines.slice(0, 3).join(' | ').slice(0, 1200)} | ${cause.slice(0, 600)}`);
    }
  }
  return { failures, reachedHandler, fuzzed, requests };
}

/**
 * The header cases of every operation: X-Organization-ID malformed, with NUL or control characters,
 * or naming another clinic (sent by `staff`), and X-Patient-ID with NUL or naming a patient the
 * caller may not act for (sent by `patient`, and another clinic's patient by `staff`).
 */
export function scopeHeaderCases(o: {
  staff?: FuzzCaller;
  patient: FuzzCaller;
  orgId: string;
  otherOrgId: string;
  /** A patient record of the caller's clinic that `patient` is no caregiver of, and one of the other clinic. */
  ownPatientId: string;
  otherPatientId: string;
}): HostileCase[] {
  const orgValues: [string, string][] = [
    ['NUL', `${o.orgId.slice(0, -1)}\u0000`],
    ['control and latin-1', '\u0001cl\u00e9\u007f'],
    ["another clinic's id", o.otherOrgId],
  ];
  return [
    ...orgValues.map(([label, v]) => ({
      label: `X-Organization-ID: ${label}`,
      headers: { 'x-organization-id': v },
      ...(o.staff ? { caller: o.staff } : {}),
    })),
    {
      label: "X-Patient-ID: another clinic's patient, with NUL",
      caller: o.patient,
      headers: { 'x-patient-id': `${o.otherPatientId}\u0000` },
    },
    { label: "X-Patient-ID: another clinic's patient", caller: o.patient, headers: { 'x-patient-id': o.otherPatientId } },
    { label: 'X-Patient-ID: a patient one is no caregiver of', caller: o.patient, headers: { 'x-patient-id': o.ownPatientId } },
    ...(o.staff
      ? [{ label: "X-Patient-ID: another clinic's patient, as staff", caller: o.staff, headers: { 'x-patient-id': o.otherPatientId } }]
      : []),
  ];
}
