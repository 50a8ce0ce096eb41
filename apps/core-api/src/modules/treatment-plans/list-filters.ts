import { errors, isUuid } from '@clinic/http-kit';

/**
 * The flat filters of the enrollment and plan-session lists (spec 4.1): uuid keys and `status` as a
 * comma-separated set. Every bad key is named at once in one 422 `validation_failed`; an empty value is no
 * filter.
 */
export function listFilters<K extends string>(
  query: Record<string, unknown>,
  uuidKeys: readonly K[],
  statusValues: readonly string[],
): { ids: Partial<Record<K, string>>; statuses: string[] | undefined } {
  const fields: Record<string, string> = {};
  const ids: Partial<Record<K, string>> = {};
  for (const key of uuidKeys) {
    const v = query[key];
    if (v === undefined || v === '') continue;
    if (!isUuid(v)) fields[key] = 'must be a uuid';
    else ids[key] = v.toLowerCase();
  }
  let statuses: string[] | undefined;
  if (typeof query.status === 'string' && query.status !== '') {
    statuses = query.status.split(',').map((s) => s.trim());
    if (statuses.some((s) => !statusValues.includes(s))) fields.status = `each of ${statusValues.join(', ')}`;
  }
  if (Object.keys(fields).length) throw errors.queryValidation(fields);
  return { ids, statuses };
}
