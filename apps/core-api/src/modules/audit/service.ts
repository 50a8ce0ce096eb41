import type { Database, Queryable, RequestScope } from '@clinic/db';
import {
  errors,
  listEnvelope,
  parseDateRange,
  parseFilters,
  parsePagination,
  parseSort,
  type ListEnvelope,
  isUuid,
} from '@clinic/http-kit';
import { exportPage, exportQuery, findAudit, listAudit, type AuditFilter, type AuditRow } from './queries.ts';
import { AUDIT_SORT } from './schemas.ts';

const FILTER_KEYS = ['actor_user_id', 'action', 'entity_type', 'entity_id', 'action_context', 'break_glass_id'] as const;
const UUID_KEYS = new Set(['actor_user_id', 'entity_id', 'break_glass_id']);

/** The filters of spec 4.1 for one trail; a malformed uuid filter is 422 naming the key (it could never match). */
export function parseAuditFilter(orgId: string | null, query: Record<string, unknown>): AuditFilter {
  const given = parseFilters(query, FILTER_KEYS);
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(given)) if (UUID_KEYS.has(k) && !isUuid(v)) fields[k] = 'must be a uuid';
  let created: ReturnType<typeof parseDateRange> | undefined;
  try {
    created = parseDateRange(query, 'created_at');
  } catch (err) {
    // Report every bad key at once.
    Object.assign(fields, (err as { fields?: Record<string, string> }).fields ?? {});
  }
  if (Object.keys(fields).length) throw errors.queryValidation(fields);
  return { orgId, ...given, created: created! };
}

export async function listAuditLogs(tx: Queryable, orgId: string | null, query: Record<string, unknown>): Promise<ListEnvelope<AuditRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, AUDIT_SORT);
  const filter = parseAuditFilter(orgId, query);
  const { rows, total } = await listAudit(tx, filter, sort, page);
  return listEnvelope(rows, page, total);
}

export async function getAuditLog(tx: Queryable, orgId: string | null, id: string): Promise<AuditRow> {
  const row = await findAudit(tx, orgId, id);
  if (!row) throw errors.notFound('No audit entry with this id in this scope.');
  return row;
}

const PAGE = 1000;

/**
 * Every matching row, newest first, without holding them all: on PostgreSQL one cursor in one
 * read-only transaction (a consistent snapshot); on PGlite keyset pages, each its own short
 * transaction, so a slow reader never holds the single connection.
 */
export async function* exportAuditRows(db: Database, scope: RequestScope, filter: AuditFilter): AsyncGenerator<AuditRow> {
  if (db.stream) {
    const q = exportQuery(filter);
    yield* db.stream<AuditRow>(scope, q.text, q.params, { batchSize: PAGE });
    return;
  }
  let after: { created_at: Date; id: string } | null = null;
  for (;;) {
    const cursor: { created_at: Date; id: string } | null = after;
    const rows: AuditRow[] = await db.withScope(scope, (tx) => exportPage(tx, filter, cursor, PAGE));
    yield* rows;
    if (rows.length < PAGE) return;
    const last: AuditRow = rows[rows.length - 1]!;
    after = { created_at: last.created_at, id: last.id };
  }
}

export const CSV_COLUMNS = [
  'id',
  'created_at',
  'organization_id',
  'actor_user_id',
  'action',
  'entity_type',
  'entity_id',
  'action_context',
  'break_glass_id',
  'ip',
  'data',
  'chain_seq',
  'row_hash',
] as const;

/** One CSV record; `data` as compact JSON. */
export function csvRecord(r: AuditRow): unknown[] {
  return [
    r.id,
    new Date(r.created_at).toISOString(),
    r.organization_id,
    r.actor_user_id,
    r.action,
    r.entity_type,
    r.entity_id,
    r.action_context,
    r.break_glass_id,
    r.ip,
    JSON.stringify(r.data),
    r.chain_seq,
    r.row_hash,
  ];
}
