-- Consent (spec 2.8, 3.2, 4.6): the purpose catalog, published purpose texts (platform defaults and
-- clinic overrides) and the consent ledger, append-only apart from its withdrawal columns.

-- ---------------------------------------------------------------------------------------------
-- Purpose catalog. Created only by migrations, like the permission catalog.
create table consent_purposes (
  code text primary key check (code ~ '^[a-z][a-z0-9_]*$'),
  scope text not null check (scope in ('platform', 'org')),
  name text not null,
  description text not null,
  legal_basis text not null check (legal_basis in ('contract', 'legitimate_interest', 'consent', 'legal_obligation', 'vital_interest')),
  -- Spec 2.8: withdrawable iff the legal basis is consent. Derived, so it can never disagree.
  withdrawable boolean generated always as (legal_basis = 'consent') stored,
  -- Required purposes are what the universal re-consent gate (spec 4.6 rule 3) asks for, once a
  -- version of them is published: the non-consent legal bases (terms and privacy notices). A purpose
  -- resting on consent can never be a precondition of using the service (GDPR art. 7(4)).
  required boolean not null default false,
  constraint consent_purposes_required_not_consent check (not (required and legal_basis = 'consent'))
);

insert into consent_purposes (code, scope, name, description, legal_basis, required) values
  ('platform_terms', 'platform', 'Platform terms of service', 'The terms of use of the platform.', 'contract', true),
  ('platform_privacy_notice', 'platform', 'Platform privacy notice', 'How the platform operator processes personal data.', 'legitimate_interest', true),
  ('org_terms', 'org', 'Clinic terms', 'The terms of the clinic the patient is registered with.', 'contract', true),
  ('org_privacy_notice', 'org', 'Clinic privacy notice', 'How the clinic, as controller, processes the patient''s personal and health data.', 'legal_obligation', true),
  ('marketing_email', 'org', 'Marketing by email', 'News and offers from the clinic by email.', 'consent', false),
  ('marketing_sms', 'org', 'Marketing by SMS', 'News and offers from the clinic by text message.', 'consent', false),
  ('analytics', 'org', 'Analytics', 'Usage and session metrics used to improve care and the service.', 'consent', false),
  ('ai_processing', 'org', 'AI processing', 'Processing of the patient''s data by AI-assisted features.', 'consent', false),
  ('profile_sharing', 'org', 'Profile sharing', 'Sharing the patient''s profile with the clinic''s specialists.', 'consent', false),
  ('telemedicine', 'org', 'Telemedicine', 'Remote consultations by video or audio.', 'consent', false),
  ('video_recording', 'org', 'Video recording', 'Recording of video sessions for clinical review.', 'consent', false),
  ('biometric_capture', 'org', 'Biometric capture', 'Capture of body pose and movement data during exercise sessions.', 'consent', false),
  ('biometric', 'org', 'Biometric telemetry', 'Processing of biometric telemetry (pose frames) by the telemetry service.', 'consent', false);

select app.secure_table('consent_purposes', 'select');
create policy consent_purposes_read on consent_purposes for select to app_rls using (true);

-- ---------------------------------------------------------------------------------------------
-- Published texts. organization_id null = platform default; non-null = clinic override, allowed only
-- for org-scope purposes. No version is seeded: a required purpose without a published version is not
-- required yet (the gate asks only for what an operator has published).
create table consent_purpose_versions (
  id uuid primary key default app.uuid_v7(),
  purpose_code text not null references consent_purposes (code),
  -- No cascade: an organization that published texts patients accepted keeps them (legal evidence).
  organization_id uuid references organizations (id),
  version int not null check (version > 0),
  -- Language code -> text; 'en' is required (front-ends fall back to en, spec 2.5).
  body_translations jsonb not null check (
    jsonb_typeof(body_translations) = 'object' and jsonb_typeof(body_translations -> 'en') = 'string'
  ),
  published_at timestamptz not null default now(),
  published_by_principal_id uuid not null,
  created_at timestamptz not null default now()
);
create unique index consent_purpose_versions_key
  on consent_purpose_versions (purpose_code, coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), version);

