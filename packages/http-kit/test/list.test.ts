import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Fastify from 'fastify';
import { AppError } from '../src/errors.ts';
import { installErrorHandling } from '../src/error-handler.ts';
import { installValidators } from '../src/validators.ts';
import {
  LIST_LIMITS,
  parsePagination,
  parseSort,
  parseFilters,
  parseDateRange,
  parsePicker,
  containsPattern,
  listEnvelope,
  pickerEnvelope,
  SqlWhere,
  ListQuery,
  ListQueryWith,
  SortParam,
  DateRangeQuery,
  PickerQuery,
  ListOf,
  PickerOf,
} from '../src/list.ts';
import { Type } from 'typebox';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Runs fn and returns the 422 AppError it must throw. */
function get422(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.statusCode, 422);
    assert.equal(err.code, 'validation_failed');
    assert.ok(err.fields, 'fields present');
    return err;
  }
  assert.fail('expected a 422 validation_failed');
}

/** Any value a query object could hold, and then some. */
const anyQueryValue = fc.oneof(
  fc.string(),
  fc.stringMatching(/^[+-]?\d{1,40}$/),
  fc.integer(),
  fc.double(), // includes NaN, +-Infinity, -0
  fc.constantFrom(undefined, null, '', ' ', '0', '-1', '1.5', '1e3', 'NaN', 'Infinity', '9'.repeat(400)),
  fc.array(fc.oneof(fc.string(), fc.integer())),
  fc.anything(),
);

describe('parsePagination', () => {
  test('property: page >= 1, limit in 1..500, offset = (page-1)*limit, for any input', () => {
    fc.assert(
      fc.property(anyQueryValue, anyQueryValue, (page, limit) => {
        const p = parsePagination({ page, limit });
        assert.ok(Number.isSafeInteger(p.page) && p.page >= 1);
        assert.ok(Number.isSafeInteger(p.limit) && p.limit >= 1 && p.limit <= 500);
        assert.equal(p.offset, (p.page - 1) * p.limit);
        assert.ok(Number.isSafeInteger(p.offset) && p.offset >= 0);
      }),
      { numRuns: 2000 },
    );
  });

  test('property: valid integers pass through, as numbers or strings', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 500 }), fc.boolean(), (page, limit, asText) => {
        const q = asText ? { page: String(page), limit: String(limit) } : { page, limit };
        assert.deepEqual(parsePagination(q), { page, limit, offset: (page - 1) * limit });
      }),
    );
  });

  test('defaults: page 1, limit 50, offset 0', () => {
    assert.deepEqual(parsePagination({}), { page: 1, limit: 50, offset: 0 });
  });

  test('offset is (page - 1) * limit', () => {
    assert.deepEqual(parsePagination({ page: '3', limit: '20' }), { page: 3, limit: 20, offset: 40 });
  });

  test('limit larger than 500 clamps to 500', () => {
    for (const limit of ['501', '100000', 501, '9'.repeat(40)]) assert.equal(parsePagination({ limit }).limit, 500);
    assert.equal(parsePagination({ limit: '500' }).limit, 500);
    assert.equal(parsePagination({ limit: '1' }).limit, 1);
  });

  test('limit below 1 or garbage falls back to the default 50', () => {
    for (const limit of ['0', '-1', 'abc', '2.5', '', NaN, Infinity, null, {}, '1e2']) {
      assert.equal(parsePagination({ limit }).limit, 50, `limit ${String(limit)}`);
    }
  });

  test('out-of-range or non-integer page becomes 1', () => {
    for (const page of ['0', '-3', 'abc', '1.5', '', 0, -1, 2.5, NaN, '9'.repeat(30), LIST_LIMITS.maxPage + 1]) {
      assert.equal(parsePagination({ page }).page, 1, `page ${String(page)}`);
    }
    assert.equal(parsePagination({ page: LIST_LIMITS.maxPage }).page, LIST_LIMITS.maxPage);
  });

  test('repeated keys take the first value; surrounding spaces are tolerated', () => {
    assert.deepEqual(parsePagination({ page: ['2', '9'], limit: [' 10 ', '1'] }), { page: 2, limit: 10, offset: 10 });
  });
});

