/**
 * The segment criteria language (docs/automations.md) and its compiler to parameterised SQL.
 *
 *   node := { and: node[] } | { or: node[] } | { not: node } | leaf
 *   leaf := { field, op, value? }          (value omitted for is_set / is_not_set / active / none ...)
 *
 * Fields come from a catalog: fixed patient columns, the organization's published custom fields by key
 * (typed by their field type), appointment history, treatment plan enrollments, consents and tags. Every
 * identifier in the SQL comes from the catalog in this file; every value the caller gives, and every custom
 * field id, is a bound parameter with an explicit cast. No text of the request is ever part of the statement.
 */

export type FieldType = 'text' | 'number' | 'date' | 'boolean' | 'select' | 'multi_select';
import { isUuid, isIsoDate } from '@clinic/http-kit';

/** A custom field of the catalog (the latest published version of a live field). */
export interface CatalogField {
  key: string;
  custom_field_id: string;
  field_type: string;
  options: unknown;
}

/** Patient columns a criterion may name, with their type and the SQL expression over `p` (patients). */
const PATIENT_FIELDS: Record<string, { type: FieldType; sql: string }> = {
  'patient.first_name': { type: 'text', sql: 'p.first_name' },
  'patient.last_name': { type: 'text', sql: 'p.last_name' },
  'patient.email': { type: 'text', sql: 'p.user_email' },
  'patient.phone': { type: 'text', sql: 'p.phone' },
  'patient.date_of_birth': { type: 'date', sql: 'p.date_of_birth' },
  'patient.age': { type: 'number', sql: 'extract(year from age(current_date, p.date_of_birth))' },
  'patient.sex': { type: 'select', sql: 'p.sex' },
  'patient.city': { type: 'text', sql: 'p.city' },
  'patient.region': { type: 'text', sql: 'p.region' },
  'patient.postal_code': { type: 'text', sql: 'p.postal_code' },
  'patient.country': { type: 'text', sql: 'p.country' },
  'patient.preferred_language': { type: 'text', sql: 'p.preferred_language' },
  'patient.created_at': { type: 'date', sql: "(p.created_at at time zone 'UTC')::date" },
};

const OPS: Record<FieldType, readonly string[]> = {
  text: ['eq', 'ne', 'in', 'contains', 'starts_with', 'is_set', 'is_not_set'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'between', 'is_set', 'is_not_set'],
  date: ['eq', 'before', 'after', 'between', 'within_last_days', 'more_than_days_ago', 'is_set', 'is_not_set'],
  boolean: ['eq', 'is_set', 'is_not_set'],
  select: ['eq', 'ne', 'in', 'is_set', 'is_not_set'],
  multi_select: ['contains_any', 'contains_all', 'is_set', 'is_not_set'],
};

const ENROLLMENT_STATUSES = ['active', 'paused', 'cancelled'];
export const APPOINTMENT_STATUSES = ['scheduled', 'confirmed', 'checked_in', 'in_progress', 'done', 'cancelled', 'no_show', 'rescheduled'];
const LIMITS = { depth: 6, leaves: 50, list: 200 };

/** The field catalog as GET /v1/segment-fields shows it. */
export function fieldCatalog(custom: CatalogField[]) {
  return [
    ...Object.entries(PATIENT_FIELDS).map(([field, f]) => ({ field, type: f.type, ops: [...OPS[f.type]] })),
    ...custom.map((c) => {
      const type = customType(c.field_type);
      return { field: `custom.${c.key}`, type, ops: [...OPS[type]] };
    }),
    {
      field: 'appointments',
      type: 'history',
      ops: ['exists', 'none', 'count_gte', 'count_lte'],
      value: '{ service_ids?, specialist_ids?, statuses?, within_last_days?, within_next_days? } as `where`; count for count_*',
    },
    {
      field: 'enrollments',
      type: 'history',
      ops: ['exists', 'none'],
      value: '{ treatment_plan_ids?, statuses? (active, paused, cancelled) } as `where`',
    },
    { field: 'consent', type: 'purpose', ops: ['active', 'not_active'], value: 'a consent purpose code, such as marketing_email' },
    { field: 'tag', type: 'tag', ops: ['has', 'has_not'], value: 'a tag' },
  ];
}

function customType(fieldType: string): FieldType {
  if (fieldType === 'long_text') return 'text';
  return (['text', 'number', 'date', 'boolean', 'select', 'multi_select'] as const).find((t) => t === fieldType) ?? 'text';
}

export class CriteriaError extends Error {
  constructor(readonly fields: Record<string, string>) {
    super('invalid criteria');
  }
}

