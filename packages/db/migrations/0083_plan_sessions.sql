-- Plan sessions: one row per item of a plan day that the patient started, completed or
-- skipped. Starting creates the exercise session of spec 4.11 (for scorable items) and composes the item's
-- video; completing copies the telemetry results written at session end, with the scoring algorithm's
-- version and the software's labelling (docs/telerehab.md, the regulatory boundary).

create table plan_sessions (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  enrollment_id uuid not null,
  patient_id uuid not null,
  treatment_plan_id uuid not null,
  plan_version integer not null,
  plan_day integer not null check (plan_day >= 1),
  scheduled_on date not null,
  item_index integer not null check (item_index between 0 and 19),
  exercise_id uuid not null references exercises (id),
  status text not null check (status in ('started', 'completed', 'skipped')),
  -- The exercise session of the latest start (spec 4.11); null for items telemetry does not score.
  exercise_session_id uuid references exercise_sessions (id) on delete set null,
  starts integer not null default 0 check (starts >= 0),
  -- The item's video: the composer's render and the seed it was composed with.
  render_id uuid references exercise_renders (id) on delete set null,
  seed bigint,
  started_at timestamptz,
  completed_at timestamptz,
  skipped_at timestamptz,
  skip_reason text check (length(btrim(skip_reason)) between 1 and 500),
  -- Results, as telemetry computed them, with the version of the scoring algorithm and of the software.
  rep_count integer check (rep_count >= 0),
  form_score integer check (form_score between 0 and 100),
  rom jsonb check (rom is null or jsonb_typeof(rom) = 'object'),
  duration_s numeric check (duration_s >= 0),
  algorithm_version text check (length(algorithm_version) between 1 and 100),
  software_version text check (length(software_version) <= 100),
  udi_di text check (length(udi_di) <= 100),
  -- Self-reports, when the plan asks for them.
  pain smallint check (pain between 0 and 10),
  effort smallint check (effort between 0 and 10),
  patient_note text check (length(patient_note) <= 2000),
  acted_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  -- One row per item of a scheduled date: a second start or skip of the same item finds it (races included).
  unique (organization_id, enrollment_id, scheduled_on, item_index),
  foreign key (organization_id, enrollment_id) references treatment_enrollments (organization_id, id) on delete cascade,
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade,
  foreign key (organization_id, treatment_plan_id, plan_version)
    references treatment_plan_versions (organization_id, treatment_plan_id, version),
  check ((status = 'skipped') = (skip_reason is not null) and (status = 'skipped') = (skipped_at is not null)),
  check ((status = 'completed') = (completed_at is not null)),
  -- Every result carries the version of the algorithm that produced it.
  check ((rep_count is null and form_score is null and rom is null) or algorithm_version is not null)
);
create index plan_sessions_enrollment_idx on plan_sessions (organization_id, enrollment_id, scheduled_on);
create index plan_sessions_patient_idx on plan_sessions (organization_id, patient_id, scheduled_on);
create index plan_sessions_exercise_session_idx on plan_sessions (exercise_session_id) where exercise_session_id is not null;
create trigger plan_sessions_touch before update on plan_sessions for each row execute function app.touch_updated_at();

-- A completed or skipped session is a record: nothing changes it any more, for every role (the owner too),
-- except the exercise session's removal by retention or erasure (on delete set null).
create or replace function app.plan_session_closed_guard() returns trigger
language plpgsql as $$
begin
  if old.status in ('completed', 'skipped')
     and (to_jsonb(new) - 'exercise_session_id' - 'render_id' - 'updated_at') is distinct from (to_jsonb(old) - 'exercise_session_id' - 'render_id' - 'updated_at') then
    raise exception 'plan session % is %: it does not change', old.id, old.status using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
create trigger plan_sessions_closed before update on plan_sessions for each row execute function app.plan_session_closed_guard();

select app.secure_table('plan_sessions', 'select, insert, update');
-- Staff who see plans or review telemetry read the clinic's; the patient (or its caregiver) its own, and only
-- it starts, completes and skips them.
create policy plan_sessions_read on plan_sessions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.view_org')) or (select app.has_permission('telemetry.view_org'))
       or patient_id = (select app.current_patient_id()))
);
create policy plan_sessions_write on plan_sessions for all to app_rls
  using (organization_id = (select app.current_org_id()) and patient_id = (select app.current_patient_id()))
  with check (organization_id = (select app.current_org_id()) and patient_id = (select app.current_patient_id()));

-- The person whose patient record the request acts for (its own, or a caregiver's patient): exercise sessions
-- and their metrics name people (users), not patient records.
create or replace function app.current_patient_user_id() returns uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
begin
  return (select p.user_id from public.patients p
          where p.organization_id = app.current_org_id() and p.id = app.current_patient_id());
end $$;
revoke all on function app.current_patient_user_id() from public;
grant execute on function app.current_patient_user_id() to app_rls, app_bypass;

-- A caregiver starts and reads the exercise sessions of the patient it acts for (the patient's own
-- policies of 0050 name the caller itself).
create policy exercise_sessions_insert_caregiver on exercise_sessions for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and patient_user_id = (select app.current_patient_user_id())
);
create policy exercise_sessions_read_caregiver on exercise_sessions for select to app_rls using (
  organization_id = (select app.current_org_id()) and patient_user_id = (select app.current_patient_user_id())
);
create policy pose_session_metrics_read_caregiver on pose_session_metrics for select to app_rls using (
  organization_id = (select app.current_org_id()) and patient_user_id = (select app.current_patient_user_id())
);

-- Whether the patient the request acts for may start a session: a GDPR restriction of processing (platform-wide
-- or at the organization), and which of the purposes asked for it has no active grant of at the organization.
-- Definer: a caregiver cannot read the patient's ledger, and needs no more than this answer.
create or replace function app.current_patient_consent_gaps(codes text[]) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
  u uuid := app.current_patient_user_id();
  org uuid := app.current_org_id();
begin
  if u is null then
    return jsonb_build_object('restricted', false, 'missing', to_jsonb(codes));
  end if;
  return jsonb_build_object(
    'restricted', exists (select 1 from public.gdpr_restrictions r where r.user_id = u and r.lifted_at is null
                            and (r.organization_id is null or r.organization_id = org)),
    'missing', coalesce((select jsonb_agg(c order by c) from unnest(codes) c
                         where not exists (select 1 from public.consent_ledger l where l.patient_profile_id = u and l.organization_id = org
                                             and l.purpose_code = c and l.withdrawn_at is null)), '[]'::jsonb));
end $$;
revoke all on function app.current_patient_consent_gaps(text[]) from public;
grant execute on function app.current_patient_consent_gaps(text[]) to app_rls, app_bypass;
