import type { Queryable } from '@clinic/db';
import type { Pagination } from '@clinic/http-kit';

/**
 * The append-only version table of a versioned resource (custom_field_versions, form_template_versions,
 * ...): `(organization_id, <parent>, version, <snapshot>, published_at, published_by_principal_id)`.
 * Reads return the snapshot under the resource's own name (`fields`, `template`).
 */
export interface VersionTable<K extends string> {
  table: string;
  /** The column naming the resource: custom_field_id. */
  parent: string;
  /** The jsonb snapshot column. */
  snapshot: string;
  /** The snapshot's name in rows and responses. */
  as: K;
}

export type VersionRow<K extends string, S> = { version: number; published_at: Date } & { [k in K]: S };

export interface VersionQueries<K extends string, S> {
  insert(
    tx: Queryable,
    orgId: string,
    v: { id: string; version: number; published_at: Date },
    snapshot: S,
    principalId: string,
  ): Promise<void>;
  list(tx: Queryable, orgId: string, id: string, page: Pagination, orderSql: string): Promise<{ rows: VersionRow<K, S>[]; total: number }>;
  /** One version, or the latest when `version` is null. */
  find(tx: Queryable, orgId: string, id: string, version: number | null): Promise<VersionRow<K, S> | null>;
}

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.
export function versionQueries<K extends string, S>(t: VersionTable<K>): VersionQueries<K, S> {
  const select = `select version, published_at, ${t.snapshot} as ${t.as} from ${t.table}`;
  return {
    async insert(tx, orgId, v, snapshot, principalId) {
      await tx.query(
        `insert into ${t.table} (organization_id, ${t.parent}, version, ${t.snapshot}, published_at, published_by_principal_id)
         values ($1, $2, $3, $4::jsonb, $5, $6)`,
        [orgId, v.id, v.version, JSON.stringify(snapshot), v.published_at, principalId],
      );
    },
    async list(tx, orgId, id, page, orderSql) {
      const count = await tx.query<{ total: number }>(
        `select count(*)::int as total from ${t.table} where ${t.parent} = $1 and organization_id = $2`,
        [id, orgId],
      );
      const { rows } = await tx.query<VersionRow<K, S>>(
        `${select} where ${t.parent} = $1 and organization_id = $2 order by ${orderSql} limit $3 offset $4`,
        [id, orgId, page.limit, page.offset],
      );
      return { rows, total: count.rows[0]!.total };
    },
    async find(tx, orgId, id, version) {
      const { rows } = await tx.query<VersionRow<K, S>>(
        `${select} where ${t.parent} = $1 and organization_id = $2 and ($3::int is null or version = $3) order by version desc limit 1`,
        [id, orgId, version],
      );
      return rows[0] ?? null;
    },
  };
}