export interface Compiled {
  /** A boolean SQL expression over `p` (patients); `$n` placeholders from `firstParam` on. */
  sql: string;
  params: unknown[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks a criteria tree against the catalog and compiles it. `firstParam` is the number of the first
 * placeholder (the caller's own parameters come before). Throws CriteriaError with one entry per problem,
 * named by the node's path (`criteria.and.1.value`).
 */
export function compileCriteria(criteria: unknown, custom: CatalogField[], firstParam: number, prefix = 'criteria'): Compiled {
  const params: unknown[] = [];
  const problems: Record<string, string> = {};
  const byKey = new Map(custom.map((c) => [c.key, c]));
  let leaves = 0;
  const bind = (v: unknown, cast: string) => {
    params.push(v);
    return `$${firstParam + params.length - 1}::${cast}`;
  };

  function node(n: unknown, path: string, depth: number): string {
    if (depth > LIMITS.depth) {
      problems[path] = `nested deeper than ${LIMITS.depth} levels`;
      return 'false';
    }
    if (!isObj(n)) {
      problems[path] = 'must be an object: { and: [...] }, { or: [...] }, { not: {...} } or { field, op, value }';
      return 'false';
    }
    const keys = Object.keys(n);
    if (keys.length === 1 && (keys[0] === 'and' || keys[0] === 'or')) {
      const list = n[keys[0]];
      if (!Array.isArray(list) || list.length === 0 || list.length > LIMITS.leaves) {
        problems[`${path}.${keys[0]}`] = `must be a list of 1 to ${LIMITS.leaves} conditions`;
        return 'false';
      }
      const parts = list.map((c, i) => node(c, `${path}.${keys[0]}.${i}`, depth + 1));
      return `(${parts.join(keys[0] === 'and' ? ' and ' : ' or ')})`;
    }
    if (keys.length === 1 && keys[0] === 'not') return `(not coalesce(${node(n.not, `${path}.not`, depth + 1)}, false))`;
    if (++leaves > LIMITS.leaves) {
      problems[path] = `at most ${LIMITS.leaves} conditions`;
      return 'false';
    }
    return leaf(n, path);
  }

  function leaf(n: Record<string, unknown>, path: string): string {
    const extra = Object.keys(n).filter((k) => !['field', 'op', 'value', 'where'].includes(k));
    if (extra.length) {
      problems[path] = `unknown keys: ${extra.slice(0, 5).join(', ')}`;
      return 'false';
    }
    const { field, op } = n;
    if (typeof field !== 'string') {
      problems[`${path}.field`] = 'required: a field of the catalog (GET /v1/segment-fields)';
      return 'false';
    }
    if (typeof op !== 'string') {
      problems[`${path}.op`] = 'required';
      return 'false';
    }
    if (field === 'appointments') return appointments(op, n, path);
    if (field === 'enrollments') return enrollments(op, n, path);
    if (field === 'consent') {
      if (op !== 'active' && op !== 'not_active') return badOp(path, op, ['active', 'not_active']);
      if (typeof n.value !== 'string' || !/^[a-z][a-z0-9_]{0,63}$/.test(n.value)) {
        problems[`${path}.value`] = 'a consent purpose code';
        return 'false';
      }
      const has = `exists (select 1 from consent_ledger c where c.organization_id = p.organization_id and c.patient_profile_id = p.user_id
        and c.purpose_code = ${bind(n.value, 'text')} and c.withdrawn_at is null)`;
      return op === 'active' ? has : `not ${has}`;
    }
    if (field === 'tag') {
      if (op !== 'has' && op !== 'has_not') return badOp(path, op, ['has', 'has_not']);
      if (typeof n.value !== 'string' || !/^[a-z0-9][a-z0-9_.-]{0,62}$/.test(n.value)) {
        problems[`${path}.value`] = 'a tag: lower-case letters, digits, _ . -';
        return 'false';
      }
      const has = `exists (select 1 from patient_tags t where t.organization_id = p.organization_id and t.patient_id = p.id and t.tag = ${bind(n.value, 'text')})`;
      return op === 'has' ? has : `not ${has}`;
    }
    let type: FieldType;
    let expr: string;
    let raw: string | null = null;
    const fixed = Object.hasOwn(PATIENT_FIELDS, field) ? PATIENT_FIELDS[field]! : null;
    if (fixed) {
      type = fixed.type;
      expr = fixed.sql;
    } else if (field.startsWith('custom.') && byKey.has(field.slice(7))) {
      const c = byKey.get(field.slice(7))!;
      type = customType(c.field_type);
      const id = bind(c.custom_field_id, 'text');
      raw = `(p.custom_field_values -> ${id})`;
      // Typed reads that never fail on a value of another shape (a field whose type changed in a later version).
      expr =
        type === 'number'
          ? `(case when jsonb_typeof(${raw}) = 'number' then (${raw} #>> '{}')::numeric end)`
          : type === 'boolean'
            ? `(case when jsonb_typeof(${raw}) = 'boolean' then (${raw} #>> '{}')::boolean end)`
            : type === 'date'
              ? `(case when jsonb_typeof(${raw}) = 'string' and (${raw} #>> '{}') ~ '^\\d{4}-\\d{2}-\\d{2}$' then (${raw} #>> '{}')::date end)`
              : type === 'multi_select'
                ? `(case when jsonb_typeof(${raw}) = 'array' then ${raw} end)`
                : `(case when jsonb_typeof(${raw}) = 'string' then ${raw} #>> '{}' end)`;
    } else {
      problems[`${path}.field`] = field.startsWith('custom.')
        ? `no published custom field of patients has the key "${field.slice(7, 70)}"`
        : `unknown field "${field.slice(0, 70)}"; see GET /v1/segment-fields`;
      return 'false';
    }
    if (!OPS[type].includes(op)) return badOp(path, op, OPS[type]);
    if (op === 'is_set') return `(${expr} is not null)`;
    if (op === 'is_not_set') return `(${expr} is null)`;
    return typed(type, op, expr, n.value, `${path}.value`);
  }

  function badOp(path: string, op: string, allowed: readonly string[]): string {
    problems[`${path}.op`] = `"${op.slice(0, 40)}" is not an operator of this field; allowed: ${allowed.join(', ')}`;
    return 'false';
  }

  function typed(type: FieldType, op: string, expr: string, value: unknown, at: string): string {
    const bad = (why: string) => {
      problems[at] = why;
      return 'false';
    };
    const one = (check: (v: unknown) => boolean, cast: string, why: string) => (check(value) ? bind(value, cast) : null) ?? bad(why);
    const isNum = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
    const isText = (v: unknown) => typeof v === 'string' && v.length <= 500;
    const list = (check: (v: unknown) => boolean, cast: string, why: string) =>
      Array.isArray(value) && value.length >= 1 && value.length <= LIMITS.list && value.every(check) ? bind(value, `${cast}[]`) : bad(why);
    switch (type) {
      case 'number': {
        if (op === 'between') {
          if (!Array.isArray(value) || value.length !== 2 || !value.every(isNum)) return bad('[low, high], two numbers');
          return `(${expr} between ${bind(value[0], 'numeric')} and ${bind(value[1], 'numeric')})`;
        }
        const sym = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }[op]!;
        return `(${expr} ${sym} ${one(isNum, 'numeric', 'a number')})`;
      }
      case 'date': {
        if (op === 'between') {
          if (!Array.isArray(value) || value.length !== 2 || !value.every(isIsoDate)) return bad('[from, to], two dates YYYY-MM-DD');
          return `(${expr} between ${bind(value[0], 'date')} and ${bind(value[1], 'date')})`;
        }
        if (op === 'within_last_days' || op === 'more_than_days_ago') {
          if (!(Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 36_500))
            return bad('a whole number of days, 0 to 36500');
          const since = `(current_date - ${bind(value, 'integer')})`;
          return op === 'within_last_days' ? `(${expr} >= ${since} and ${expr} <= current_date)` : `(${expr} < ${since})`;
        }
        const sym = { eq: '=', before: '<', after: '>' }[op]!;
        return `(${expr} ${sym} ${one(isIsoDate, 'date', 'a date YYYY-MM-DD')})`;
      }
      case 'boolean':
        return `(${expr} = ${one((v) => typeof v === 'boolean', 'boolean', 'true or false')})`;
      case 'multi_select': {
        const arr = list(isText, 'text', 'a list of option values');
        return op === 'contains_any' ? `(${expr} ?| ${arr})` : `(${expr} ?& ${arr})`;
      }
      default: {
        // text and select
        if (op === 'in') return `(${expr} = any(${list(isText, 'text', 'a list of values')}))`;
        if (op === 'contains' || op === 'starts_with') {
          // The pattern's own wildcards are escaped, so the caller's text matches literally.
          const v = one((x) => typeof x === 'string' && x.length >= 1 && x.length <= 200, 'text', 'text of 1 to 200 characters');
          const pattern = `replace(replace(replace(${v}, '\\', '\\\\'), '%', '\\%'), '_', '\\_')`;
          return op === 'contains' ? `(${expr} ilike '%' || ${pattern} || '%')` : `(${expr} ilike ${pattern} || '%')`;
        }
        const sym = op === 'eq' ? '=' : '<>';
        return `(${expr} ${sym} ${one(isText, 'text', 'text (at most 500 characters)')})`;
      }
    }
  }

  /** Treatment plan enrollments: in any plan, or in the given ones, in the given states. */
  function enrollments(op: string, n: Record<string, unknown>, path: string): string {
    if (op !== 'exists' && op !== 'none') return badOp(path, op, ['exists', 'none']);
    const where = n.where ?? {};
    if (!isObj(where)) {
      problems[`${path}.where`] = 'an object: treatment_plan_ids, statuses';
      return 'false';
    }
    const conds: string[] = ['e.organization_id = p.organization_id', 'e.patient_id = p.id'];
    for (const [k, v] of Object.entries(where)) {
      const at = `${path}.where.${k}`;
      if (k === 'treatment_plan_ids') {
        if (!Array.isArray(v) || !v.length || v.length > LIMITS.list || !v.every((x) => isUuid(x))) {
          problems[at] = 'a list of ids';
          continue;
        }
        conds.push(
          `e.treatment_plan_id = any(${bind(
            v.map((x) => (x as string).toLowerCase()),
            'uuid[]',
          )})`,
        );
      } else if (k === 'statuses') {
        if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === 'string' && ENROLLMENT_STATUSES.includes(x))) {
          problems[at] = `a list of statuses: ${ENROLLMENT_STATUSES.join(', ')}`;
          continue;
        }
        conds.push(`e.status = any(${bind(v, 'text[]')})`);
      } else problems[at] = 'unknown; use treatment_plan_ids, statuses';
    }
    const has = `exists (select 1 from treatment_enrollments e where ${conds.join(' and ')})`;
    return op === 'exists' ? has : `not ${has}`;
  }

