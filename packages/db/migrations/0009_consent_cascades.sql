-- Consent cascades of spec 3.2 (leaving a clinic, deleting the account) and the GDPR operations of
-- spec 4.5 (restrict, erase, export). The application roles have no write access to patients, users
-- or memberships of other organizations, so each cascade is one narrowly scoped SECURITY DEFINER
-- function that decides who may run it from the request settings, like app.onboard_patient.
-- The consent ledger and the audit trail are never rewritten: they name people by id, and an
-- anonymised user keeps its id.

-- ---------------------------------------------------------------------------------------------
-- Withdraws every active ledger row of a person (all organizations and platform scope when org is
-- null and everywhere is true; only that organization's rows otherwise), recording who and why.
-- Non-withdrawable purposes (terms, privacy notices) are ended too: the relation they rest on ends.
-- Internal: not granted to the application roles.
create or replace function app.withdraw_all_consents(person uuid, org uuid, everywhere boolean, by_principal uuid, reason text)
returns jsonb
language sql security definer set search_path = public, pg_catalog, pg_temp as $$
  with w as (
    update consent_ledger set withdrawn_at = now(), withdrawn_by_principal_id = by_principal, withdrawal_reason = reason
    where patient_profile_id = person and withdrawn_at is null
      and (everywhere or organization_id = org)
    returning id, organization_id, patient_profile_id, purpose_code, purpose_version, source, withdrawal_reason
  )
  select coalesce(jsonb_agg(to_jsonb(w) order by w.organization_id nulls first, w.purpose_code, w.id), '[]'::jsonb) from w
$$;
revoke all on function app.withdraw_all_consents(uuid, uuid, boolean, uuid, text) from public;

-- POST /v1/me/clinics/{org_id}/leave: the caller ends its relation with one clinic. Soft-deletes its
-- patients row there (profile no longer shared) and withdraws every consent it holds there, org_terms
-- and org_privacy_notice included (reason left_clinic). Only ever the caller's own rows.
create or replace function app.leave_clinic(org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  me uuid := app.current_principal_id();
  row_id uuid;
begin
  if me is null then
    raise exception 'no principal' using errcode = 'insufficient_privilege';
  end if;
  update patients set deleted_at = now(), profile_shared = false
  where organization_id = org and user_id = me and deleted_at is null
  returning id into row_id;
  if row_id is null then
    raise exception 'not_a_patient' using errcode = 'P0001';
  end if;
  return jsonb_build_object(
    'patient_id', row_id,
    'withdrawn', app.withdraw_all_consents(me, org, false, me, 'left_clinic'));
end $$;
revoke all on function app.leave_clinic(uuid) from public;
grant execute on function app.leave_clinic(uuid) to app_rls, app_bypass;

-- Erasure (DELETE /v1/me, POST /v1/gdpr/erase). org null: the whole account, everywhere; allowed to
-- the person itself and to superadmins (app_bypass). org set: what that clinic holds (its consents,
-- the patients row there); allowed with gdpr.erase_data at that organization (it must be the one in
-- scope) for a person who is or was its patient, or to superadmins. After a clinic erasure the
-- account itself is anonymised only when nothing else links the person to the platform (no
-- membership, no live patients row elsewhere, no platform role): another controller's data is not
-- the clinic's to erase.
-- Anonymising: email becomes deleted-<id>@invalid (unique, non-routable: .invalid is reserved by RFC
-- 2606), the identity link (external_subject) is cleared so the sign-in identity can never reach this
-- row again, preferences are cleared, memberships and platform roles removed, patients rows
-- soft-deleted. The last holder of organizations.manage_members of an organization cannot be erased
-- (raises last_admin:<organization id>), under the same advisory lock as member removals.
create or replace function app.erase_user(target uuid, org uuid, reason text)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  me uuid := app.current_principal_id();
  bypass boolean := current_setting('role', true) = 'app_bypass';
  withdrawn jsonb := '[]'::jsonb;
  patients_deleted jsonb;
  memberships_removed jsonb := '[]'::jsonb;
  anonymise boolean;
  m record;
begin
  if me is null or target is null then
    raise exception 'no principal' using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from users u where u.id = target) then
    raise exception 'subject_not_found' using errcode = 'P0001';
  end if;
  if org is null then
    if not (target = me or bypass) then
      raise exception 'erase_not_allowed' using errcode = 'insufficient_privilege';
    end if;
    if (select kind from users where id = target) <> 'human' then
      raise exception 'not_human' using errcode = 'P0001';
    end if;
  else
    if not (bypass or (org = app.current_org_id() and app.has_permission('gdpr.erase_data'))) then
      raise exception 'erase_not_allowed' using errcode = 'insufficient_privilege';
    end if;
    if not exists (select 1 from patients p where p.organization_id = org and p.user_id = target) then
      raise exception 'subject_not_found' using errcode = 'P0001';
    end if;
    withdrawn := app.withdraw_all_consents(target, org, false, me, reason);
  end if;

  anonymise := org is null or not (
    exists (select 1 from memberships mm where mm.user_id = target)
    or exists (select 1 from patients p where p.user_id = target and p.deleted_at is null and p.organization_id <> org)
    or exists (select 1 from platform_memberships pm where pm.user_id = target));

  if anonymise then
    -- Never leave an organization without someone who can manage members (members module rule).
    for m in
      select mm.organization_id from memberships mm
      where mm.user_id = target
        and exists (select 1 from role_permissions rp where rp.role_id = mm.role_id and rp.permission_code = 'organizations.manage_members')
      order by mm.organization_id
    loop
      perform pg_advisory_xact_lock(7275003, hashtext(m.organization_id::text));
      if not exists (
        select 1 from memberships o join role_permissions rp on rp.role_id = o.role_id and rp.permission_code = 'organizations.manage_members'
        where o.organization_id = m.organization_id and o.user_id <> target) then
        raise exception 'last_admin:%', m.organization_id using errcode = 'P0001';
      end if;
    end loop;
    withdrawn := withdrawn || app.withdraw_all_consents(target, null, true, me, reason);
    with d as (delete from memberships mm where mm.user_id = target returning mm.organization_id, mm.role_id)
    select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id), '[]'::jsonb) into memberships_removed from d;
    delete from platform_memberships where user_id = target;
    update users set email = 'deleted-' || id || '@invalid', external_subject = null, preferred_language = null,
                     current_organization_id = null, confirmed = false
    where id = target;
  end if;

  with p as (
    update patients set deleted_at = now(), profile_shared = false
    where user_id = target and deleted_at is null and (anonymise or organization_id = org)
    returning id, organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(p) order by p.organization_id), '[]'::jsonb) into patients_deleted from p;

  return jsonb_build_object('anonymised', anonymise, 'withdrawn', withdrawn,
                            'patients_deleted', patients_deleted, 'memberships_removed', memberships_removed);
