-- Caregivers (spec 2.3: is_patient_at_current_org "directly or through a caregiver link"): a person who
-- acts for a patient of a clinic (a parent for a child, a relative for an elderly parent), with the
-- patient's approval (the patient adds the link) or the clinic's (staff with patients.update_org add it).
-- The caregiver names the patient it acts for with X-Patient-ID; the request then sees that patient's rows
-- wherever a policy asks app.current_patient_id(), and writes are recorded as the caregiver's.
create table caregiver_links (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  patient_id uuid not null,
  caregiver_user_id uuid not null references users (id) on delete cascade,
  relationship text check (relationship in ('parent', 'guardian', 'spouse', 'partner', 'child', 'relative', 'other')),
  approved_by text not null check (approved_by in ('patient', 'staff')),
  created_by_user_id uuid not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  revoked_by_user_id uuid,
  primary key (organization_id, id),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade
);
create unique index caregiver_links_active_key on caregiver_links (organization_id, patient_id, caregiver_user_id) where revoked_at is null;
create index caregiver_links_caregiver_idx on caregiver_links (caregiver_user_id) where revoked_at is null;
select app.secure_table('caregiver_links', 'select, insert, update');
revoke update on caregiver_links from app_rls, app_bypass;
grant update (revoked_at, revoked_by_user_id) on caregiver_links to app_rls, app_bypass;

-- The caller's own live patients row at the organization in scope (what current_patient_id was).
create or replace function app.own_patient_id() returns uuid
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select p.id from public.patients p
  where p.organization_id = app.current_org_id() and p.user_id = app.current_principal_id() and p.deleted_at is null
$$;
revoke all on function app.own_patient_id() from public;
grant execute on function app.own_patient_id() to app_rls, app_bypass;

-- The patient the request acts for: the one named by X-Patient-ID (app.acting_patient_id) when the caller
-- holds an active caregiver link to it and its record is live, else the caller's own record.
create or replace function app.current_patient_id() returns uuid
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select coalesce(
    (select l.patient_id from public.caregiver_links l
       join public.patients p on p.organization_id = l.organization_id and p.id = l.patient_id
     where l.organization_id = app.current_org_id()
       and l.patient_id = nullif(current_setting('app.acting_patient_id', true), '')::uuid
       and l.caregiver_user_id = app.current_principal_id() and l.revoked_at is null and p.deleted_at is null),
    app.own_patient_id()
  )
$$;

create policy caregiver_links_read on caregiver_links for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('patients.view_org')) or (select app.has_permission('patients.view'))
       or caregiver_user_id = (select app.current_principal_id()) or patient_id = (select app.own_patient_id()))
);
-- Added by staff (the clinic approves) or by the patient itself (the patient approves); never by the
-- would-be caregiver, and never as a caregiver acting for someone.
create policy caregiver_links_insert on caregiver_links for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and created_by_user_id = (select app.current_principal_id())
  and ((approved_by = 'staff' and (select app.has_permission('patients.update_org')))
       or (approved_by = 'patient' and patient_id = (select app.own_patient_id())))
);
-- Revoked by staff, the patient, or the caregiver itself.
create policy caregiver_links_revoke on caregiver_links for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('patients.update_org')) or caregiver_user_id = (select app.current_principal_id())
              or patient_id = (select app.own_patient_id())))
  with check (organization_id = (select app.current_org_id()) and revoked_by_user_id = (select app.current_principal_id()));

-- A caregiver reads and edits the record of the patient it acts for, as the patient would.
drop policy patients_read_own on patients;
create policy patients_read_own on patients for select to app_rls using (
  user_id = (select app.current_principal_id()) or id = (select app.current_patient_id())
);
drop policy patients_update_self on patients;
create policy patients_update_self on patients for update to app_rls
  using ((user_id = (select app.current_principal_id()) or id = (select app.current_patient_id())) and deleted_at is null)
  with check (user_id = (select app.current_principal_id()) or id = (select app.current_patient_id()));

create or replace function app.patient_email(p_patient_id uuid) returns text
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select u.email from public.patients p join public.users u on u.id = p.user_id
  where p.id = p_patient_id
    and (current_setting('role', true) = 'app_bypass'
         or p.user_id = app.current_principal_id()
         or p.id = app.current_patient_id()
         or (p.organization_id = app.current_org_id()
             and (app.has_permission('patients.view_org') or app.has_permission('patients.view'))))
$$;

