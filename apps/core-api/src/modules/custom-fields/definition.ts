import { errors, isIsoDate } from '@clinic/http-kit';

export const FIELD_TYPES = ['text', 'long_text', 'number', 'date', 'boolean', 'select', 'multi_select'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export const ENTITY_TYPES = ['patient', 'specialist', 'form'] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

/** What a version snapshot holds (spec 4.8 `fields`), plus `private` (spec 5.8). */
export interface FieldDefinition {
  key: string;
  label: string;
  field_type: FieldType;
  options: string[];
  private: boolean;
}

const KEY = /^[a-z][a-z0-9_]{0,62}$/;
const CHOICE_TYPES: readonly string[] = ['select', 'multi_select'];
const MAX_OPTIONS = 200;

/**
 * Checks a whole definition (after a PATCH is merged into the current one): the key's shape, a label,
 * and options exactly for the choice types (non-empty, unique, trimmed, 1 to 200 characters each).
 * Every problem is collected into one 400 validation_error.
 */
export function checkDefinition(d: FieldDefinition): FieldDefinition {
  const fields: Record<string, string> = {};
  if (!KEY.test(d.key)) fields.key = 'must start with a lower-case letter and hold only a-z, 0-9 and _ (at most 63 characters)';
  const label = d.label.trim();
  if (!label) fields.label = 'must not be blank';
  const options = d.options.map((o) => o.trim());
  if (CHOICE_TYPES.includes(d.field_type)) {
    if (!options.length) fields.options = `a ${d.field_type} field needs at least one option`;
    else if (options.length > MAX_OPTIONS) fields.options = `at most ${MAX_OPTIONS} options`;
    else if (options.some((o) => o.length < 1 || o.length > 200)) fields.options = 'each option must be 1 to 200 characters';
    else if (new Set(options).size !== options.length) fields.options = 'options must be unique';
  } else if (options.length) {
    fields.options = `a ${d.field_type} field has no options`;
  }
  if (Object.keys(fields).length) throw errors.validation(fields);
  return { ...d, label, options };
}

/** Why `value` does not fit the field, or null when it does. null always fits: it clears the value. */
export function valueProblem(def: Pick<FieldDefinition, 'field_type' | 'options'>, value: unknown): string | null {
  if (value === null) return null;
  switch (def.field_type) {
    case 'text':
      return typeof value === 'string' && value.length <= 1000 ? null : 'must be a text of at most 1000 characters';
    case 'long_text':
      return typeof value === 'string' && value.length <= 20000 ? null : 'must be a text of at most 20000 characters';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number';
    case 'date':
      return typeof value === 'string' && isIsoDate(value) ? null : 'must be a date as YYYY-MM-DD';
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'select':
      return typeof value === 'string' && def.options.includes(value) ? null : `must be one of: ${def.options.join(', ')}`;
    case 'multi_select':
      return Array.isArray(value) &&
        value.every((v) => typeof v === 'string' && def.options.includes(v)) &&
        new Set(value).size === value.length
        ? null
        : `must be a list of distinct values from: ${def.options.join(', ')}`;
    default:
      return 'has an unknown field type';
  }
}

/** The snapshot stored for a version: exactly the definition's fields, in a fixed order. */
export const snapshotOf = (d: FieldDefinition): FieldDefinition => ({
  key: d.key,
  label: d.label,
  field_type: d.field_type,
  options: d.options,
  private: d.private,
});
