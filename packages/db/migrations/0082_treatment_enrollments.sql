-- Enrollment in treatment plans (spec 3.5 "enrollment supports pause, resume, cancel"):
-- a patient follows one published version of a plan (pinned: publishing a later version changes nothing
-- until staff migrate the enrollment), from a start date, on chosen weekdays in a time zone. Plan day n is
-- the n-th scheduled date: a date on or after the start, on one of the weekdays, not inside a pause.
-- And the organizations' own treatment_specific_* consent purposes, which plans require.

create table treatment_enrollments (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  treatment_plan_id uuid not null,
  plan_version integer not null,
  patient_id uuid not null,
  status text not null default 'active' check (status in ('active', 'paused', 'cancelled')),
  start_date date not null,
  -- ISO weekdays (1 Monday .. 7 Sunday) on which plan days fall.
  weekdays smallint[] not null check (cardinality(weekdays) between 1 and 7 and weekdays <@ '{1,2,3,4,5,6,7}'::smallint[]),
  time_zone text not null check (length(time_zone) between 1 and 64),
  status_changed_at timestamptz not null default now(),
  cancel_reason text check (length(cancel_reason) between 1 and 500),
  cancelled_at timestamptz,
  cancelled_by_principal_id uuid,
  enrolled_by_principal_id uuid not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  -- Pinned to a version that exists (versions are never deleted but with the plan, at an erasure).
  foreign key (organization_id, treatment_plan_id, plan_version)
    references treatment_plan_versions (organization_id, treatment_plan_id, version),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade,
  check ((status = 'cancelled') = (cancelled_at is not null)),
  check ((cancelled_at is null) = (cancel_reason is null))
);
-- A patient is in a plan at most once at a time: concurrent enrollments of the same patient in the same
-- plan give one enrollment and a 409.
create unique index treatment_enrollments_live_key on treatment_enrollments (organization_id, patient_id, treatment_plan_id)
  where status in ('active', 'paused');
create index treatment_enrollments_patient_idx on treatment_enrollments (organization_id, patient_id, created_at desc);
create index treatment_enrollments_live_idx on treatment_enrollments (organization_id, created_at desc) where status in ('active', 'paused');
create trigger treatment_enrollments_touch before update on treatment_enrollments for each row execute function app.touch_updated_at();

-- Pauses, kept as history: the dates they cover are not scheduled (paused_on inclusive, resumed_on exclusive,
-- local dates in the enrollment's zone).
create table treatment_enrollment_pauses (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  enrollment_id uuid not null,
  paused_on date not null,
  resumed_on date,
  pause_reason text not null check (length(btrim(pause_reason)) between 1 and 500),
  resume_reason text check (length(btrim(resume_reason)) between 1 and 500),
  paused_by_principal_id uuid not null,
  resumed_by_principal_id uuid,
  paused_at timestamptz not null default now(),
  resumed_at timestamptz,
  primary key (organization_id, id),
  foreign key (organization_id, enrollment_id) references treatment_enrollments (organization_id, id) on delete cascade,
  check (resumed_on is null or resumed_on >= paused_on),
  check ((resumed_at is null) = (resumed_on is null) and (resumed_at is null) = (resumed_by_principal_id is null))
);
-- At most one open pause per enrollment.
create unique index treatment_enrollment_pauses_open_key on treatment_enrollment_pauses (organization_id, enrollment_id) where resumed_on is null;

-- An enrollment is paused exactly when it has an open pause: checked at commit, after both rows changed.
create or replace function app.treatment_enrollment_pause_consistent() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  e record;
  -- The enrollment of either table's row (PL/pgSQL binds record fields per table, so read them as JSON).
  eid uuid := (to_jsonb(new) ->> case when tg_table_name = 'treatment_enrollments' then 'id' else 'enrollment_id' end)::uuid;
begin
  select x.organization_id, x.id, x.status into e from treatment_enrollments x
  where x.organization_id = new.organization_id and x.id = eid;
  if e.id is null then
    return null;
  end if;
  if (e.status = 'paused') <> exists (select 1 from treatment_enrollment_pauses p
                                      where p.organization_id = e.organization_id and p.enrollment_id = e.id and p.resumed_on is null) then
    raise exception 'enrollment %: paused exactly while a pause is open', e.id using errcode = 'check_violation';
  end if;
  return null;
end $$;
revoke all on function app.treatment_enrollment_pause_consistent() from public;
create constraint trigger treatment_enrollments_pause_consistent after insert or update on treatment_enrollments
  deferrable initially deferred for each row execute function app.treatment_enrollment_pause_consistent();
create constraint trigger treatment_enrollment_pauses_consistent after insert or update on treatment_enrollment_pauses
  deferrable initially deferred for each row execute function app.treatment_enrollment_pause_consistent();

select app.secure_table('treatment_enrollments', 'select, insert, update');
select app.secure_table('treatment_enrollment_pauses', 'select, insert, update');
-- Staff who see or assign plans read the clinic's enrollments, as do clinicians reviewing telemetry; the
-- patient (or its caregiver) its own. Staff with treatment_plans.assign enroll, pause, resume, cancel and
-- migrate; the patient pauses and resumes its own (the service refuses it the rest).
create policy treatment_enrollments_read on treatment_enrollments for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.view_org')) or (select app.has_permission('treatment_plans.assign'))
       or (select app.has_permission('telemetry.view_org')) or patient_id = (select app.current_patient_id()))
);
create policy treatment_enrollments_insert on treatment_enrollments for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('treatment_plans.assign'))
);
create policy treatment_enrollments_update on treatment_enrollments for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('treatment_plans.assign')) or patient_id = (select app.current_patient_id())))
  with check (organization_id = (select app.current_org_id()));
