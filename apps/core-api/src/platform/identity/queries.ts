import type { Queryable } from '@clinic/db';
import type { MissingConsent } from './context.ts';

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
  /** Required purposes whose latest published version the caller has not accepted (re-consent gate). */
  missing_consents: { purpose_code: string; organization_id: string | null; version: number }[];
  /** users.context_version and the global epoch, read in the same snapshot as the rest. */
  context_version: number;
  context_epoch: number;
}

/**
 * The whole request context in one statement (architecture section 6: round trips are the budget):
 * principal, platform roles, memberships, patient links, the organization chosen by the order of
 * spec 4.1, the role and permission codes there. It is read-only (activity is recorded separately,
 * at most once a minute) and prepared by name, so PostgreSQL plans it once per connection. Runs as the owner: it is the platform deciding who the caller is, before any tenant scope exists.
 */
const CONTEXT_SQL = `
with u as (select * from users where external_subject = $1),
pr as (
  select coalesce(array_agg(pm.role order by pm.role), '{}') as roles
  from platform_memberships pm where pm.user_id = (select id from u)
),
m as (
  select m.organization_id, m.role_id, r.code as role_code, m.created_at
  from memberships m join roles r on r.id = m.role_id
  where m.user_id = (select id from u)
),
-- Where the caller is a patient: its own live records, and (spec 2.3) the patients it is an active
-- caregiver of (migration 0066).
p as (
  select coalesce(array_agg(x.organization_id order by x.created_at), '{}') as org_ids,
    coalesce(array_agg(x.organization_id order by x.created_at) filter (where x.own), '{}') as own_org_ids from (
    select pt.organization_id, min(pt.created_at) as created_at, bool_or(pt.own) as own from (
      select organization_id, created_at, true as own from patients where user_id = (select id from u) and deleted_at is null
      union all
      select l.organization_id, l.created_at, false from caregiver_links l
        join patients cp on cp.organization_id = l.organization_id and cp.id = l.patient_id and cp.deleted_at is null
      where l.caregiver_user_id = (select id from u) and l.revoked_at is null
    ) pt group by pt.organization_id
  ) x
),
chosen as (
  select case
    -- An explicit nil UUID asks for no scope (spec 2.1); it wins over the stored and first organizations.
    when $2::uuid is not null then nullif($2::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
    when (select 'superadmin' = any(roles) from pr) then null
    when (select current_organization_id from u) in (select organization_id from m) then (select current_organization_id from u)
    else (select organization_id from m order by created_at, organization_id limit 1)
  end as org_id
),
-- Re-consent gate (spec 4.6 rule 3), folded in here so that it costs no round trip. Required
-- purposes: platform-scope ones for every human caller but superadmins; the organization's own when
-- an organization is in scope and the caller has its own patient record there (staff are bound by their
-- employment contract, not by the clinic's patient terms; a caregiver acts under the patient's acceptance,
-- checked when it names the patient). Agents and service accounts are bound by their organization's
-- agreement. Only purposes with a published version count.
req as (
  select cp.code as purpose_code, case when cp.scope = 'org' then c.org_id end as organization_id
  from consent_purposes cp cross join chosen c cross join u cross join p
  where $3::boolean and cp.required and u.kind = 'human'
    and not (select 'superadmin' = any(roles) from pr)
    and (cp.scope = 'platform' or (c.org_id is not null and c.org_id = any(p.own_org_ids)))
),
-- The effective latest version: the clinic override's when the clinic has one, else the platform default's.
latest as (
  select r.purpose_code, r.organization_id, coalesce(
    (select max(v.version) from consent_purpose_versions v where v.purpose_code = r.purpose_code and v.organization_id = r.organization_id),
    (select max(v.version) from consent_purpose_versions v where v.purpose_code = r.purpose_code and v.organization_id is null)
  ) as version
  from req r
),
missing as (
  select l.purpose_code, l.organization_id, l.version from latest l
  where l.version is not null
    and not exists (
      select 1 from consent_ledger cl
      where cl.patient_profile_id = (select id from u) and cl.purpose_code = l.purpose_code
        and cl.organization_id is not distinct from l.organization_id
        and cl.withdrawn_at is null and cl.purpose_version >= l.version)
)
select u.id, u.email, u.kind, u.confirmed,
  u.last_activity, u.context_version, (select e.epoch from app_meta.context_epoch e) as context_epoch,
  u.current_organization_id as stored_org_id, u.preferred_language,
  pr.roles as platform_roles,
  coalesce((select json_agg(json_build_object('organization_id', organization_id, 'role_id', role_id, 'role_code', role_code)
                            order by created_at, organization_id) from m), '[]'::json) as memberships,
  p.org_ids as patient_org_ids,
  c.org_id,
  (c.org_id is null or exists (select 1 from organizations o where o.id = c.org_id)) as org_exists,
  cm.role_id, cm.role_code,
  coalesce((select array_agg(rp.permission_code order by rp.permission_code)
            from role_permissions rp where rp.role_id = cm.role_id), '{}') as permissions,
  coalesce((select json_agg(json_build_object('purpose_code', purpose_code, 'organization_id', organization_id, 'version', version)
                            order by organization_id nulls first, purpose_code) from missing), '[]'::json) as missing_consents
from u cross join pr cross join p cross join chosen c
left join m cm on cm.organization_id = c.org_id`;

export async function loadContext(
  db: Queryable,
  subject: string,
  requestedOrgId: string | null,
  consentGate = true,
): Promise<ContextRow | null> {
  const { rows } = await db.query<ContextRow>(CONTEXT_SQL, [subject, requestedOrgId, consentGate], { name: 'request_context' });
  return rows[0] ?? null;
}

