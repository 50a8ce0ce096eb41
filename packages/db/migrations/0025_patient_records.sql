-- Patient records: staff create a patient by email (the person signs in later and is linked
-- by email, as invited members are), and read the email of the patients they may read. The users
-- table's policies show staff only the staff directory, so both go through narrow definer functions.

-- The id of the human user with this email, created (without an identity) when there is none; null
-- for an agent or service account. Only for callers holding patients.onboard (or superadmins).
create or replace function app.ensure_patient_user(address text) returns uuid
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  uid uuid;
  k text;
begin
  if not (app.has_permission('patients.onboard') or current_setting('role', true) = 'app_bypass') then
    raise exception 'patients.onboard is required' using errcode = 'insufficient_privilege';
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
revoke all on function app.ensure_patient_user(text) from public;
grant execute on function app.ensure_patient_user(text) to app_rls, app_bypass;

-- The email of a patient row the caller can read (its own, or with patients.view_org / patients.view
-- at the organization in scope), else null.
create or replace function app.patient_email(p_patient_id uuid) returns text
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select u.email from public.patients p join public.users u on u.id = p.user_id
  where p.id = p_patient_id
    and (current_setting('role', true) = 'app_bypass'
         or p.user_id = app.current_principal_id()
         or (p.organization_id = app.current_org_id()
             and (app.has_permission('patients.view_org') or app.has_permission('patients.view'))))
$$;
revoke all on function app.patient_email(uuid) from public;
grant execute on function app.patient_email(uuid) to app_rls, app_bypass;

-- A patient reads the published definitions of its organization's fields, so that its own record and
-- forms can be shown by key; the API leaves private fields out for it (spec 5.8).
create policy custom_fields_read_patient on custom_fields for select to app_rls using (
  organization_id = (select app.current_org_id()) and deleted_at is null and (select app.current_patient_id()) is not null
);
create policy custom_field_versions_read_patient on custom_field_versions for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.current_patient_id()) is not null
);

-- The forms guard of 0023 again, with ownership compared null-safely: for a caller that is no patient
-- (current_patient_id() null) the comparison was null, `not (... or null)` was null, and the guard let
-- a fill through without forms.fill_org.
create or replace function app.forms_signed_guard() returns trigger
language plpgsql as $$
begin
  if old.status = 'signed' then
    raise exception 'form % is signed and can no longer change', old.id using errcode = 'insufficient_privilege';
  end if;
  if tg_op = 'DELETE' then return old; end if;
  if (new.id, new.organization_id, new.patient_id, new.form_template_id, new.template_version, new.title, new.created_by_principal_id, new.created_at)
     is distinct from
     (old.id, old.organization_id, old.patient_id, old.form_template_id, old.template_version, old.title, old.created_by_principal_id, old.created_at) then
    raise exception 'forms: only values, signature and deletion change' using errcode = 'insufficient_privilege';
  end if;
  if old.deleted_at is not null then
    raise exception 'form % is deleted', old.id using errcode = 'insufficient_privilege';
  end if;
  -- Requests: filling needs forms.fill_org or ownership, deleting forms.delete_unsigned, signing
  -- forms.sign or ownership. Superadmins (app_bypass) pass as they pass every permission check.
  if current_user = 'app_rls' then
    if new.deleted_at is not null and not app.has_permission('forms.delete_unsigned') then
      raise exception 'forms: deleting needs forms.delete_unsigned' using errcode = 'insufficient_privilege';
    end if;
    if (new."values" is distinct from old."values" or new.status <> old.status)
       and not (app.has_permission('forms.fill_org') or (new.status <> old.status and app.has_permission('forms.sign'))
                or coalesce(old.patient_id = app.current_patient_id(), false)) then
      raise exception 'forms: filling or signing needs forms.fill_org, forms.sign or ownership' using errcode = 'insufficient_privilege';
    end if;
  end if;
  return new;
end $$;

-- The record guards of 0022 again, null-safe in the same way.
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
       or (old.user_id is distinct from app.current_principal_id()
           and (new.first_name, new.last_name, new.date_of_birth, new.phone, new.custom_field_values)
               is distinct from (old.first_name, old.last_name, old.date_of_birth, old.phone, old.custom_field_values))) then
    raise exception 'patients: editing this record needs patients.update_org' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;

create or replace function app.specialists_write_guard() returns trigger
language plpgsql as $$
begin
  if current_user <> 'app_rls' then return new; end if;
  if new.deleted_at is distinct from old.deleted_at and not app.has_permission('specialists.delete') then
    raise exception 'specialists: deleting needs specialists.delete' using errcode = 'insufficient_privilege';
  end if;
  if old.user_id is distinct from app.current_principal_id() and not app.has_permission('specialists.update_org')
     and (new.display_name, new.title, new.bio, new.contact_email, new.contact_phone, new.custom_field_values)
         is distinct from (old.display_name, old.title, old.bio, old.contact_email, old.contact_phone, old.custom_field_values) then
    raise exception 'specialists: editing another profile needs specialists.update_org' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
