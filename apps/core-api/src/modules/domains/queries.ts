import type { Queryable } from '@clinic/db';

export interface DomainRow {
  id: string;
  organization_id: string;
  domain: string;
  verification_token: string;
  verified_at: Date | null;
  created_at: Date;
}

const COLUMNS = 'id, organization_id, domain, verification_token, verified_at, created_at';

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function listDomains(tx: Queryable, orgId: string): Promise<DomainRow[]> {
  const { rows } = await tx.query<DomainRow>(
    `select ${COLUMNS} from organization_domains where organization_id = $1 order by created_at desc, id desc`,
    [orgId],
  );
  return rows;
}

export async function findDomain(tx: Queryable, orgId: string, id: string): Promise<DomainRow | null> {
  const { rows } = await tx.query<DomainRow>(`select ${COLUMNS} from organization_domains where id = $1 and organization_id = $2`, [
    id,
    orgId,
  ]);
  return rows[0] ?? null;
}

/**
 * Inserts the domain, or returns where it already is. The unique index on domain is global, so a
 * row of another organization conflicts even though row-level security hides it from the caller;
 * `on conflict do nothing` reports that without aborting the transaction.
 */
export async function insertDomain(
  tx: Queryable,
  orgId: string,
  domain: string,
  token: string,
): Promise<{ row: DomainRow } | { taken: 'this_organization' | 'another_organization' }> {
  const { rows } = await tx.query<DomainRow>(
    `insert into organization_domains (organization_id, domain, verification_token) values ($1, $2, $3)
     on conflict (domain) do nothing returning ${COLUMNS}`,
    [orgId, domain, token],
  );
  if (rows[0]) return { row: rows[0] };
  const own = await tx.query(`select 1 from organization_domains where domain = $1 and organization_id = $2`, [domain, orgId]);
  return { taken: own.rows.length ? 'this_organization' : 'another_organization' };
}

export async function deleteDomain(tx: Queryable, orgId: string, id: string): Promise<DomainRow | null> {
  const { rows } = await tx.query<DomainRow>(
    `delete from organization_domains where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

/** Sets verified_at once; null when the row is gone or was already verified (by a concurrent call). */
export async function markVerified(tx: Queryable, orgId: string, id: string): Promise<DomainRow | null> {
  const { rows } = await tx.query<DomainRow>(
    `update organization_domains set verified_at = now()
     where id = $1 and organization_id = $2 and verified_at is null returning ${COLUMNS}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}
