import { NIL_UUID, type Queryable } from '@clinic/db';
import type { Pagination } from '@clinic/http-kit';
import type { Capability } from './schemas.ts';

export interface ProviderRow {
  id: string;
  capability: Capability;
  provider: string;
  organization_id: string | null;
  credentials_sealed: string | null;
  credentials_key_id: string | null;
  config: Record<string, unknown>;
  status: 'active' | 'error' | 'inactive';
  last_error: string | null;
  last_error_at: Date | null;
  last_health_check_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, capability, provider, organization_id, credentials_sealed, credentials_key_id, config, status, last_error,
  last_error_at, last_health_check_at, created_at, updated_at`;

export async function findProvider(tx: Queryable, id: string, opts: { forUpdate?: boolean } = {}): Promise<ProviderRow | null> {
  const { rows } = await tx.query<ProviderRow>(
    `select ${COLUMNS} from platform_service_providers where id = $1${opts.forUpdate ? ' for update' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

export async function listProviders(
  tx: Queryable,
  f: { capability?: string; organization_id?: string },
  page: Pagination,
): Promise<{ rows: ProviderRow[]; total: number }> {
  const where = `($1::text is null or capability = $1) and ($2::uuid is null or organization_id = $2)`;
  const params = [f.capability ?? null, f.organization_id ?? null];
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from platform_service_providers where ${where}`, params);
  const { rows } = await tx.query<ProviderRow>(
    `select ${COLUMNS} from platform_service_providers where ${where}
     order by organization_id nulls first, capability, id limit $3 offset $4`,
    [...params, page.limit, page.offset],
  );
  return { rows, total: count.rows[0]!.total };
}

/** Every row, for the health check and re-encryption. */
export async function allProviders(tx: Queryable): Promise<ProviderRow[]> {
  return (await tx.query<ProviderRow>(`select ${COLUMNS} from platform_service_providers order by id`)).rows;
}

/** The rows that decide resolution for (capability, organization): the override (if any) and the platform row. */
export async function resolutionRows(tx: Queryable, capability: string, orgId: string | null): Promise<ProviderRow[]> {
  const { rows } = await tx.query<ProviderRow>(
    `select ${COLUMNS} from platform_service_providers
     where capability = $1 and (organization_id is null or organization_id = $2)`,
    [capability, orgId ?? NIL_UUID],
  );
  return rows;
}

export interface ProviderWrite {
  credentials_sealed: string | null;
  credentials_key_id: string | null;
  config: Record<string, unknown>;
  status: string;
}

export async function updateProvider(tx: Queryable, id: string, w: ProviderWrite): Promise<ProviderRow> {
  const { rows } = await tx.query<ProviderRow>(
    `update platform_service_providers
     set credentials_sealed = $2, credentials_key_id = $3, config = $4, status = $5,
         updated_at = greatest(now(), updated_at + interval '1 millisecond')
     where id = $1 returning ${COLUMNS}`,
    [id, w.credentials_sealed, w.credentials_key_id, JSON.stringify(w.config), w.status],
  );
  return rows[0]!;
}

export async function insertOverride(
  tx: Queryable,
  capability: string,
  provider: string,
  orgId: string,
  w: ProviderWrite,
): Promise<ProviderRow | null> {
  const { rows } = await tx.query<ProviderRow>(
    `insert into platform_service_providers (capability, provider, organization_id, credentials_sealed, credentials_key_id, config, status)
     values ($1, $2, $3, $4, $5, $6, $7)
     on conflict (capability, (coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid))) do nothing
     returning ${COLUMNS}`,
    [capability, provider, orgId, w.credentials_sealed, w.credentials_key_id, JSON.stringify(w.config), w.status],
  );
  return rows[0] ?? null;
}

/** The health check's verdict. A change of status bumps updated_at, so other instances' caches see it. */
export async function recordHealth(
  tx: Queryable,
  id: string,
  expectedUpdatedAt: Date,
  outcome: { ok: true } | { ok: false; error: string },
): Promise<ProviderRow | null> {
  const { rows } = await tx.query<ProviderRow>(
    `update platform_service_providers set
       last_health_check_at = now(),
       status = case when status = 'inactive' then status when $3 then 'active' else 'error' end,
       last_error = case when $3 then last_error else $4 end,
       last_error_at = case when $3 then last_error_at else now() end,
       updated_at = case when status <> 'inactive' and status <> (case when $3 then 'active' else 'error' end) then now() else updated_at end
     -- JS dates carry milliseconds, PostgreSQL microseconds: compare at the precision the caller saw.
     where id = $1 and date_trunc('milliseconds', updated_at) = $2
     returning ${COLUMNS}`,
    [id, expectedUpdatedAt, outcome.ok, outcome.ok ? null : outcome.error],
  );
  return rows[0] ?? null;
}

export async function resealCredentials(
  tx: Queryable,
  id: string,
  sealed: string,
  keyId: string,
  expectedUpdatedAt: Date,
): Promise<boolean> {
  const res = await tx.query(
    `update platform_service_providers set credentials_sealed = $2, credentials_key_id = $3 where id = $1 and date_trunc('milliseconds', updated_at) = $4`,
    [id, sealed, keyId, expectedUpdatedAt],
  );
  return res.rowCount > 0;
}

export async function organizationExists(tx: Queryable, id: string): Promise<boolean> {
  const { rows } = await tx.query('select 1 from organizations where id = $1', [id]);
  return rows.length > 0;
}