/**
 * What a cached context is checked against on every request: one primary-key read. A cached context
 * is still true iff it names the same user and both numbers are those it was loaded with (migration
 * 0010): a sign-in subject can move to a new account (after erasure), whose version may equal the old one's.
 */
export async function contextVersions(db: Queryable, subject: string): Promise<{ id: string; version: number; epoch: number } | null> {
  const { rows } = await db.query<{ id: string; version: number; epoch: number }>(
    `select u.id, u.context_version as version, (select e.epoch from app_meta.context_epoch e) as epoch
     from users u where u.external_subject = $1`,
    [subject],
    { name: 'context_versions_of_user' },
  );
  return rows[0] ?? null;
}

/** Stamps last_activity; the caller sends it only when the loaded value is a minute old or null. */
export async function recordActivity(db: Queryable, userId: string): Promise<Date> {
  const { rows } = await db.query<{ last_activity: Date }>(
    `update users set last_activity = now() where id = $1 returning last_activity`,
    [userId],
    { name: 'record_activity' },
  );
  return rows[0]?.last_activity ?? new Date();
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

export async function userIdBySubject(db: Queryable, subject: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>('select id from users where external_subject = $1', [subject]);
  return rows[0]?.id ?? null;
}

/**
 * Idempotent patient link; returns the new row's id, or null when it existed, the organization does not, it
 * takes no patients yet (no privacy notice: app.org_accepts_patients), or the user is a member there. A
 * member's first sign-in is staff signing in to the clinic app (the proxy sets X-Organization-ID on every
 * request of the clinic's host), never a patient joining: a member who is also a patient joins through the
 * portal (POST /v1/portal/onboard), with the clinic's consents.
 */
export async function linkPatient(db: Queryable, organizationId: string, userId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    `insert into patients (organization_id, user_id)
     select $1, $2 where exists (select 1 from organizations where id = $1) and app.org_accepts_patients($1)
       and not exists (select 1 from memberships m where m.organization_id = $1 and m.user_id = $2)
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

const CONTEXT_BY_ID_SQL = CONTEXT_SQL.replace(
  'with u as (select * from users where external_subject = $1)',
  'with u as (select * from users where id = $1::uuid)',
);
if (CONTEXT_BY_ID_SQL === CONTEXT_SQL) throw new Error('CONTEXT_SQL no longer starts with the user by subject');

/** The request context of a user named by id (an impersonated patient may never have signed in). */
export async function loadContextByUserId(db: Queryable, userId: string, orgId: string, consentGate = true): Promise<ContextRow | null> {
  const { rows } = await db.query<ContextRow>(CONTEXT_BY_ID_SQL, [userId, orgId, consentGate], { name: 'request_context_by_user_id' });
  return rows[0] ?? null;
}

export interface ImpersonationRow {
  id: string;
  organization_id: string;
  patient_id: string;
  patient_user_id: string;
  staff_user_id: string;
  expires_at: Date;
  /** Ended, expired, the patient record gone, or the staff member no longer holding patients.impersonate. */
  live: boolean;
}

/** The session a token names (by its SHA-256), with whether it may still act. Runs as the owner. */
export async function findImpersonation(db: Queryable, tokenHash: string): Promise<ImpersonationRow | null> {
  const { rows } = await db.query<ImpersonationRow>(
    `select s.id, s.organization_id, s.patient_id, s.patient_user_id, s.staff_user_id, s.expires_at,
       (s.ended_at is null and s.expires_at > now()
        and exists (select 1 from patients p where p.organization_id = s.organization_id and p.id = s.patient_id and p.deleted_at is null)
        and exists (select 1 from memberships m join role_permissions rp on rp.role_id = m.role_id
                    where m.user_id = s.staff_user_id and m.organization_id = s.organization_id
                      and rp.permission_code = 'patients.impersonate')) as live
     from impersonation_sessions s where s.token_hash = $1`,
    [tokenHash],
    { name: 'impersonation_by_token' },
  );
  return rows[0] ?? null;
}

/** Whether the user holds an active caregiver link to this live patient record of the organization. */
/**
 * The organization's required purposes (latest published version, the clinic's override first) that the
 * patient of this record has not accepted: what a caregiver acting for it waits on.
 */
export async function patientMissingOrgConsents(db: Queryable, orgId: string, patientId: string): Promise<MissingConsent[]> {
  const { rows } = await db.query<MissingConsent>(
    `with l as (
       select cp.code as purpose_code, coalesce(
         (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id = $1),
         (select max(v.version) from consent_purpose_versions v where v.purpose_code = cp.code and v.organization_id is null)
       ) as version
       from consent_purposes cp where cp.required and cp.scope = 'org'
     )
     select l.purpose_code, $1::uuid as organization_id, l.version from l
     join patients p on p.organization_id = $1 and p.id = $2
     where l.version is not null
       and not exists (
         select 1 from consent_ledger cl
         where cl.patient_profile_id = p.user_id and cl.organization_id = $1 and cl.purpose_code = l.purpose_code
           and cl.withdrawn_at is null and cl.purpose_version >= l.version)
     order by l.purpose_code`,
    [orgId, patientId],
    { name: 'patient_missing_org_consents' },
  );
  return rows;
}

export async function isActiveCaregiver(db: Queryable, orgId: string, patientId: string, userId: string): Promise<boolean> {
  const { rows } = await db.query(
    `select 1 from caregiver_links l join patients p on p.organization_id = l.organization_id and p.id = l.patient_id
     where l.organization_id = $1 and l.patient_id = $2 and l.caregiver_user_id = $3 and l.revoked_at is null and p.deleted_at is null`,
    [orgId, patientId, userId],
    { name: 'active_caregiver_link' },
  );
  return rows.length > 0;
}