describe('parseSort', () => {
  const allowed = { name: 'u.name', created_at: 'u.created_at', email: 'lower(u.email)' };

  const allowedMap = fc
    .uniqueArray(fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/), { minLength: 1, maxLength: 6 })
    .map((names) => Object.fromEntries(names.map((n, i) => [n, `t${i}.${n}`])) as Record<string, string>);

  test('property: every permutation of allowed fields with random +/- is accepted, in order, plus a tiebreaker', () => {
    const arb = allowedMap.chain((map) =>
      fc.tuple(
        fc.constant(map),
        fc.shuffledSubarray(Object.keys(map), { minLength: 1 }),
        fc.array(fc.constantFrom('', '-', '+', ' '), { minLength: 6, maxLength: 6 }),
      ),
    );
    fc.assert(
      fc.property(arb, ([map, fields, prefixes]) => {
        const raw = fields.map((f, i) => `${prefixes[i]}${f}`).join(',');
        const s = parseSort(raw, map, `-${Object.keys(map)[0] as string}`);
        const expected = fields.map((f, i) => ({ field: f, column: map[f] as string, dir: prefixes[i] === '-' ? 'desc' : 'asc' }));
        const last = expected[expected.length - 1];
        assert.deepEqual(s.clauses, [...expected, { field: 'id', column: 'id', dir: last?.dir }]);
        assert.equal(s.sql, s.clauses.map((c) => `${c.column} ${c.dir}`).join(', '));
      }),
    );
  });

  test('property: any sort containing a field outside the allow-list is a 422 on fields.sort', () => {
    const unknownName = fc.oneof(
      fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'id', 'NAME', '1; drop table users'),
      fc.string({ minLength: 1 }),
    );
    const arb = allowedMap.chain((map) =>
      fc.tuple(
        fc.constant(map),
        fc.shuffledSubarray(Object.keys(map)),
        unknownName.filter((n) => !n.includes(',') && n.trim() === n && n !== '' && !/^[-+]/.test(n) && !Object.hasOwn(map, n)),
        fc.nat(),
        fc.boolean(),
      ),
    );
    fc.assert(
      fc.property(arb, ([map, fields, bad, at, desc]) => {
        const tokens = [...fields];
        tokens.splice(at % (tokens.length + 1), 0, (desc ? '-' : '') + bad);
        const err = get422(() => parseSort(tokens.join(','), map));
        assert.match(err.fields?.sort ?? '', /^unknown sort field ".*"; allowed: /);
      }),
    );
  });

  test('property: for any raw input, the result is a 422 on sort or SQL made only of allowed columns', () => {
    const columns = new Set([...Object.values(allowed), 'id']);
    const raw = fc.oneof(
      anyQueryValue,
      fc.array(fc.constantFrom('name', '-name', 'created_at', '-created_at', 'email', '+email', 'x', '', ' ')).map((a) => a.join(',')),
    );
    fc.assert(
      fc.property(raw, (r) => {
        let sql: string;
        try {
          sql = parseSort(r, allowed).sql;
        } catch (err) {
          assert.ok(err instanceof AppError && err.statusCode === 422 && typeof err.fields?.sort === 'string', String(err));
          return;
        }
        for (const piece of sql.split(', ')) {
          const m = /^(.+) (asc|desc)$/.exec(piece);
          assert.ok(m && columns.has(m[1] as string), `unexpected ORDER BY piece ${piece}`);
        }
      }),
      { numRuns: 2000 },
    );
  });

  test('absent, empty or blank sort gives newest first with the id tiebreaker', () => {
    for (const raw of [undefined, null, '', '   ', ['']]) {
      const s = parseSort(raw, allowed);
      assert.equal(s.sql, 'u.created_at desc, id desc');
      assert.deepEqual(s.clauses[0], { field: 'created_at', column: 'u.created_at', dir: 'desc' });
    }
  });

  test('name,-created_at in priority order', () => {
    assert.equal(parseSort('name,-created_at', allowed).sql, 'u.name asc, u.created_at desc, id desc');
    assert.equal(parseSort(' -email , +name ', allowed).sql, 'lower(u.email) desc, u.name asc, id asc');
  });

  test('unknown field: 422 with the allow-list in fields.sort', () => {
    const err = get422(() => parseSort('name,x', allowed));
    assert.deepEqual(err.fields, { sort: 'unknown sort field "x"; allowed: name, created_at, email' });
    get422(() => parseSort('__proto__', allowed));
    get422(() => parseSort('-constructor', allowed));
  });

  test('duplicates, empty segments and non-strings are rejected', () => {
    assert.deepEqual(get422(() => parseSort('name,-name', allowed)).fields, { sort: 'sort field "name" is given more than once' });
    assert.match(get422(() => parseSort('name,', allowed)).fields?.sort ?? '', /empty sort field at position 2/);
    assert.match(get422(() => parseSort('-', allowed)).fields?.sort ?? '', /empty sort field/);
    get422(() => parseSort(5, allowed));
  });

  test('the tiebreaker is not repeated when already sorted on, and can be renamed', () => {
    assert.equal(parseSort('-id', { id: 'id' }, '-id').sql, 'id desc');
    assert.equal(parseSort('name', allowed, '-created_at', 'u.id').sql, 'u.name asc, u.id asc');
  });

  test('an invalid fallback is a programming error, not a 422', () => {
    assert.throws(
      () => parseSort(undefined, { name: 'name' }),
      (e: unknown) => e instanceof TypeError,
    );
  });
});

