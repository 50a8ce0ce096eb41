import type { Queryable } from '@clinic/db';
import { type Pagination, type Sort, SqlWhere } from '@clinic/http-kit';
import { pageOf } from '../page.ts';
import { markDeleted, type SoftDeletedTable } from '../deleted.ts';

/**
 * The live row of a versioned resource whose content is a few plain columns (form templates, PDF
 * templates): `(organization_id, id, <content columns>, version, published, published_at, deleted_at)`.
 * The version table beside it is versionQueries'.
 */
export interface RowTable<C> {
  table: SoftDeletedTable;
  /** The select list of a row, content columns under their content names (`content as layout`). */
  columns: string;
  /** The content columns in the order they are written, and how to write each one. */
  content: { column: string; cast?: 'jsonb'; value: (c: C) => unknown }[];
}

export interface RowState {
  version: number;
  published: boolean;
  /** Stamp published_at now (a publish), else keep it. */
  publishedNow: boolean;
}

export interface RowQueries<C, R> {
  /** A new resource: version 1 and published, or a draft (version 0) where the table allows one. */
  insert(tx: Queryable, orgId: string, c: C, opts?: { draft?: boolean }): Promise<R>;
  find(tx: Queryable, orgId: string, id: string, opts?: { forUpdate?: boolean }): Promise<R | null>;
  save(tx: Queryable, orgId: string, id: string, c: C, state: RowState): Promise<R>;
  /** Marks the live row deleted; the row as it was, or null when there is none. */
  softDelete(tx: Queryable, orgId: string, id: string): Promise<R | null>;
  /**
   * One page of the organization's live rows (and deleted ones with includeDeleted, which the read
   * policy shows to data.view_deleted only); `filter` adds the resource's own conditions.
   */
  list(
    tx: Queryable,
    orgId: string,
    filter: (where: SqlWhere) => SqlWhere,
    sort: Sort,
    page: Pagination,
    includeDeleted?: boolean,
  ): Promise<{ rows: R[]; total: number }>;
}

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.
export function rowQueries<C, R>(t: RowTable<C>): RowQueries<C, R> {
  const names = t.content.map((c) => c.column);
  const values = (c: C) => t.content.map((col) => col.value(c));
  const placeholder = (i: number, first: number) => `$${first + i}${t.content[i]!.cast ? `::${t.content[i]!.cast}` : ''}`;
  const n = t.content.length;
  const find: RowQueries<C, R>['find'] = async (tx, orgId, id, opts = {}) => {
    const { rows } = await tx.query<R>(
      `select ${t.columns} from ${t.table} where organization_id = $1 and id = $2 and deleted_at is null${opts.forUpdate ? ' for update' : ''}`,
      [orgId, id],
    );
    return rows[0] ?? null;
  };
  return {
    async insert(tx, orgId, c, opts = {}) {
      const draft = opts.draft ?? false;
      const { rows } = await tx.query<R>(
        `insert into ${t.table} (organization_id, ${names.join(', ')}, version, published)
         values ($1, ${names.map((_, i) => placeholder(i, 2)).join(', ')}, $${n + 2}, $${n + 3}) returning ${t.columns}`,
        [orgId, ...values(c), draft ? 0 : 1, !draft],
      );
      return rows[0]!;
    },
    find,
    async save(tx, orgId, id, c, state) {
      const sets = names.map((name, i) => `${name} = ${placeholder(i, 3)}`).join(', ');
      const { rows } = await tx.query<R>(
        `update ${t.table} set ${sets}, version = $${n + 3}, published = $${n + 4},
           published_at = case when $${n + 5} then now() else published_at end
         where organization_id = $1 and id = $2 returning ${t.columns}`,
        [orgId, id, ...values(c), state.version, state.published, state.publishedNow],
      );
      return rows[0]!;
    },
    async softDelete(tx, orgId, id) {
      // Read, then mark: after the mark the read policy hides the row from a caller without data.view_deleted.
      const row = await find(tx, orgId, id, { forUpdate: true });
      if (!row) return null;
      await markDeleted(tx, t.table, orgId, id);
      return row;
    },
    list(tx, orgId, filter, sort, page, includeDeleted = false) {
      const base = new SqlWhere().add('organization_id = ?', orgId);
      const where = filter(includeDeleted ? base : base.add('deleted_at is null'));
      return pageOf<R>(tx, `select ${t.columns}`, `from ${t.table} where ${where.text}`, where, sort, page);
    },
  };
}
