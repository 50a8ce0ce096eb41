/**
 * List conventions of spec 4.1 (pagination, sorting, filtering, date ranges, pickers) and the list
 * envelopes of spec 2.2, written once. The parsers are pure functions of the parsed query object;
 * they clamp where the spec says "clamp" and throw `errors.queryValidation` (422 validation_failed,
 * spec 7) where it says "returns 422". SQL is only ever assembled from allow-listed expressions and
 * numbered parameters.
 *
 * Repeated query keys (`?page=1&page=2`) arrive as arrays from Fastify's query parser. Every scalar
 * parameter here takes the FIRST value (URLSearchParams.get semantics), so a parser never throws on an
 * array. Note that the route validator, given the `Type.String()` schemas below, already answers a
 * repeated scalar key with 422 (`fields.page`); the parsers are defensive for callers without one.
 */
import { Type, type TObject, type TOptional, type TProperties, type TSchema, type TString } from 'typebox';
import { errors } from './errors.ts';

export const LIST_LIMITS = {
  defaultLimit: 50,
  maxLimit: 500,
  pickerDefaultLimit: 20,
  pickerMaxLimit: 50,
  /** Pages above this would make (page - 1) * limit leave the safe-integer range; treated as out of range. */
  maxPage: Math.floor(Number.MAX_SAFE_INTEGER / 500) + 1,
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A calendar date `YYYY-MM-DD` that exists (not 2026-02-30, which Date.parse rolls into March) in a year
 * PostgreSQL's dates hold (0001 on: there is no year 0), so that a `::date` cast of it cannot fail.
 */
export function isIsoDate(v: unknown): v is string {
  const m = typeof v === 'string' ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(v) : null;
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]) - 1, Number(m[3])];
  const day = new Date(0);
  day.setUTCFullYear(y, mo, d); // unlike Date.UTC, no years 0-99 read as 1900-1999
  return y >= 1 && day.getUTCFullYear() === y && day.getUTCMonth() === mo && day.getUTCDate() === d;
}

/** A uuid in its canonical 8-4-4-4-12 hexadecimal form (spec 2.1), in either case: what a `::uuid` cast accepts of it. */
export function isUuid(v: unknown): v is string {
  return typeof v === 'string' && UUID.test(v);
}

function first(v: unknown): unknown {
  return Array.isArray(v) ? v[0] : v;
}