-- The gate's lookups: latest version of a purpose, platform (null) or at one organization.
create index consent_purpose_versions_latest_idx on consent_purpose_versions (purpose_code, organization_id, version desc);

create or replace function app.consent_version_scope_rule() returns trigger
language plpgsql as $$
begin
  if new.organization_id is not null and (select scope from public.consent_purposes where code = new.purpose_code) <> 'org' then
    raise exception 'purpose % is platform-scope: it has no clinic overrides', new.purpose_code using errcode = 'check_violation';
  end if;
  return new;
end $$;
create trigger consent_purpose_versions_scope before insert on consent_purpose_versions
  for each row execute function app.consent_version_scope_rule();

select app.append_only('consent_purpose_versions');
create policy consent_purpose_versions_read on consent_purpose_versions for select to app_rls using (true);
-- Clinic overrides only, at the organization in scope, with consents.manage, in the publisher's own name.
-- Platform defaults are written by superadmins (app_bypass) only.
create policy consent_purpose_versions_insert on consent_purpose_versions for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and (select app.has_permission('consents.manage'))
  and published_by_principal_id = (select app.current_principal_id())
);

-- ---------------------------------------------------------------------------------------------
-- The ledger (spec 2.8). patient_profile_id is the user id of the person the consent is about (a
-- person has one profile across clinics; the patients row is per clinic). No foreign keys on the
-- organization or the people, as for audit_logs: the ledger outlives what it describes and a cascade
-- would rewrite history. The current state of (patient, organization, purpose) is its latest active row.
create table consent_ledger (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid,
  patient_profile_id uuid not null,
  purpose_code text not null references consent_purposes (code),
  purpose_version int not null check (purpose_version > 0),
  source text not null check (source in ('signup_checkbox', 'self_toggle', 'form', 'staff_action', 'api')),
  source_form_id uuid check (source_form_id is null or source = 'form'),
  granted_at timestamptz not null default now(),
  granted_by_principal_id uuid not null,
  granted_via_ip inet,
  withdrawn_at timestamptz,
  withdrawn_by_principal_id uuid,
  withdrawal_reason text check (length(withdrawal_reason) <= 1000),
  created_at timestamptz not null default now(),
  constraint consent_ledger_withdrawal_complete check (
    (withdrawn_at is null) = (withdrawn_by_principal_id is null)
    and (withdrawal_reason is null or withdrawn_at is not null)
  )
);
create index consent_ledger_subject_idx on consent_ledger (patient_profile_id, purpose_code, organization_id, granted_at desc);
create index consent_ledger_org_idx on consent_ledger (organization_id, patient_profile_id);

-- Append-only except the withdrawal of an active row, once: any other change raises, for every role
-- (the owner included), and so do deletes and truncates.
create or replace function app.consent_ledger_guard() returns trigger
language plpgsql as $$
begin
  if tg_op <> 'UPDATE' then
    raise exception 'consent_ledger is append-only: % is not allowed', lower(tg_op) using errcode = 'insufficient_privilege';
  end if;
  if old.withdrawn_at is not null then
    raise exception 'consent_ledger: row % is already withdrawn', old.id using errcode = 'insufficient_privilege';
  end if;
  if new.withdrawn_at is null
     or (new.id, new.organization_id, new.patient_profile_id, new.purpose_code, new.purpose_version, new.source,
         new.source_form_id, new.granted_at, new.granted_by_principal_id, new.granted_via_ip, new.created_at)
        is distinct from
        (old.id, old.organization_id, old.patient_profile_id, old.purpose_code, old.purpose_version, old.source,
         old.source_form_id, old.granted_at, old.granted_by_principal_id, old.granted_via_ip, old.created_at) then
    raise exception 'consent_ledger: only the withdrawal of an active row may be recorded' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
create trigger consent_ledger_guard before update or delete on consent_ledger
  for each row execute function app.consent_ledger_guard();
create trigger consent_ledger_no_truncate before truncate on consent_ledger
  for each statement execute function app.forbid_change();

