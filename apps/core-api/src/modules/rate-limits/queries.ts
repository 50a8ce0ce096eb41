import type { Queryable } from '@clinic/db';

/** An organization's own figure (organization_rate_limits, migration 0111). */
export interface RateLimitRow {
  organization_id: string;
  route_limit: number;
  reason: string | null;
  updated_at: string;
}

const COLUMNS = 'organization_id, route_limit, reason, updated_at';

/** Every organization's own figure: what the pipeline's cache holds (a row per clinic with one, few). */
export async function allRouteLimits(db: Queryable): Promise<Map<string, number>> {
  const { rows } = await db.query<{ organization_id: string; route_limit: number }>(
    'select organization_id, route_limit from organization_rate_limits',
  );
  return new Map(rows.map((r) => [r.organization_id, r.route_limit]));
}

export async function findRouteLimit(tx: Queryable, orgId: string): Promise<RateLimitRow | null> {
  const { rows } = await tx.query<RateLimitRow>(`select ${COLUMNS} from organization_rate_limits where organization_id = $1`, [orgId]);
  return rows[0] ?? null;
}

export async function upsertRouteLimit(
  tx: Queryable,
  orgId: string,
  limit: number,
  reason: string | null,
  principalId: string,
): Promise<RateLimitRow> {
  const { rows } = await tx.query<RateLimitRow>(
    `insert into organization_rate_limits (organization_id, route_limit, reason, updated_by_principal_id)
     values ($1, $2, $3, $4)
     on conflict (organization_id) do update
       set route_limit = excluded.route_limit, reason = excluded.reason, updated_by_principal_id = excluded.updated_by_principal_id
     returning ${COLUMNS}`,
    [orgId, limit, reason, principalId],
  );
  return rows[0]!;
}

export async function deleteRouteLimit(tx: Queryable, orgId: string): Promise<RateLimitRow | null> {
  const { rows } = await tx.query<RateLimitRow>(`delete from organization_rate_limits where organization_id = $1 returning ${COLUMNS}`, [
    orgId,
  ]);
  return rows[0] ?? null;
}
