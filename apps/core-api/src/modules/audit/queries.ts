import type { Queryable } from '@clinic/db';
import { SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export interface AuditRow {
  id: string;
  organization_id: string | null;
  actor_user_id: string | null;
  action: string;
  entity_type: string;
  entity_id: string | null;
  action_context: string | null;
  break_glass_id: string | null;
  data: Record<string, unknown>;
  ip: string | null;
  created_at: Date;
  chain_seq: number;
  row_hash: string;
}

export const AUDIT_COLUMNS =
  'id, organization_id, actor_user_id, action, entity_type, entity_id, action_context, break_glass_id, data, host(ip) as ip, created_at, chain_seq, row_hash';

export interface AuditFilter {
  /** The organization whose trail is read; null reads the platform-scope entries. */
  orgId: string | null;
  actor_user_id?: string;
  action?: string;
  entity_type?: string;
  entity_id?: string;
  action_context?: string;
  break_glass_id?: string;
  created: DateRange;
}

/** The conditions of a filter. Every statement names the scope: superadmins run past RLS. */
export function auditWhere(f: AuditFilter): SqlWhere {
  const w = new SqlWhere();
  if (f.orgId) w.add('organization_id = ?', f.orgId);
  else w.add('organization_id is null');
  return w
    .optional('actor_user_id = ?', f.actor_user_id)
    .optional('action = ?', f.action)
    .optional('entity_type = ?', f.entity_type)
    .optional('entity_id = ?', f.entity_id)
    .optional('action_context = ?', f.action_context)
    .optional('break_glass_id = ?', f.break_glass_id)
    .dateRange('created_at', f.created);
}

export async function listAudit(tx: Queryable, f: AuditFilter, sort: Sort, page: Pagination): Promise<{ rows: AuditRow[]; total: number }> {
  const w = auditWhere(f);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from audit_logs where ${w.text}`, w.params);
  const { rows } = await tx.query<AuditRow>(
    `select ${AUDIT_COLUMNS} from audit_logs where ${w.text} order by ${sort.sql} limit ${w.param(page.limit)} offset ${w.param(page.offset)}`,
    w.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export async function findAudit(tx: Queryable, orgId: string | null, id: string): Promise<AuditRow | null> {
  const { rows } = await tx.query<AuditRow>(
    `select ${AUDIT_COLUMNS} from audit_logs where id = $1 and ${orgId ? 'organization_id = $2' : 'organization_id is null'}`,
    orgId ? [id, orgId] : [id],
  );
  return rows[0] ?? null;
}

/** The export's order: newest first, total (the id breaks ties), served by audit_logs_org_created_id_idx. */
export function exportQuery(f: AuditFilter): { text: string; params: unknown[] } {
  const w = auditWhere(f);
  return { text: `select ${AUDIT_COLUMNS} from audit_logs where ${w.text} order by created_at desc, id desc`, params: w.params };
}

/** One keyset page of the export: the rows strictly after `after` in export order. */
export async function exportPage(
  tx: Queryable,
  f: AuditFilter,
  after: { created_at: Date; id: string } | null,
  limit: number,
): Promise<AuditRow[]> {
  const w = auditWhere(f);
  if (after) w.add('(created_at, id) < (?, ?)', after.created_at, after.id);
  const { rows } = await tx.query<AuditRow>(
    `select ${AUDIT_COLUMNS} from audit_logs where ${w.text} order by created_at desc, id desc limit ${w.param(limit)}`,
    w.params,
  );
  return rows;
}

export interface ChainLink {
  id: string;
  chain_seq: number;
  prev_hash: string;
  row_hash: string;
  canonical: string;
}

/** One page of a hash chain in order, with each entry's canonical text (app.audit_canonical). */
export async function chainPage(db: Queryable, isOrg: boolean, chain: string, fromSeq: number, limit: number): Promise<ChainLink[]> {
  const { rows } = await db.query<ChainLink>(
    `select id, chain_seq, prev_hash, row_hash, app.audit_canonical(a) as canonical from audit_logs a
     where ${isOrg ? 'organization_id = $1' : 'organization_id is null and $1::uuid is not null'} and chain_seq >= $2 order by chain_seq limit $3`,
    [chain, fromSeq, limit],
  );
  return rows;
}

/** Where a chain's head says it ends. */
export async function chainHead(db: Queryable, chain: string): Promise<{ last_seq: number; last_hash: string } | null> {
  const { rows } = await db.query<{ last_seq: number; last_hash: string }>(
    'select last_seq, last_hash from audit_chain_heads where chain_id = $1',
    [chain],
  );
  return rows[0] ?? null;
}
