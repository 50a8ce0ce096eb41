-- One rule for every way a person becomes a patient of a clinic (spec 4.6 rule 5): the clinic must have
-- published its own org_privacy_notice (a platform default text does not count: the clinic is the
-- controller of its patients' data). Portal onboarding (app.onboard_patient), staff creation
-- (POST /v1/patients) and the just-in-time link of a first sign-in with X-Organization-ID all ask this
-- function; onboarding and staff creation answer 409 privacy_notice_missing, the just-in-time link
-- provisions the user without the patient link.
create or replace function app.org_accepts_patients(org uuid) returns boolean
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select exists (
    select 1 from public.consent_purpose_versions v where v.purpose_code = 'org_privacy_notice' and v.organization_id = org
  )
$$;
revoke all on function app.org_accepts_patients(uuid) from public;
grant execute on function app.org_accepts_patients(uuid) to app_rls, app_bypass;

create or replace function app.onboard_patient(org uuid)
returns table (patient_id uuid, status text)
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  me uuid := app.current_principal_id();
  row_id uuid;
  was_deleted boolean;
begin
  if me is null then
    raise exception 'no principal' using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from organizations o where o.id = org) then
    raise exception 'organization_not_found' using errcode = 'P0001';
  end if;
  if not app.org_accepts_patients(org) then
    raise exception 'privacy_notice_missing' using errcode = 'P0001';
  end if;
  select p.id, p.deleted_at is not null into row_id, was_deleted from patients p where p.organization_id = org and p.user_id = me for update;
  if row_id is null then
    insert into patients (organization_id, user_id) values (org, me) returning id into row_id;
    return query select row_id, 'created'::text;
  elsif was_deleted then
    update patients set deleted_at = null where id = row_id;
    return query select row_id, 'revived'::text;
  else
    return query select row_id, 'existing'::text;
  end if;
end $$;