select app.secure_table('consent_ledger', 'select, insert');
grant update (withdrawn_at, withdrawn_by_principal_id, withdrawal_reason) on consent_ledger to app_rls, app_bypass;

-- A person reads, grants and withdraws their own rows; an organization-scope grant of their own only
-- where they are a patient (a live patients row). Staff: consents.view_org (or consents.manage) reads
-- the rows of the organization in scope; consents.manage grants and withdraws there.
create policy consent_ledger_read on consent_ledger for select to app_rls using (
  patient_profile_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id())
      and ((select app.has_permission('consents.view_org')) or (select app.has_permission('consents.manage'))))
);
create policy consent_ledger_insert on consent_ledger for insert to app_rls with check (
  granted_by_principal_id = (select app.current_principal_id())
  and (
    (patient_profile_id = (select app.current_principal_id())
     and (organization_id is null
          or exists (select 1 from patients p where p.organization_id = consent_ledger.organization_id
                       and p.user_id = consent_ledger.patient_profile_id and p.deleted_at is null)))
    or (organization_id = (select app.current_org_id()) and (select app.has_permission('consents.manage')))
  )
);
create policy consent_ledger_withdraw on consent_ledger for update to app_rls
  using (
    patient_profile_id = (select app.current_principal_id())
    or (organization_id = (select app.current_org_id()) and (select app.has_permission('consents.manage')))
  )
  with check (withdrawn_by_principal_id = (select app.current_principal_id()));

-- Cascade of spec 3.2, as a database trigger (spec 6.2): withdrawing profile_sharing sets the patient's
-- profile_shared to false at that organization, in the same transaction. Runs as the owner: the
-- application roles have no write access to patients rows for this.
create or replace function app.consent_withdrawal_cascade() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
begin
  if new.purpose_code = 'profile_sharing' and new.organization_id is not null then
    update patients set profile_shared = false
    where organization_id = new.organization_id and user_id = new.patient_profile_id and profile_shared;
  end if;
  return null;
end $$;
create trigger consent_ledger_withdrawal_cascade after update of withdrawn_at on consent_ledger
  for each row when (old.withdrawn_at is null and new.withdrawn_at is not null)
  execute function app.consent_withdrawal_cascade();

-- Staff consent routes name a patient by its patients row (per clinic); the ledger names the person.
-- Staff with consents.view_org or consents.manage need that mapping without patients.view_org (which
-- would show them every patient row): this answers only "whose is this live patient row of the
-- organization in scope?", like app.user_id_by_email.
create or replace function app.consent_patient_user_id(patient uuid) returns uuid
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select p.user_id
  from public.patients p
  where p.id = patient
    and p.organization_id = (select app.current_org_id())
    and p.deleted_at is null
    and ((select app.has_permission('consents.view_org')) or (select app.has_permission('consents.manage'))
         or current_setting('role', true) = 'app_bypass')
$$;
revoke all on function app.consent_patient_user_id(uuid) from public;
grant execute on function app.consent_patient_user_id(uuid) to app_rls, app_bypass;

-- Patient onboarding (POST /v1/portal/onboard): the caller becomes a patient of the organization, or
-- revives its soft-deleted record there. Refused unless the clinic has published its own
-- org_privacy_notice (spec 4.6 rule 5; a platform default text does not count: the clinic is the
-- controller of its patients' data and must publish its notice). Runs as the owner because the
-- application roles have no write access to patients rows; it only ever writes the caller's own row.
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
  if not exists (select 1 from consent_purpose_versions v where v.purpose_code = 'org_privacy_notice' and v.organization_id = org) then
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
revoke all on function app.onboard_patient(uuid) from public;
grant execute on function app.onboard_patient(uuid) to app_rls, app_bypass;

-- ---------------------------------------------------------------------------------------------
-- Default grants: consents.view_org and consents.manage for the admin template and for every
-- organization's existing admin clone (organizations created later copy the template).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r cross join (values ('consents.view_org'), ('consents.manage')) as g (code)
where r.code = 'admin' and r.is_system
on conflict do nothing;
