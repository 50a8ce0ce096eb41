import type { Queryable } from '@clinic/db';

/**
 * The consents a guest booking must carry: the organization's required purposes that have a published
 * version (its own, else the platform's: org_privacy_notice, org_terms), and the feature purposes of the
 * visit (telemedicine for a video visit), each at its latest version.
 */
export async function latestRequiredOrgPurposes(
  tx: Queryable,
  orgId: string,
  features: string[],
): Promise<{ purpose_code: string; version: number }[]> {
  const { rows } = await tx.query<{ purpose_code: string; version: number }>(
    `select cp.code as purpose_code, coalesce(
       (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id = $1),
       (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id is null)) as version
     from consent_purposes cp
     where (cp.required and cp.scope = 'org') or cp.code = any($2::text[])
     order by cp.code`,
    [orgId, features],
  );
  return rows.filter((r) => r.version !== null);
}
