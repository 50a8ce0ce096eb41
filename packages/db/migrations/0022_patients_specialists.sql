-- Patients and specialists as far as forms need them (spec 4.5). A patient is the per-clinic
-- patients row of migration 0002, given a record here; a specialist is a staff member (a membership)
-- with a profile row. Both carry custom field values (entity types `patient` / `specialist`) keyed by
-- custom field id, so renaming a field's key in a later version keeps its values.

alter table patients
  add column first_name text check (length(first_name) <= 100),
  add column last_name text check (length(last_name) <= 100),
  add column date_of_birth date,
  add column phone text check (length(phone) <= 40),
  -- Staff notes: never shown to the patient (spec 5.8, private fields).
  add column notes text check (length(notes) <= 10000),
  add column custom_field_values jsonb not null default '{}'::jsonb check (jsonb_typeof(custom_field_values) = 'object'),
  add column created_by_principal_id uuid,
  add column updated_at timestamptz not null default now();
create trigger patients_touch before update on patients for each row execute function app.touch_updated_at();
create index patients_org_created_idx on patients (organization_id, created_at desc, id desc);

-- The caller's live patients row at the organization in scope, or null. Definer: one primary-key-ish
-- probe that policies of other tables can call without depending on the patients policies.
create or replace function app.current_patient_id() returns uuid
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select p.id from public.patients p
  where p.organization_id = app.current_org_id() and p.user_id = app.current_principal_id() and p.deleted_at is null
$$;
revoke all on function app.current_patient_id() from public;
grant execute on function app.current_patient_id() to app_rls, app_bypass;

-- Writes by the application role: staff create with patients.onboard, edit with patients.update_org,
-- soft-delete with patients.delete; a patient edits its own live record. Which columns each may touch
-- is the guard's business (below); the cascades of migrations 0008/0009 run as the owner.
create policy patients_insert on patients for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('patients.onboard'))
);
create policy patients_update_org on patients for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('patients.update_org')) or (select app.has_permission('patients.delete'))))
  with check (organization_id = (select app.current_org_id()));
create policy patients_update_self on patients for update to app_rls
  using (user_id = (select app.current_principal_id()) and deleted_at is null)
  with check (user_id = (select app.current_principal_id()));
revoke update on patients from app_rls, app_bypass;
grant update (first_name, last_name, date_of_birth, phone, notes, custom_field_values, deleted_at, updated_at) on patients to app_rls, app_bypass;

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
       or (old.user_id <> app.current_principal_id()
           and (new.first_name, new.last_name, new.date_of_birth, new.phone, new.custom_field_values)
               is distinct from (old.first_name, old.last_name, old.date_of_birth, old.phone, old.custom_field_values))) then
    raise exception 'patients: editing this record needs patients.update_org' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
create trigger patients_write_guard before update on patients for each row execute function app.patients_write_guard();

create table specialists (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  user_id uuid not null,
  display_name text not null check (length(btrim(display_name)) between 1 and 200),
  title text check (length(title) <= 200),
  bio text check (length(bio) <= 5000),
  -- Contact details: staff only, stripped for patient callers (spec 5.8).
  contact_email text check (length(contact_email) <= 320),
  contact_phone text check (length(contact_phone) <= 40),
  custom_field_values jsonb not null default '{}'::jsonb check (jsonb_typeof(custom_field_values) = 'object'),
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- A specialist is staff: removing the membership removes the profile.
  foreign key (user_id, organization_id) references memberships (user_id, organization_id) on delete cascade
);
create unique index specialists_member_key on specialists (organization_id, user_id);
create index specialists_org_created_idx on specialists (organization_id, created_at desc, id desc);
create trigger specialists_touch before update on specialists for each row execute function app.touch_updated_at();

select app.secure_table('specialists', 'select, insert, update');
revoke update on specialists from app_rls, app_bypass;
grant update (display_name, title, bio, contact_email, contact_phone, custom_field_values, deleted_at, updated_at) on specialists to app_rls, app_bypass;

-- Staff with specialists.view, the specialist itself, and the organization's patients (the clinic's
-- directory; the API strips contact details for them).
create policy specialists_read on specialists for select to app_rls using (
  organization_id = (select app.current_org_id())
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
  and ((select app.has_permission('specialists.view')) or user_id = (select app.current_principal_id())
       or (deleted_at is null and (select app.current_patient_id()) is not null))
);
create policy specialists_insert on specialists for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('specialists.create')));
create policy specialists_update on specialists for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('specialists.update_org')) or (select app.has_permission('specialists.delete'))
              or (user_id = (select app.current_principal_id()) and (select app.has_permission('specialists.update_self')))))
  with check (organization_id = (select app.current_org_id()));

create or replace function app.specialists_write_guard() returns trigger
language plpgsql as $$
begin
  if current_user <> 'app_rls' then return new; end if;
  if new.deleted_at is distinct from old.deleted_at and not app.has_permission('specialists.delete') then
    raise exception 'specialists: deleting needs specialists.delete' using errcode = 'insufficient_privilege';
  end if;
  if old.user_id <> app.current_principal_id() and not app.has_permission('specialists.update_org')
     and (new.display_name, new.title, new.bio, new.contact_email, new.contact_phone, new.custom_field_values)
         is distinct from (old.display_name, old.title, old.bio, old.contact_email, old.contact_phone, old.custom_field_values) then
    raise exception 'specialists: editing another profile needs specialists.update_org' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
create trigger specialists_write_guard before update on specialists for each row execute function app.specialists_write_guard();
