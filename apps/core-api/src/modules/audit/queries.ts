import { NIL_UUID, type Queryable } from '@clinic/db';
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
  created_at: Date;
}

/** One page of a hash chain in order, with each entry's canonical text (app.audit_canonical). */
export async function chainPage(db: Queryable, isOrg: boolean, chain: string, fromSeq: number, limit: number): Promise<ChainLink[]> {
  const { rows } = await db.query<ChainLink>(
    `select id, chain_seq, prev_hash, row_hash, app.audit_canonical(a) as canonical, created_at from audit_logs a
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

export interface CheckpointRow {
  chain_id: string;
  id: string;
  cut_seq: number;
  last_hash: string;
  older_than: Date;
  removed: number;
  key_id: string;
  signature: string;
  created_at: Date;
}

const CHECKPOINT_COLUMNS = 'chain_id, id, cut_seq, last_hash, older_than, removed, key_id, signature, created_at';
const checkpointOf = (r: CheckpointRow): CheckpointRow => ({ ...r, cut_seq: Number(r.cut_seq), removed: Number(r.removed) });

/** A chain's checkpoints, the furthest cut first (the newest first for one cut: re-signed ones). */
export async function chainCheckpoints(db: Queryable, chain: string): Promise<CheckpointRow[]> {
  const { rows } = await db.query<CheckpointRow>(
    `select ${CHECKPOINT_COLUMNS} from audit_checkpoints where chain_id = $1 order by cut_seq desc, created_at desc, id desc`,
    [chain],
  );
  return rows.map(checkpointOf);
}

/** The instant `months` calendar months before `now`, as the database counts months (like the other sweeps). */
export async function monthsBefore(db: Queryable, now: Date, months: number): Promise<Date> {
  const { rows } = await db.query<{ at: Date }>('select $1::timestamptz - make_interval(months => $2) as at', [now, months]);
  return new Date(rows[0]!.at);
}

/**
 * The chains (organization ids, the nil UUID for the platform) holding an entry created before `before`:
 * one probe of audit_logs_org_created_idx per chain head.
 */
export async function chainsWithEntriesBefore(db: Queryable, before: Date): Promise<string[]> {
  const { rows } = await db.query<{ chain_id: string }>(
    `select h.chain_id from audit_chain_heads h
      where (h.chain_id <> $2 and exists (select 1 from audit_logs a where a.organization_id = h.chain_id and a.created_at < $1))
         or (h.chain_id = $2 and exists (select 1 from audit_logs a where a.organization_id is null and a.created_at < $1))
      order by h.chain_id`,
    [before, NIL_UUID],
  );
  return rows.map((r) => r.chain_id);
}

/** Deletes entries 1..cut of a chain and records the signed checkpoint, atomically (app.audit_prune, 0110). */
export async function pruneChainTo(
  tx: Queryable,
  c: { chain_id: string; cut_seq: number; last_hash: string; older_than: Date; key_id: string; signature: string; created_at: Date },
): Promise<number> {
  const { rows } = await tx.query<{ removed: string }>('select app.audit_prune($1, $2, $3, $4, $5, $6, $7) as removed', [
    c.chain_id,
    c.cut_seq,
    c.last_hash,
    c.older_than,
    c.key_id,
    c.signature,
    c.created_at,
  ]);
  return Number(rows[0]!.removed);
}

/** Each chain's latest checkpoint: the furthest cut, the newest signing of it. */
export async function latestCheckpoints(db: Queryable): Promise<CheckpointRow[]> {
  const { rows } = await db.query<CheckpointRow>(
    `select distinct on (chain_id) ${CHECKPOINT_COLUMNS}
       from audit_checkpoints order by chain_id, cut_seq desc, created_at desc, id desc`,
  );
  return rows.map(checkpointOf);
}

/** A checkpoint signed again under another key: a new row (checkpoints are append-only), nothing removed. */
export async function insertResignedCheckpoint(
  db: Queryable,
  c: Pick<CheckpointRow, 'chain_id' | 'cut_seq' | 'last_hash' | 'older_than' | 'key_id' | 'signature' | 'created_at'>,
): Promise<void> {
  await db.query(
    `insert into audit_checkpoints (chain_id, cut_seq, last_hash, older_than, removed, key_id, signature, created_at)
     values ($1, $2, $3, $4, 0, $5, $6, $7)`,
    [c.chain_id, c.cut_seq, c.last_hash, c.older_than, c.key_id, c.signature, c.created_at],
  );
}