-- The guard of 0061, with "the caller's own record" meaning the record it acts for (its own, or the
-- patient it is the caregiver of).
create or replace function app.patients_write_guard() returns trigger
language plpgsql as $$
begin
  -- Only requests (app_rls) are limited; superadmins (app_bypass) and the owner's cascades are not.
  if current_user <> 'app_rls' then return new; end if;
  if new.deleted_at is distinct from old.deleted_at and not app.has_permission('patients.delete') then
    raise exception 'patients: deleting needs patients.delete' using errcode = 'insufficient_privilege';
  end if;
  if not app.has_permission('patients.update_org') and (
       new.notes is distinct from old.notes
       or new.external_record_number is distinct from old.external_record_number
       or (old.id is distinct from app.current_patient_id()
           and (new.first_name, new.last_name, new.date_of_birth, new.phone, new.custom_field_values, new.sex, new.address_line1,
                new.address_line2, new.city, new.region, new.postal_code, new.country, new.preferred_language)
               is distinct from (old.first_name, old.last_name, old.date_of_birth, old.phone, old.custom_field_values, old.sex,
                old.address_line1, old.address_line2, old.city, old.region, old.postal_code, old.country, old.preferred_language))) then
    raise exception 'patients: editing this record needs patients.update_org' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;

-- A caregiver's cached request context names the clinics where it acts for a patient: a link that comes
-- or goes moves its context version, and so does the patient record it acts for leaving or returning.
create trigger caregiver_links_context_version after insert or delete or update on caregiver_links
  for each row execute function app.bump_user_context_version('caregiver_user_id');
create or replace function app.bump_caregivers_context_version() returns trigger
language plpgsql security definer set search_path = public as $$
begin
  update users set context_version = context_version + 1
  where id in (select l.caregiver_user_id from caregiver_links l
               where l.organization_id = new.organization_id and l.patient_id = new.id and l.revoked_at is null);
  return null;
end $$;
revoke all on function app.bump_caregivers_context_version() from public;
create trigger patients_caregivers_context_version after update of deleted_at on patients
  for each row when (old.deleted_at is distinct from new.deleted_at) execute function app.bump_caregivers_context_version();

-- The user a new caregiver link names, by email, made if it does not exist yet (linked on its first
-- sign-in, like a patient created by staff). For those who may add a link: staff with
-- patients.update_org, or a patient of the organization in scope. Agents and service accounts: null.
create or replace function app.ensure_caregiver_user(address text) returns uuid
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  uid uuid;
  k text;
begin
  if not (current_setting('role', true) = 'app_bypass' or app.has_permission('patients.update_org') or app.own_patient_id() is not null) then
    raise exception 'adding a caregiver needs patients.update_org or a patient record here' using errcode = 'insufficient_privilege';
  end if;
  select u.id, u.kind into uid, k from public.users u where lower(u.email) = lower(address);
  if uid is null then
    insert into public.users (email) values (address) on conflict do nothing returning id into uid;
    if uid is null then
      select u.id, u.kind into uid, k from public.users u where lower(u.email) = lower(address);
    end if;
  end if;
  if k is not null and k <> 'human' then return null; end if;
  return uid;
end $$;
revoke all on function app.ensure_caregiver_user(text) from public;
grant execute on function app.ensure_caregiver_user(text) to app_rls, app_bypass;

-- The caregiver's email, for those who may read the link (the same rule as caregiver_links_read).
create or replace function app.caregiver_email(link_org uuid, link_id uuid) returns text
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select u.email from public.caregiver_links l join public.users u on u.id = l.caregiver_user_id
  where l.organization_id = link_org and l.id = link_id
    and (current_setting('role', true) = 'app_bypass'
         or (l.organization_id = app.current_org_id()
             and (app.has_permission('patients.view_org') or app.has_permission('patients.view')
                  or l.caregiver_user_id = app.current_principal_id() or l.patient_id = app.own_patient_id())))
$$;
revoke all on function app.caregiver_email(uuid, uuid) from public;
grant execute on function app.caregiver_email(uuid, uuid) to app_rls, app_bypass;

-- GET /v1/me/caregiving: the patients the caller acts for, at every clinic, with their names (what the
-- portal shows to choose whom to act for).
create or replace function app.my_caregiving()
returns table (id uuid, organization_id uuid, organization_name text, patient_id uuid, first_name text, last_name text,
               relationship text, created_at timestamptz)
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select l.id, l.organization_id, o.name, l.patient_id, p.first_name, p.last_name, l.relationship, l.created_at
  from public.caregiver_links l
  join public.patients p on p.organization_id = l.organization_id and p.id = l.patient_id and p.deleted_at is null
  join public.organizations o on o.id = l.organization_id
  where l.caregiver_user_id = app.current_principal_id() and l.revoked_at is null
  order by l.created_at, l.id
$$;
revoke all on function app.my_caregiving() from public;
grant execute on function app.my_caregiving() to app_rls, app_bypass;