end $$;
revoke all on function app.erase_user(uuid, uuid, text) from public;
grant execute on function app.erase_user(uuid, uuid, text) to app_rls, app_bypass;

-- GDPR routes name a clinic's data subject by its patients row (as the staff consent routes do).
-- Staff with a gdpr.* permission need the person behind it without patients.view_org: this answers
-- only that, for a row (live or soft-deleted: erasure and export still apply after a patient left)
-- of the organization in scope.
create or replace function app.gdpr_patient_user_id(patient uuid) returns uuid
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select p.user_id
  from public.patients p
  where p.id = patient
    and p.organization_id = (select app.current_org_id())
    and ((select app.has_permission('gdpr.export_data')) or (select app.has_permission('gdpr.erase_data'))
         or (select app.has_permission('gdpr.restrict_processing'))
         or current_setting('role', true) = 'app_bypass')
$$;
revoke all on function app.gdpr_patient_user_id(uuid) from public;
grant execute on function app.gdpr_patient_user_id(uuid) to app_rls, app_bypass;

-- ---------------------------------------------------------------------------------------------
-- Restriction of processing (GDPR art. 18). organization_id null: platform-wide, set by the person
-- itself or a superadmin; non-null: at one clinic, set by its staff with gdpr.restrict_processing.
-- A restriction is lifted by recording lifted_at; rows are never deleted (they are the evidence).
-- Feature gates (requireConsent) refuse a restricted person: 403 processing_restricted.
create table gdpr_restrictions (
  id uuid primary key default app.uuid_v7(),
  user_id uuid not null,
  organization_id uuid,
  reason text check (length(reason) <= 1000),
  restricted_at timestamptz not null default now(),
  restricted_by_principal_id uuid not null,
  lifted_at timestamptz,
  lifted_by_principal_id uuid,
  created_at timestamptz not null default now(),
  constraint gdpr_restrictions_lift_complete check ((lifted_at is null) = (lifted_by_principal_id is null))
);
-- At most one active restriction per (person, scope).
create unique index gdpr_restrictions_active_key
  on gdpr_restrictions (user_id, coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid)) where lifted_at is null;