create policy treatment_enrollment_pauses_read on treatment_enrollment_pauses for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from treatment_enrollments e where e.organization_id = treatment_enrollment_pauses.organization_id
                and e.id = treatment_enrollment_pauses.enrollment_id)
);
create policy treatment_enrollment_pauses_write on treatment_enrollment_pauses for all to app_rls
  using (organization_id = (select app.current_org_id())
         and exists (select 1 from treatment_enrollments e where e.organization_id = treatment_enrollment_pauses.organization_id
                       and e.id = treatment_enrollment_pauses.enrollment_id
                       and ((select app.has_permission('treatment_plans.assign')) or e.patient_id = (select app.current_patient_id()))))
  with check (organization_id = (select app.current_org_id()));

-- A patient (or its caregiver) reads the plan versions it is enrolled in: that is its prescription.
create policy treatment_plan_versions_read_enrolled on treatment_plan_versions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from treatment_enrollments e
              where e.organization_id = treatment_plan_versions.organization_id and e.treatment_plan_id = treatment_plan_versions.treatment_plan_id
                and e.plan_version = treatment_plan_versions.version and e.patient_id = (select app.current_patient_id()))
);

-- The scheduled dates of an enrollment up to a date, numbered: plan day n is the n-th (docs/telerehab.md).
-- Runs as the caller (inlined), the pauses under its policies.
create or replace function app.enrollment_schedule(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], e_until date)
returns table (day date, plan_day integer)
language sql stable as $$
  select d::date, (row_number() over (order by d))::integer
  from generate_series(e_start::timestamp, e_until::timestamp, interval '1 day') d
  where extract(isodow from d)::integer = any(e_weekdays)
    and not exists (select 1 from public.treatment_enrollment_pauses p
                    where p.organization_id = e_org and p.enrollment_id = e_id
                      and d::date >= p.paused_on and (p.resumed_on is null or d::date < p.resumed_on))
$$;

-- ---------------------------------------------------------------------------------------------
-- Organizations' own consent purposes (0081 added the column): created with consents.manage at the
-- organization in scope; read by that organization's callers, and by the people who hold a consent row of it.
grant insert on consent_purposes to app_rls, app_bypass;
drop policy consent_purposes_read on consent_purposes;
create policy consent_purposes_read on consent_purposes for select to app_rls using (
  organization_id is null
  or organization_id = (select app.current_org_id())
  or exists (select 1 from consent_ledger l where l.purpose_code = consent_purposes.code)
);
create policy consent_purposes_insert on consent_purposes for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('consents.manage'))
);

-- A purpose of an organization is that organization's alone: its texts and its consents are there.
create or replace function app.consent_purpose_owner_rule() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  owner uuid;
begin
  select cp.organization_id into owner from consent_purposes cp where cp.code = new.purpose_code;
  if owner is not null and new.organization_id is distinct from owner then
    raise exception 'purpose % belongs to another organization', new.purpose_code using errcode = 'check_violation';
  end if;
  return new;
end $$;
revoke all on function app.consent_purpose_owner_rule() from public;
create trigger consent_purpose_versions_owner before insert on consent_purpose_versions
  for each row execute function app.consent_purpose_owner_rule();
create trigger consent_ledger_owner before insert on consent_ledger
  for each row execute function app.consent_purpose_owner_rule();