describe('parseDateRange', () => {
  const dayArb = fc
    .date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString().slice(0, 10));

  test('property: every valid YYYY-MM-DD gives after <= before covering exactly the whole day', () => {
    fc.assert(
      fc.property(dayArb, (day) => {
        const r = parseDateRange({ d_after: day, d_before: day }, 'd');
        assert.equal(r.after, `${day}T00:00:00.000000Z`);
        assert.equal(r.before, `${day}T23:59:59.999999Z`);
        assert.ok((r.after as string) <= (r.before as string));
        // The bounds are real instants: the day start, and one microsecond before the next day.
        assert.equal(Date.parse(r.before as string) - Date.parse(r.after as string), 86_399_999);
      }),
      { numRuns: 1000 },
    );
  });

  test('property: RFC 3339 with any offset converts to the same UTC instant', () => {
    const arb = fc.tuple(
      fc.date({ min: new Date('1000-01-01T00:00:00Z'), max: new Date('9000-01-01T00:00:00Z'), noInvalidDate: true }),
      fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
      fc.constantFrom('T', 't'),
      fc.constantFrom('+', ' '),
    );
    fc.assert(
      fc.property(arb, ([date, offsetMin, sep, plus]) => {
        const local = new Date(date.getTime() + offsetMin * 60_000).toISOString().slice(0, 23);
        const abs = Math.abs(offsetMin);
        const offset =
          offsetMin === 0
            ? 'Z'
            : `${offsetMin < 0 ? '-' : plus}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
        const text = local.replace('T', sep) + offset;
        const r = parseDateRange({ at_after: text }, 'at');
        assert.equal(r.after, date.toISOString().replace('Z', '000Z'));
      }),
    );
  });

  test('property: garbage gives 422 naming exactly the right key', () => {
    const garbage = fc.oneof(
      fc.string({ minLength: 1 }).filter((s) => !/^\d{4}-\d{2}-\d{2}/.test(s)),
      fc.constantFrom(
        '2026-02-30',
        '2023-02-29',
        '2026-13-01',
        '2026-00-10',
        '0000-01-01',
        '2026-1-01',
        '2026-01-01T10:00Z',
        '2026-01-01T10:00:00',
        '2026-01-01T24:00:00Z',
        '2026-01-01T10:60:00Z',
        '2026-01-01T10:00:00+24:00',
        '2026-01-01 10:00:00Z',
        '20260101',
        '2026-01-01Z',
        ' 2026-01-01',
        '2026-01-01T10:00:00.Z',
      ),
      fc.integer(),
    );
    fc.assert(
      fc.property(garbage, fc.constantFrom('after', 'before'), fc.constantFrom('created_at', 'starts_at', 'x'), (v, side, col) => {
        const err = get422(() => parseDateRange({ [`${col}_${side}`]: v }, col));
        assert.deepEqual(Object.keys(err.fields ?? {}), [`${col}_${side}`]);
      }),
      { numRuns: 1000 },
    );
  });

  test('date-only bounds snap to exact strings', () => {
    assert.deepEqual(parseDateRange({ created_at_after: '2026-03-01', created_at_before: '2026-03-31' }, 'created_at'), {
      after: '2026-03-01T00:00:00.000000Z',
      before: '2026-03-31T23:59:59.999999Z',
    });
  });

  test('each bound is optional; absent and empty values are absent', () => {
    assert.deepEqual(parseDateRange({}, 'created_at'), {});
    assert.deepEqual(parseDateRange({ created_at_after: '', created_at_before: '2026-01-01' }, 'created_at'), {
      before: '2026-01-01T23:59:59.999999Z',
    });
  });

  test('RFC 3339 values are normalised to UTC with microseconds', () => {
    const r = parseDateRange({ t_after: '2026-03-01T01:30:00+02:00', t_before: '2026-03-01T09:00:00.5Z' }, 't');
    assert.deepEqual(r, { after: '2026-02-28T23:30:00.000000Z', before: '2026-03-01T09:00:00.500000Z' });
    // An unencoded '+' arrives as a space.
    assert.equal(parseDateRange({ t_after: '2026-03-01T01:30:00 02:00' }, 't').after, '2026-02-28T23:30:00.000000Z');
    assert.equal(parseDateRange({ t_after: '2026-03-01t01:30:00-00:30' }, 't').after, '2026-03-01T02:00:00.000000Z');
  });

  test('sub-microsecond fractions round toward the range', () => {
    const r = parseDateRange({ t_after: '2026-03-01T00:00:00.0000001Z', t_before: '2026-03-01T00:00:00.0000019Z' }, 't');
    assert.deepEqual(r, { after: '2026-03-01T00:00:00.000001Z', before: '2026-03-01T00:00:00.000001Z' });
    assert.equal(parseDateRange({ t_after: '2026-12-31T23:59:59.9999999Z' }, 't').after, '2027-01-01T00:00:00.000000Z');
  });

  test('impossible dates are 422 on the right key; leap days are fine', () => {
    assert.deepEqual(Object.keys(get422(() => parseDateRange({ d_after: '2026-02-30' }, 'd')).fields ?? {}), ['d_after']);
    assert.deepEqual(Object.keys(get422(() => parseDateRange({ d_before: '2023-02-29' }, 'd')).fields ?? {}), ['d_before']);
    assert.equal(parseDateRange({ d_after: '2024-02-29' }, 'd').after, '2024-02-29T00:00:00.000000Z');
    assert.equal(parseDateRange({ d_after: '2000-02-29' }, 'd').after, '2000-02-29T00:00:00.000000Z');
    get422(() => parseDateRange({ d_after: '1900-02-29' }, 'd'));
  });

  test('both keys invalid are reported together', () => {
    const err = get422(() => parseDateRange({ d_after: 'yesterday', d_before: '2026-02-30' }, 'd'));
    assert.deepEqual(Object.keys(err.fields ?? {}).sort(), ['d_after', 'd_before']);
  });

  test('after later than before is a 422 on both keys; equal bounds are fine', () => {
    const err = get422(() => parseDateRange({ d_after: '2026-03-02', d_before: '2026-03-01' }, 'd'));
    assert.deepEqual(err.fields, { d_after: 'must not be later than d_before', d_before: 'must not be earlier than d_after' });
    assert.deepEqual(parseDateRange({ d_after: '2026-03-01T10:00:00Z', d_before: '2026-03-01T12:00:00+02:00' }, 'd'), {
      after: '2026-03-01T10:00:00.000000Z',
      before: '2026-03-01T10:00:00.000000Z',
    });
  });

  test('instants outside years 0001..9999 UTC are rejected; the edges are accepted', () => {
    get422(() => parseDateRange({ d_after: '0001-01-01T00:00:00+01:00' }, 'd'));
    get422(() => parseDateRange({ d_before: '9999-12-31T23:00:00-01:00' }, 'd'));
    assert.deepEqual(parseDateRange({ d_after: '0001-01-01', d_before: '9999-12-31' }, 'd'), {
      after: '0001-01-01T00:00:00.000000Z',
      before: '9999-12-31T23:59:59.999999Z',
    });
    assert.equal(parseDateRange({ d_after: '0099-06-15' }, 'd').after, '0099-06-15T00:00:00.000000Z');
  });
});

describe('parseFilters', () => {
  test('returns only allowed keys with string values; unknown keys ignored', () => {
    const q = { status: 'scheduled', specialist_id: 'abc', evil: 'x', 'status[gt]': 'y' };
    assert.deepEqual(parseFilters(q, ['status', 'specialist_id', 'room']), { status: 'scheduled', specialist_id: 'abc' });
  });

  test('arrays take the first value; empty values are absent; coerced scalars become text; objects ignored', () => {
    const q = { a: ['1', '2'], b: '', c: 3, d: true, e: { x: 1 }, f: null };
    assert.deepEqual(parseFilters(q, ['a', 'b', 'c', 'd', 'e', 'f']), { a: '1', c: '3', d: 'true' });
  });

  test('prototype keys are never read from the prototype', () => {
    assert.deepEqual(parseFilters({}, ['constructor', 'toString', '__proto__']), {});
  });

  test('property: output keys are a subset of allowed and values are non-empty strings', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), anyQueryValue), fc.array(fc.string()), (q, allowedKeys) => {
        const out = parseFilters(q, allowedKeys);
        for (const [k, v] of Object.entries(out)) {
          assert.ok(allowedKeys.includes(k));
          assert.ok(typeof v === 'string' && v !== '');
        }
      }),
    );
  });
});

describe('parsePicker', () => {
  const a = '0190f5a2-7c4e-7d1a-8b2c-3d4e5f607182';
  const b = '0190F5A2-7C4E-7D1A-8B2C-3D4E5F607183';

  test('property: limit in 1..50, ids valid unique UUIDs within limit, q trimmed, mode consistent', () => {
    const idsArb = fc.oneof(
      fc
        .array(
          fc.oneof(
            fc.uuid(),
            fc.uuid().map((u) => ` ${u.toUpperCase()} `),
            fc.string(),
          ),
          { maxLength: 80 },
        )
        .map((p) => p.join(',')),
      fc.array(fc.uuid(), { maxLength: 3 }),
      anyQueryValue,
    );
    fc.assert(
      fc.property(anyQueryValue, idsArb, anyQueryValue, (q, ids, limit) => {
        const p = parsePicker({ q, ids, limit });
        assert.ok(Number.isInteger(p.limit) && p.limit >= 1 && p.limit <= 50);
        assert.ok(p.ids.every((id) => UUID.test(id)));
        assert.equal(new Set(p.ids).size, p.ids.length);
        assert.ok(p.ids.length <= p.limit);
        const firstQ = Array.isArray(q) ? q[0] : q;
        assert.equal(p.q, typeof firstQ === 'string' ? firstQ.trim() : '');
        assert.equal(p.mode, p.ids.length > 0 ? 'ids' : 'q');
      }),
      { numRuns: 2000 },
    );
  });

  test('defaults: empty q, no ids, limit 20, mode q', () => {
    assert.deepEqual(parsePicker({}), { mode: 'q', q: '', ids: [], limit: 20 });
  });

  test('q is trimmed', () => {
    assert.equal(parsePicker({ q: '  ann  ' }).q, 'ann');
  });

  test('limit clamps to 50; below 1 or garbage gives 20', () => {
    assert.equal(parsePicker({ limit: '51' }).limit, 50);
    assert.equal(parsePicker({ limit: '5000' }).limit, 50);
    assert.equal(parsePicker({ limit: '50' }).limit, 50);
    assert.equal(parsePicker({ limit: '1' }).limit, 1);
    for (const limit of ['0', '-2', 'many', '']) assert.equal(parsePicker({ limit }).limit, 20);
  });

  test('ids win over q; invalid ids are dropped silently; duplicates removed case-insensitively', () => {
    const p = parsePicker({ q: 'ann', ids: `${a}, not-a-uuid,${b},${a.toUpperCase()},,123` });
    assert.deepEqual(p, { mode: 'ids', q: 'ann', ids: [a, b.toLowerCase()], limit: 20 });
  });

  test('ids that are all invalid fall back to q', () => {
    assert.equal(parsePicker({ q: 'ann', ids: 'x,y' }).mode, 'q');
  });

  test('ids beyond limit are dropped; repeated ids keys are all used', () => {
    assert.deepEqual(parsePicker({ ids: [a, b], limit: '1' }).ids, [a]);
    assert.deepEqual(parsePicker({ ids: [a, b] }).ids, [a, b.toLowerCase()]);
  });

  test('containsPattern escapes LIKE wildcards', () => {
    assert.equal(containsPattern('ann'), '%ann%');
    assert.equal(containsPattern('50%_a\\b'), '%50\\%\\_a\\\\b%');
  });
});

describe('envelopes', () => {
  test('listEnvelope carries page, limit and total; counts from drivers are accepted', () => {
    const p = parsePagination({ page: '2', limit: '10' });
    assert.deepEqual(listEnvelope([{ id: 1 }], p, 11), { data: [{ id: 1 }], pagination: { page: 2, limit: 10, total: 11 } });
    assert.equal(listEnvelope([], p, '42').pagination.total, 42);
    assert.equal(listEnvelope([], p, 7n).pagination.total, 7);
    assert.throws(() => listEnvelope([], p, 'lots'), TypeError);
    assert.throws(() => listEnvelope([], p, -1), TypeError);
  });

  test('pickerEnvelope has no pagination', () => {
    assert.deepEqual(pickerEnvelope([1, 2]), { data: [1, 2] });
  });
});

describe('SqlWhere', () => {
  test('numbers placeholders in order and wraps each condition', () => {
    const w = new SqlWhere().add('status = ?', 'scheduled').add('a = ? or b = ?', 1, 2);
    assert.equal(w.text, '(status = $1) and (a = $2 or b = $3)');
    assert.deepEqual(w.params, ['scheduled', 1, 2]);
    assert.equal(w.param(50), '$4');
  });

  test('continues the numbering of existing params without mutating them', () => {
    const existing = ['org'];
    const w = new SqlWhere(existing).add('x = ?', 'y');
    assert.equal(w.text, '(x = $2)');
    assert.deepEqual(w.params, ['org', 'y']);
    assert.deepEqual(existing, ['org']);
  });

  test('empty is true; optional skips undefined; dateRange binds inclusive bounds', () => {
    assert.equal(new SqlWhere().text, 'true');
    const range = parseDateRange({ c_after: '2026-03-01' }, 'c');
    const w = new SqlWhere().optional('status = ?', undefined).dateRange('t.created_at', range).optional('n = ?', null);
    assert.equal(w.text, '(t.created_at >= $1) and (n = $2)');
    assert.deepEqual(w.params, ['2026-03-01T00:00:00.000000Z', null]);
  });

  test('placeholder mismatches, $n fragments and undefined values throw', () => {
    assert.throws(() => new SqlWhere().add('a = ? and b = ?', 1), TypeError);
    assert.throws(() => new SqlWhere().add('a = $1', 1), TypeError);
    assert.throws(() => new SqlWhere().add('a = ?', undefined), TypeError);
  });

  test('property: params count equals the highest placeholder and user values never enter the text', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 10 }), (values) => {
        const w = new SqlWhere();
        for (const v of values) w.add('name = ?', v);
        assert.equal(w.params.length, values.length);
        assert.equal(w.text, values.length ? values.map((_, i) => `(name = $${i + 1})`).join(' and ') : 'true');
      }),
    );
  });
});

describe('schemas through the route validator', () => {
  async function build() {
    const app = Fastify();
    installValidators(app);
    installErrorHandling(app);
    const allowed = { name: 'name', created_at: 'created_at' };
    app.get(
      '/list',
      {
        schema: {
          querystring: ListQueryWith({ sort: SortParam(allowed), ...DateRangeQuery('created_at'), status: Type.Optional(Type.String()) }),
          response: { 200: ListOf(Type.Object({ id: Type.String() })) },
        },
      },
      async (req) => {
        const q = req.query as Record<string, unknown>;
        const p = parsePagination(q);
        const s = parseSort(q.sort, allowed);
        const r = parseDateRange(q, 'created_at');
        const f = parseFilters(q, ['status']);
        return { ...listEnvelope([{ id: `${s.sql}|${r.after ?? ''}|${f.status ?? ''}` }], p, 1), extra: 'dropped by the serialiser' };
      },
    );
    app.get(
      '/pick',
      { schema: { querystring: PickerQuery, response: { 200: PickerOf(Type.Object({ id: Type.String() })) } } },
      async (req) => {
        const p = parsePicker(req.query as Record<string, unknown>);
        return pickerEnvelope(p.ids.map((id) => ({ id })));
      },
    );
    return app;
  }

  test('out-of-range and garbage page/limit are clamped, not rejected', async (t) => {
    const app = await build();
    t.after(() => app.close());
    const res = await app.inject('/list?page=abc&limit=99999&sort=-name&created_at_after=2026-03-01&status=open&junk=1');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      data: [{ id: 'name desc, id desc|2026-03-01T00:00:00.000000Z|open' }],
      pagination: { page: 1, limit: 500, total: 1 },
    });
  });

  test('unknown sort and malformed dates answer 422 validation_failed with the field', async (t) => {
    const app = await build();
    t.after(() => app.close());
    const sort = await app.inject('/list?sort=bogus');
    assert.equal(sort.statusCode, 422);
    assert.equal(sort.json().error.code, 'validation_failed');
    assert.equal(sort.json().error.fields.sort, 'unknown sort field "bogus"; allowed: name, created_at');
    const date = await app.inject('/list?created_at_before=2026-02-30');
    assert.equal(date.statusCode, 422);
    assert.deepEqual(Object.keys(date.json().error.fields), ['created_at_before']);
  });

  test('picker answers { data } only', async (t) => {
    const app = await build();
    t.after(() => app.close());
    const res = await app.inject('/pick?ids=0190f5a2-7c4e-7d1a-8b2c-3d4e5f607182,nope&limit=0&q=%20a%20');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { data: [{ id: '0190f5a2-7c4e-7d1a-8b2c-3d4e5f607182' }] });
  });

  test('ListQuery has only optional loose string properties', () => {
    for (const [name, schema] of Object.entries(ListQuery.properties)) {
      assert.equal((schema as { type?: string }).type, 'string', name);
    }
    assert.deepEqual(ListQuery.required ?? [], []);
  });
});
