-- The patient profile (spec 4.5 GET, PUT /v1/patients/{id}/profile; docs/decisions.md "Patient profile"):
-- the demographics a clinic records beside the record of 0022. Flat columns on the patients row, so
-- one row keeps one person's data at one clinic and erasure clears it in one place.
alter table patients
  add column sex text check (sex in ('female', 'male', 'other', 'unknown')),
  add column address_line1 text check (length(address_line1) <= 200),
  add column address_line2 text check (length(address_line2) <= 200),
  add column city text check (length(city) <= 100),
  add column region text check (length(region) <= 100),
  add column postal_code text check (length(postal_code) <= 20),
  add column country text check (country ~ '^[A-Z]{2}$'),
  -- BCP 47; null: the organization's language.
  add column preferred_language text check (length(preferred_language) between 2 and 35),
  -- The clinic's own record number (from its earlier system): staff only, unique among live records.
  add column external_record_number text check (length(btrim(external_record_number)) between 1 and 64);
create unique index patients_org_external_record_key on patients (organization_id, external_record_number)
  where external_record_number is not null and deleted_at is null;
grant update (sex, address_line1, address_line2, city, region, postal_code, country, preferred_language, external_record_number)
  on patients to app_rls, app_bypass;

-- The record guard of 0025 again: a patient edits its own demographics; staff notes and the clinic's
-- record number need patients.update_org.
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
       or (old.user_id is distinct from app.current_principal_id()
           and (new.first_name, new.last_name, new.date_of_birth, new.phone, new.custom_field_values, new.sex, new.address_line1,
                new.address_line2, new.city, new.region, new.postal_code, new.country, new.preferred_language)
               is distinct from (old.first_name, old.last_name, old.date_of_birth, old.phone, old.custom_field_values, old.sex,
                old.address_line1, old.address_line2, old.city, old.region, old.postal_code, old.country, old.preferred_language))) then
    raise exception 'patients: editing this record needs patients.update_org' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;

-- Erasure clears the profile too: the function of 0059 runs first (forms, records, telemetry), then the
-- demographics go; the clinic's record number stays only where signed forms keep the identity.
alter function app.erase_patient_records(uuid, uuid) rename to erase_patient_records_0059;
create function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  result jsonb := app.erase_patient_records_0059(target, org);
begin
  update patients p set
    sex = null, address_line1 = null, address_line2 = null, city = null, region = null, postal_code = null, country = null,
    preferred_language = null,
    external_record_number = case when exists (select 1 from forms f where f.patient_id = p.id and f.status = 'signed')
                                  then p.external_record_number end
  where p.user_id = target and (org is null or p.organization_id = org);
  return result;
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
revoke all on function app.erase_patient_records_0059(uuid, uuid) from public;