/** An integer from a query value, or undefined for anything that is not one ("5.5", "abc", NaN, objects). */
function integerOf(raw: unknown): number | undefined {
  const v = first(raw);
  if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
  // A digit string too long for a double becomes Infinity: still "an integer larger than the maximum".
  if (typeof v === 'string' && /^[+-]?\d+$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

/**
 * Limits below 1 and garbage fall back to the DEFAULT rather than to 1: a client sending `limit=0`
 * or `limit=abc` almost certainly did not mean "one row per page", and the default is what it gets
 * when it sends nothing. Larger values clamp to the maximum, as the spec says.
 */
function clampLimit(raw: unknown, fallback: number, max: number): number {
  const n = integerOf(raw);
  if (n === undefined || n < 1) return fallback;
  return Math.min(n, max);
}

// ---------------------------------------------------------------------------------------------
// Pagination

export interface Pagination {
  page: number;
  limit: number;
  offset: number;
}

/** `page` (default 1; out-of-range or non-integer becomes 1) and `limit` (default 50, 1..500, clamped). */
export function parsePagination(query: Record<string, unknown>): Pagination {
  const limit = clampLimit(query.limit, LIST_LIMITS.defaultLimit, LIST_LIMITS.maxLimit);
  const p = integerOf(query.page);
  const page = p !== undefined && p >= 1 && p <= LIST_LIMITS.maxPage ? p : 1;
  return { page, limit, offset: (page - 1) * limit };
}

// ---------------------------------------------------------------------------------------------
// Sorting

export interface SortClause {
  field: string;
  column: string;
  dir: 'asc' | 'desc';
}

export interface Sort {
  clauses: SortClause[];
  /** The body of an ORDER BY clause, e.g. `name asc, created_at desc, id desc`. */
  sql: string;
}

function quoteField(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

/** Parses `name,-created_at`; returns a reason string instead of clauses when the text is invalid. */
function sortClauses(text: string, allowed: Readonly<Record<string, string>>): SortClause[] | string {
  const clauses: SortClause[] = [];
  const seen = new Set<string>();
  const segments = text.split(',');
  for (const [i, segment] of segments.entries()) {
    const token = segment.trim();
    // A leading '+' is accepted as ascending: sent unencoded it arrives as a space, which trim() removes anyway.
    const dir = token.startsWith('-') ? 'desc' : 'asc';
    const field = token.startsWith('-') || token.startsWith('+') ? token.slice(1) : token;
    if (field === '') return `empty sort field at position ${i + 1}; use comma-separated fields such as "name,-created_at"`;
    // Object.hasOwn, never `allowed[field]`: "constructor" or "__proto__" must not reach the prototype.
    if (!Object.hasOwn(allowed, field)) {
      return `unknown sort field ${quoteField(field)}; allowed: ${Object.keys(allowed).join(', ')}`;
    }
    if (seen.has(field)) return `sort field ${quoteField(field)} is given more than once`;
    seen.add(field);
    clauses.push({ field, column: allowed[field] as string, dir });
  }
  return clauses;
}

/**
 * `sort=name,-created_at`: fields in priority order, `-` for descending. Absent or blank -> `fallback`
 * (newest first). Unknown or repeated fields -> 422 with `fields.sort`. The `tiebreaker` column (a
 * unique one, `id` by default) is always appended unless already sorted on, so the order is total and
 * OFFSET pages never skip or repeat rows; it takes the direction of the last clause, which with
 * UUIDv7 ids keeps `created_at desc, id desc` consistent and lets a (created_at, id) index serve it.
 * `allowed` maps public field names to trusted SQL expressions; user text never reaches `sql`.
 */
export function parseSort(raw: unknown, allowed: Readonly<Record<string, string>>, fallback = '-created_at', tiebreaker = 'id'): Sort {
  const v = first(raw);
  if (v !== undefined && v !== null && typeof v !== 'string') {
    throw errors.queryValidation({ sort: 'must be comma-separated field names, e.g. "name,-created_at"' });
  }
  let clauses: SortClause[] | string;
  if (typeof v === 'string' && v.trim() !== '') {
    clauses = sortClauses(v, allowed);
    if (typeof clauses === 'string') throw errors.queryValidation({ sort: clauses });
  } else {
    clauses = sortClauses(fallback, allowed);
    // The fallback comes from code, so a bad one is a programming error (500), not the client's fault.
    if (typeof clauses === 'string') throw new TypeError(`parseSort: fallback ${JSON.stringify(fallback)} is invalid: ${clauses}`);
  }
  const last = clauses[clauses.length - 1];
  if (!clauses.some((c) => c.column === tiebreaker)) {
    clauses.push({ field: tiebreaker, column: tiebreaker, dir: last?.dir ?? 'asc' });
  }
  return { clauses, sql: clauses.map((c) => `${c.column} ${c.dir}`).join(', ') };
}

// ---------------------------------------------------------------------------------------------
// Filtering

/**
 * Flat `?status=scheduled&specialist_id=<uuid>` filters: returns only the allowed keys, as strings.
 * Unknown keys are ignored (spec 4.1). A repeated key takes its first value, like every scalar here.
 * An empty value (`?status=`, what an untouched form field sends) counts as absent, not as "match the
 * empty string". Numbers and booleans (a coercing route schema may produce them) are turned back into
 * their text; objects and nulls are ignored.
 */
export function parseFilters<K extends string>(query: Record<string, unknown>, allowed: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const key of allowed) {
    if (!Object.hasOwn(query, key)) continue;
    const v = first(query[key]);
    if (typeof v === 'string' && v !== '') out[key] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[key] = String(v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Date ranges

export interface DateRange {
  /** Inclusive lower bound: an ISO 8601 UTC string with microseconds, ready to bind for `col >= $n`. */
  after?: string;
  /** Inclusive upper bound, ready to bind for `col <= $n`. */
  before?: string;
}

const DAY_US = 86_400_000_000n;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// RFC 3339 date-time. The offset sign may arrive as a space: an unencoded '+' in a URL decodes to ' '.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+\- ])(\d{2}):(\d{2}))$/;

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil); no Date pitfalls for years < 100. */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(z0: number): [number, number, number] {
  const z = z0 + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

const MIN_US = BigInt(daysFromCivil(1, 1, 1)) * DAY_US;
const MAX_US = BigInt(daysFromCivil(10000, 1, 1)) * DAY_US - 1n;

const pad = (n: number | bigint, w: number) => String(n).padStart(w, '0');

/** Microseconds since the epoch -> `YYYY-MM-DDTHH:MM:SS.ffffffZ` (years 0001..9999). */
function formatMicros(us: bigint): string {
  let days = us / DAY_US;
  let rest = us % DAY_US;
  if (rest < 0n) {
    rest += DAY_US;
    days -= 1n;
  } // floor division for instants before 1970
  const [y, m, d] = civilFromDays(Number(days));
  const sec = rest / 1_000_000n;
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}T${pad(sec / 3600n, 2)}:${pad((sec / 60n) % 60n, 2)}:${pad(sec % 60n, 2)}.${pad(rest % 1_000_000n, 6)}Z`;
}

const FORMAT_REASON = 'must be YYYY-MM-DD or an RFC 3339 date-time such as 2026-03-01T09:30:00Z';

/**
 * One bound as microseconds since the epoch, or a reason. PostgreSQL timestamps have microsecond
 * resolution, so finer fractions are rounded TOWARD the range: `after` up, `before` down. With a
 * microsecond column, `col >= ceil(v)` and `col <= floor(v)` are then exactly `col >= v` and `col <= v`.
 */
function boundMicros(text: string, side: 'after' | 'before'): bigint | string {
  let y: number,
    mo: number,
    d: number,
    h = 0,
    mi = 0,
    s = 0,
    offsetMin = 0,
    us = 0n;
  let dateOnly = false;
  const dm = DATE_ONLY.exec(text);
  const tm = dm ? null : DATE_TIME.exec(text);
  if (dm) {
    [y, mo, d] = [Number(dm[1]), Number(dm[2]), Number(dm[3])];
    dateOnly = true;
  } else if (tm) {
    [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(tm[i])) as [number, number, number, number, number, number];
    const frac = tm[7] ?? '';
    us = BigInt(frac.slice(0, 6).padEnd(6, '0') || '0');
    if (side === 'after' && /[1-9]/.test(frac.slice(6))) us += 1n;
    if (tm[8] !== undefined) {
      const oh = Number(tm[9]),
        om = Number(tm[10]);
      if (oh > 23 || om > 59) return 'has an impossible UTC offset';
      offsetMin = (tm[8] === '-' ? -1 : 1) * (oh * 60 + om);
    }
  } else {
    return FORMAT_REASON;
  }
  // Second 60 (a leap second, valid RFC 3339) rolls into the next minute, as PostgreSQL does.
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 60) {
    return 'is not a real calendar date or time';
  }
  const dayStart = BigInt(daysFromCivil(y, mo, d)) * DAY_US;
  // A date-only `before` snaps to the last representable instant of that day: 23:59:59.999999. The spec's
  // 23:59:59.999999999 is not representable in PostgreSQL; sent as text it would ROUND to the next
  // midnight and let rows of the following day in. .999999 is the same bound at microsecond resolution.
  if (dateOnly) return side === 'after' ? dayStart : dayStart + DAY_US - 1n;
  const total = dayStart + BigInt(((h * 60 + mi - offsetMin) * 60 + s) * 1_000_000) + us;
  if (total < MIN_US || total > MAX_US) return 'is outside the supported range (years 0001 to 9999 UTC)';
  return total;
}

/**
 * `<col>_after` / `<col>_before` (spec 4.1), each optional and inclusive. Returns UTC ISO strings with
 * microseconds, e.g. `2026-03-01T00:00:00.000000Z`; a date-only `_before` gives `<date>T23:59:59.999999Z`.
 * An empty value counts as absent. Bad formats, impossible dates and after > before -> 422 naming the key(s).
 */
export function parseDateRange(query: Record<string, unknown>, col: string): DateRange {
  const fields: Record<string, string> = {};
  const micros: { after?: bigint; before?: bigint } = {};
  for (const side of ['after', 'before'] as const) {
    const key = `${col}_${side}`;
    const v = Object.hasOwn(query, key) ? first(query[key]) : undefined;
    if (v === undefined || v === null || v === '') continue;
    const r = typeof v === 'string' ? boundMicros(v, side) : FORMAT_REASON;
    if (typeof r === 'string') fields[key] = r;
    else micros[side] = r;
  }
  if (micros.after !== undefined && micros.before !== undefined && micros.after > micros.before) {
    fields[`${col}_after`] = `must not be later than ${col}_before`;
    fields[`${col}_before`] = `must not be earlier than ${col}_after`;
  }
  if (Object.keys(fields).length) throw errors.queryValidation(fields);
  const range: DateRange = {};
  if (micros.after !== undefined) range.after = formatMicros(micros.after);
  if (micros.before !== undefined) range.before = formatMicros(micros.before);
  return range;
}

// ---------------------------------------------------------------------------------------------
// Pickers

export interface Picker {
  /** 'ids' when at least one valid id was given: ids win over q (spec 4.1). */
  mode: 'ids' | 'q';
  q: string;
  /** Valid UUIDs only, lower-cased, de-duplicated in the order given, at most `limit` of them. */
  ids: string[];
  limit: number;
}

/**
 * Typeahead query: `q` (trimmed, default ''), `ids` (comma-separated; invalid ones silently dropped),
 * `limit` (default 20, 1..50, larger clamps; below 1 or garbage -> the default, as for lists).
 * Ids beyond `limit` are dropped too: there is no return-everything mode, so a route can answer
 * `where id = any($ids) limit $limit` and never return more than `limit` rows. Repeated `ids` keys are
 * all used (each may hold a comma-separated list); `q` and `limit` take their first value.
 */
export function parsePicker(query: Record<string, unknown>): Picker {
  const rawQ = first(query.q);
  const q = typeof rawQ === 'string' ? rawQ.trim() : '';
  const limit = clampLimit(query.limit, LIST_LIMITS.pickerDefaultLimit, LIST_LIMITS.pickerMaxLimit);
  const rawIds = Array.isArray(query.ids) ? query.ids : [query.ids];
  const ids = new Set<string>();
  for (const chunk of rawIds) {
    if (typeof chunk !== 'string') continue;
    for (const part of chunk.split(',')) {
      const id = part.trim().toLowerCase();
      if (isUuid(id) && ids.size < limit) ids.add(id);
    }
  }
  return { mode: ids.size > 0 ? 'ids' : 'q', q, ids: [...ids], limit };
}

/**
 * `%q%` for a substring match with LIKE/ILIKE: `%`, `_` and `\` in what the user typed are escaped
 * (backslash is PostgreSQL's default LIKE escape), so typing `%` does not match everything.
 */
export function containsPattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, '\\$&')}%`;
}

// ---------------------------------------------------------------------------------------------
// Envelopes (spec 2.2)

export interface ListEnvelope<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number };
}

/** `total` may be a count(*) as the driver returns it (bigint or numeric string). */
export function listEnvelope<T>(
  rows: T[],
  pagination: Pick<Pagination, 'page' | 'limit'>,
  total: number | bigint | string,
): ListEnvelope<T> {
  const n = Number(total);
  if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`listEnvelope: total ${String(total)} is not a count`);
  return { data: rows, pagination: { page: pagination.page, limit: pagination.limit, total: n } };
}

/** Picker lists carry no pagination (spec 2.2). */
export function pickerEnvelope<T>(rows: T[]): { data: T[] } {
  return { data: rows };
}

// ---------------------------------------------------------------------------------------------
// SQL WHERE builder

/**
 * Collects `and`-ed conditions with numbered parameters. Fragments are SQL written in code, where
 * every `?` is a placeholder (so use jsonb_exists() rather than the `?` operator); values are only
 * ever bound, never spliced. Start from existing params to continue their numbering:
 *
 *   const w = new SqlWhere().optional('status = ?', f.status).dateRange('created_at', range);
 *   sql`select ... where ${w.text} order by ${sort.sql} limit ${w.param(p.limit)} offset ${w.param(p.offset)}`
 */
export class SqlWhere {
  readonly params: unknown[];
  readonly #parts: string[] = [];

  constructor(params: readonly unknown[] = []) {
    this.params = [...params];
  }

  /** Binds one value and returns its placeholder (`$n`), e.g. for LIMIT and OFFSET. */
  param(value: unknown): string {
    if (value === undefined) throw new TypeError('SqlWhere: cannot bind undefined (use optional())');
    this.params.push(value);
    return `$${this.params.length}`;
  }

  add(fragment: string, ...values: unknown[]): this {
    const pieces = fragment.split('?');
    if (pieces.length - 1 !== values.length) {
      throw new TypeError(`SqlWhere: ${JSON.stringify(fragment)} has ${pieces.length - 1} placeholders for ${values.length} values`);
    }
    if (/\$\d/.test(fragment)) throw new TypeError('SqlWhere: use ? placeholders, not $n');
    let text = pieces[0] ?? '';
    values.forEach((v, i) => {
      text += this.param(v) + (pieces[i + 1] ?? '');
    });
    this.#parts.push(`(${text})`);
    return this;
  }

  /** add() when the value is present; a filter that was not given adds nothing. */
  optional(fragment: string, value: unknown): this {
    return value === undefined ? this : this.add(fragment, value);
  }

  /** Inclusive bounds from parseDateRange on a trusted column expression. */
  dateRange(column: string, range: DateRange): this {
    return this.optional(`${column} >= ?`, range.after).optional(`${column} <= ?`, range.before);
  }

  /** The conditions joined by `and`; `true` when there are none, so `where ${text}` is always valid. */
  get text(): string {
    return this.#parts.length ? this.#parts.join(' and ') : 'true';
  }
}

// ---------------------------------------------------------------------------------------------
// TypeBox schemas (OpenAPI). Query parameters are loose strings on purpose: the parsers clamp out-of-range
// and garbage values, so the validator must not reject them (an integer schema would 422 on `page=abc`).

export const PaginationSchema = Type.Object({
  page: Type.Integer({ minimum: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: LIST_LIMITS.maxLimit }),
  total: Type.Integer({ minimum: 0, description: 'Rows matching the filters, ignoring pagination.' }),
});

export const ListQuery = Type.Object({
  page: Type.Optional(
    Type.String({ description: 'Integer, default 1, minimum 1; out-of-range or non-integer values become 1.', examples: ['1'] }),
  ),
  limit: Type.Optional(Type.String({ description: 'Integer, default 50, range 1 to 500; larger values clamp to 500.', examples: ['50'] })),
  sort: Type.Optional(
    Type.String({
      description: 'Comma-separated fields in priority order, `-` prefix for descending; default newest first.',
      examples: ['name,-created_at'],
    }),
  ),
});

/** ListQuery plus a route's own filter and date-range keys. */
export function ListQueryWith<P extends TProperties>(extra: P): TObject<typeof ListQuery.properties & P> {
  return Type.Object({ ...ListQuery.properties, ...extra });
}

/** The `sort` parameter with the route's allow-list in its description. */
export function SortParam(allowed: Readonly<Record<string, string>>): TOptional<TString> {
  return Type.Optional(
    Type.String({
      description: `Comma-separated fields in priority order, \`-\` prefix for descending; default newest first. Allowed: ${Object.keys(allowed).join(', ')}.`,
    }),
  );
}

/** `<col>_after` / `<col>_before` query properties, for spreading into ListQueryWith. */
export function DateRangeQuery<C extends string>(col: C): Record<`${C}_after` | `${C}_before`, TOptional<TString>> {
  const doc = (side: string) => `Inclusive ${side} bound on ${col}: YYYY-MM-DD or RFC 3339.`;
  return {
    [`${col}_after`]: Type.Optional(Type.String({ description: doc('lower'), examples: ['2026-03-01'] })),
    [`${col}_before`]: Type.Optional(Type.String({ description: doc('upper'), examples: ['2026-03-31'] })),
  } as Record<`${C}_after` | `${C}_before`, TOptional<TString>>;
}

export const PickerQuery = Type.Object({
  q: Type.Optional(Type.String({ description: 'Substring to match, trimmed; default empty.' })),
  ids: Type.Optional(Type.String({ description: 'Comma-separated UUIDs; invalid ones are dropped. When non-empty it wins over q.' })),
  limit: Type.Optional(Type.String({ description: 'Integer, default 20, range 1 to 50; larger values clamp to 50.', examples: ['20'] })),
});

/** `{ data: T[], pagination }`: the list envelope. */
export const ListOf = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(item), pagination: PaginationSchema });

/** `{ data: T[] }`: the picker envelope (no pagination). */
export const PickerOf = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(item) });