  function appointments(op: string, n: Record<string, unknown>, path: string): string {
    const allowed = ['exists', 'none', 'count_gte', 'count_lte'];
    if (!allowed.includes(op)) return badOp(path, op, allowed);
    const where = n.where ?? {};
    if (!isObj(where)) {
      problems[`${path}.where`] = 'an object: service_ids, specialist_ids, statuses, within_last_days, within_next_days';
      return 'false';
    }
    const conds: string[] = ['a.organization_id = p.organization_id', 'a.patient_id = p.id'];
    for (const [k, v] of Object.entries(where)) {
      const at = `${path}.where.${k}`;
      if (k === 'service_ids' || k === 'specialist_ids') {
        if (!Array.isArray(v) || !v.length || v.length > LIMITS.list || !v.every((x) => isUuid(x))) {
          problems[at] = 'a list of ids';
          continue;
        }
        conds.push(
          `a.${k === 'service_ids' ? 'service_id' : 'specialist_id'} = any(${bind(
            v.map((x) => (x as string).toLowerCase()),
            'uuid[]',
          )})`,
        );
      } else if (k === 'statuses') {
        if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === 'string' && APPOINTMENT_STATUSES.includes(x))) {
          problems[at] = `a list of statuses: ${APPOINTMENT_STATUSES.join(', ')}`;
          continue;
        }
        conds.push(`a.status = any(${bind(v, 'text[]')})`);
      } else if (k === 'within_last_days' || k === 'within_next_days') {
        if (!(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 36_500)) {
          problems[at] = 'a whole number of days, 1 to 36500';
          continue;
        }
        const days = bind(v, 'integer');
        conds.push(
          k === 'within_last_days'
            ? `a.starts_at >= now() - make_interval(days => ${days}) and a.starts_at <= now()`
            : `a.starts_at > now() and a.starts_at <= now() + make_interval(days => ${days})`,
        );
      } else problems[at] = 'unknown; use service_ids, specialist_ids, statuses, within_last_days, within_next_days';
    }
    const from = `from appointments a where ${conds.join(' and ')}`;
    if (op === 'exists') return `exists (select 1 ${from})`;
    if (op === 'none') return `not exists (select 1 ${from})`;
    if (!(Number.isInteger(n.value) && (n.value as number) >= 0 && (n.value as number) <= 100_000)) {
      problems[`${path}.value`] = 'a whole number';
      return 'false';
    }
    return `((select count(*) ${from}) ${op === 'count_gte' ? '>=' : '<='} ${bind(n.value, 'integer')})`;
  }

  const sql = node(criteria, prefix, 1);
  if (Object.keys(problems).length) throw new CriteriaError(problems);
  return { sql, params };
}
