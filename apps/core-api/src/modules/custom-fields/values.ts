import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { valueProblem, type EntityType } from './definition.ts';
import { latestPublished, type PublishedField } from './queries.ts';

/**
 * Custom field values of records (patients, specialists): stored keyed by custom field id, so a key
 * renamed in a later version keeps its value; read and written by the key of the latest published
 * version (spec 2.10: drafts are never used).
 */
export type StoredValues = Record<string, unknown>;

export const publishedFieldsOf = (tx: Queryable, orgId: string, entityType: EntityType) => latestPublished(tx, orgId, { entityType });

/** `{ key: value }` of the live published fields; private ones left out when `hidePrivate`. */
export function presentValues(stored: StoredValues, fields: PublishedField[], hidePrivate: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (hidePrivate && f.private) continue;
    if (Object.hasOwn(stored, f.custom_field_id)) out[f.key] = stored[f.custom_field_id];
  }
  return out;
}

/**
 * The stored map after a full replacement by `input` (`{ key: value }`). Keys must name live published
 * fields; values must fit their type (null clears). With `hidePrivate` (a patient caller) private
 * fields are unknown keys, and their stored values are kept as they are.
 */
export function replaceValues(
  stored: StoredValues,
  input: Record<string, unknown>,
  fields: PublishedField[],
  hidePrivate: boolean,
): StoredValues {
  const byKey = new Map(fields.filter((f) => !(hidePrivate && f.private)).map((f) => [f.key, f]));
  const problems: Record<string, string> = {};
  const out: StoredValues = {};
  if (hidePrivate)
    for (const f of fields) if (f.private && Object.hasOwn(stored, f.custom_field_id)) out[f.custom_field_id] = stored[f.custom_field_id];
  for (const [key, value] of Object.entries(input)) {
    const f = byKey.get(key);
    if (!f) {
      problems[`custom_fields.${key}`] = 'is not a published custom field of this record type';
      continue;
    }
    const why = valueProblem(f, value);
    if (why) problems[`custom_fields.${key}`] = why;
    else if (value !== null) out[f.custom_field_id] = value;
  }
  if (Object.keys(problems).length) throw errors.validation(problems);
  return out;
}
