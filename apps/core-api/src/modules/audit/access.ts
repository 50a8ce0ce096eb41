import type { Queryable } from '@clinic/db';
import {
  errors,
  listEnvelope,
  parseDateRange,
  parsePagination,
  parseSort,
  SqlWhere,
  type DateRange,
  type Pagination,
  type Sort,
  isUuid,
} from '@clinic/http-kit';
import { ACCESS_SORT, MY_ACCESS_SORT } from './schemas.ts';

/*
 * The access log (migration 0064): reads of patient data. The clinic reads its own with
 * audit_log.view_org (GET /v1/audit-logs/access); a patient reads who read its records (GET
 * /v1/me/access-log), without the readers' addresses.
 */

export interface AccessRow {
  id: string;
  organization_id: string;
  occurred_at: Date;
  actor_user_id: string | null;
  patient_ids: string[];
  action: string;
  target_id: string | null;
  action_context: string | null;
  context_id: string | null;
  method: string | null;
  route: string | null;
  request_id: string | null;
  ip: string | null;
}

const COLUMNS = `id, organization_id, occurred_at, actor_user_id, patient_ids, action, target_id, action_context, context_id, method, route,
  request_id, host(ip) as ip`;

function uuidFilter(query: Record<string, unknown>, key: string): string | undefined {
  const v = query[key];
  if (v === undefined || v === '') return undefined;
  if (!isUuid(v)) throw errors.queryValidation({ [key]: 'must be a uuid' });
  return v.toLowerCase();
}

async function page(tx: Queryable, where: SqlWhere, sort: Sort, p: Pagination, columns = COLUMNS) {
  const count = await tx.query<{ total: number }>(
    `select count(*)::int as total from patient_access_log where ${where.text}`,
    where.params,
  );
  const { rows } = await tx.query<AccessRow>(
    `select ${columns} from patient_access_log where ${where.text} order by ${sort.sql} limit ${where.param(p.limit)} offset ${where.param(p.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** GET /v1/audit-logs/access: the organization's reads, filtered by patient, reader, action, context and time. */
export async function listAccess(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const p = parsePagination(query);
  const sort = parseSort(query.sort, ACCESS_SORT, '-occurred_at');
  const occurred: DateRange = parseDateRange(query, 'occurred_at');
  const where = new SqlWhere().add('organization_id = ?', orgId).dateRange('occurred_at', occurred);
  const patient = uuidFilter(query, 'patient_id');
  if (patient) where.add('patient_ids @> array[?::uuid]', patient);
  const actor = uuidFilter(query, 'actor_user_id');
  if (actor) where.add('actor_user_id = ?', actor);
  if (typeof query.action === 'string' && query.action) where.add('action = ?', query.action);
  if (typeof query.action_context === 'string' && query.action_context) where.add('action_context = ?', query.action_context);
  const { rows, total } = await page(tx, where, sort, p);
  return listEnvelope(rows, p, total);
}

/**
 * GET /v1/me/access-log: who read the caller's own patient records (at every clinic, or the one in
 * scope). Row-level security shows a person the rows naming its patient ids (migration 0064).
 */
export async function listMyAccess(tx: Queryable, orgId: string | null, query: Record<string, unknown>) {
  const p = parsePagination(query);
  const sort = parseSort(query.sort, MY_ACCESS_SORT, '-occurred_at');
  const where = new SqlWhere().add('patient_ids && (select app.my_patient_ids())');
  if (orgId) where.add('organization_id = ?', orgId);
  const { rows, total } = await page(
    tx,
    where,
    sort,
    p,
    'id, organization_id, occurred_at, actor_user_id, patient_ids, action, target_id, action_context, context_id, method, route',
  );
  return listEnvelope(rows, p, total);
}