select app.secure_table('gdpr_restrictions', 'select, insert');
grant update (lifted_at, lifted_by_principal_id) on gdpr_restrictions to app_rls, app_bypass;

create policy gdpr_restrictions_read on gdpr_restrictions for select to app_rls using (
  user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and (select app.has_permission('gdpr.restrict_processing')))
);
create policy gdpr_restrictions_insert on gdpr_restrictions for insert to app_rls with check (
  restricted_by_principal_id = (select app.current_principal_id())
  and ((user_id = (select app.current_principal_id()) and organization_id is null)
       or (organization_id = (select app.current_org_id()) and (select app.has_permission('gdpr.restrict_processing'))))
);
create policy gdpr_restrictions_lift on gdpr_restrictions for update to app_rls
  using (
    (user_id = (select app.current_principal_id()) and organization_id is null)
    or (organization_id = (select app.current_org_id()) and (select app.has_permission('gdpr.restrict_processing')))
  )
  with check (lifted_by_principal_id = (select app.current_principal_id()));

-- ---------------------------------------------------------------------------------------------
-- A small durable job table, processed by an in-process runner started with the API (the worker's
-- sweeps recover stale jobs). The archive is stored with the job (file), so any instance behind
-- a load balancer can serve the download; it expires after expires_at.
create table jobs (
  id uuid primary key default app.uuid_v7(),
  kind text not null check (kind ~ '^[a-z][a-z0-9_.]*$'),
  status text not null default 'queued' check (status in ('queued', 'running', 'done', 'failed')),
  progress int not null default 0 check (progress between 0 and 100),
  -- The organization the job acts for (null: platform scope) and who asked.
  organization_id uuid,
  requested_by_principal_id uuid not null,
  payload jsonb not null default '{}'::jsonb,
  result_path text,
  result jsonb,
  file bytea,
  error text,
  attempts int not null default 0,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index jobs_queue_idx on jobs (kind, created_at) where status = 'queued';
create trigger jobs_touch before update on jobs for each row execute function app.touch_updated_at();

-- The application roles read and enqueue; only the runner (the owner) moves a job on.
select app.secure_table('jobs', 'select, insert');
create policy jobs_read on jobs for select to app_rls using (
  requested_by_principal_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and kind = 'gdpr_export' and (select app.has_permission('gdpr.export_data')))
);
create policy jobs_insert on jobs for insert to app_rls with check (
  requested_by_principal_id = (select app.current_principal_id())
  and status = 'queued' and progress = 0 and file is null and result is null
  and (organization_id is null or organization_id = (select app.current_org_id()))
);

-- ---------------------------------------------------------------------------------------------
-- Default grants: a clinic's administrators answer its patients' data-subject requests (the clinic
-- is the controller of its patients' data), so the admin template and every existing admin clone
-- hold the three gdpr codes.
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r cross join (values ('gdpr.export_data'), ('gdpr.erase_data'), ('gdpr.restrict_processing')) as g (code)
where r.code = 'admin' and r.is_system
on conflict do nothing;
