import type { Queryable } from '@clinic/db';

export interface ContextRow {
  id: string;
  email: string;
  kind: string;
  confirmed: boolean;
  last_activity: Date | null;
  stored_org_id: string | null;
  preferred_language: string | null;
  platform_roles: string[];
  memberships: { organization_id: string; role_id: string; role_code: string }[];
  patient_org_ids: string[];
  org_id: string | null;
  org_exists: boolean;
  role_id: string | null;
  role_code: string | null;
  permissions: string[];
}

/**
 * The whole request context in one statement (DESIGN.md section 6: round trips are the budget):
 * principal, platform roles, memberships, patient links, the organization chosen by the order of
 * spec 4.1, the role and permission codes there. It also records activity at most once a minute.
 * Runs as the owner: it is the platform deciding who the caller is, before any tenant scope exists.
 */
const CONTEXT_SQL = `
with touched as (
  update users set last_activity = now()
  where external_subject = $1 and (last_activity is null or last_activity < now() - interval '60 seconds')
  returning id
),
u as (select * from users where external_subject = $1),
pr as (
  select coalesce(array_agg(pm.role order by pm.role), '{}') as roles
  from platform_memberships pm where pm.user_id = (select id from u)
),
m as (
  select m.organization_id, m.role_id, r.code as role_code, m.created_at
  from memberships m join roles r on r.id = m.role_id
  where m.user_id = (select id from u)
),
p as (
  select coalesce(array_agg(pt.organization_id order by pt.created_at), '{}') as org_ids
  from patients pt where pt.user_id = (select id from u) and pt.deleted_at is null
),
chosen as (
  select case
    when $2::uuid is not null then $2::uuid
    when (select 'superadmin' = any(roles) from pr) then null
    when (select current_organization_id from u) in (select organization_id from m) then (select current_organization_id from u)
    else (select organization_id from m order by created_at, organization_id limit 1)
  end as org_id
)
select u.id, u.email, u.kind, u.confirmed,
  case when exists (select 1 from touched) then now() else u.last_activity end as last_activity,
  u.current_organization_id as stored_org_id, u.preferred_language,
  pr.roles as platform_roles,
  coalesce((select json_agg(json_build_object('organization_id', organization_id, 'role_id', role_id, 'role_code', role_code)
                            order by created_at, organization_id) from m), '[]'::json) as memberships,
  p.org_ids as patient_org_ids,
  c.org_id,
  (c.org_id is null or exists (select 1 from organizations o where o.id = c.org_id)) as org_exists,
  cm.role_id, cm.role_code,
  coalesce((select array_agg(rp.permission_code order by rp.permission_code)
            from role_permissions rp where rp.role_id = cm.role_id), '{}') as permissions
from u cross join pr cross join p cross join chosen c
left join m cm on cm.organization_id = c.org_id`;

export async function loadContext(db: Queryable, subject: string, requestedOrgId: string | null): Promise<ContextRow | null> {
  const { rows } = await db.query<ContextRow>(CONTEXT_SQL, [subject, requestedOrgId]);
  return rows[0] ?? null;
}

/**
 * Links a row created by email (invited member, CLI superadmin grant) to its identity, or inserts a
 * new user. Conflicts are ignored, so concurrent first requests of one user create exactly one row;
 * only the request that inserted gets `created = true`.
 */
export async function provisionUser(db: Queryable, subject: string, email: string): Promise<{ id: string; created: boolean } | null> {
  const { rows } = await db.query<{ id: string; created: boolean }>(
    `with linked as (
       update users set external_subject = $1, confirmed = true
       where lower(email) = lower($2) and external_subject is null and kind = 'human'
       returning id, false as created
     ), inserted as (
       insert into users (external_subject, email, confirmed)
       select $1, $2, true where not exists (select 1 from linked)
       on conflict do nothing
       returning id, true as created
     )
     select id, created from linked union all select id, created from inserted`,
    [subject, email],
  );
  return rows[0] ?? null;
}

/** Idempotent patient link; returns the new row's id, or null when it existed or the organization does not. */
export async function linkPatient(db: Queryable, organizationId: string, userId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    `insert into patients (organization_id, user_id)
     select $1, $2 where exists (select 1 from organizations where id = $1)
     on conflict (organization_id, user_id) do nothing
     returning id`,
    [organizationId, userId],
  );
  return rows[0]?.id ?? null;
}

export async function permissionCatalog(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ code: string }>('select code from permissions order by code');
  return rows.map((r) => r.code);
}
