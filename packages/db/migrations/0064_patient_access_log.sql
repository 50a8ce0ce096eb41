-- Reads of patient data (spec 6.2: "every authenticated action"): who read which patients' records,
-- profiles, forms, files and consents, when, from where and under which action context (impersonation,
-- break-glass). Apart from the hash-chained audit_logs, which changes feed: reads are many and must not
-- queue behind the chain's per-organization lock. The API writes entries in batches (one insert for all
-- the reads of a few milliseconds) and answers a read only once its entry is stored (platform/
-- access-log.ts), so a crash loses no entry of a read that was answered.
create table patient_access_log (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  occurred_at timestamptz not null default now(),
  -- Who read (the human behind an impersonation, not the patient it acted as).
  actor_user_id uuid,
  -- Whose data: one id for a record, the page's patients for a list.
  patient_ids uuid[] not null check (cardinality(patient_ids) between 1 and 500),
  action text not null check (action ~ '^[a-z][a-z0-9_.]*$'),
  -- The record read when it is not the patient itself (a form, a file, an exercise session).
  target_id uuid,
  action_context text check (action_context in ('impersonation', 'break_glass', 'caregiver')),
  -- The impersonation or break-glass session.
  context_id uuid,
  request_id text check (length(request_id) <= 100),
  ip inet,
  primary key (organization_id, id)
);
create index patient_access_log_org_time_idx on patient_access_log (organization_id, occurred_at desc, id desc);
create index patient_access_log_patients_idx on patient_access_log using gin (patient_ids);
select app.append_only('patient_access_log');
alter table patient_access_log enable row level security;
alter table patient_access_log force row level security;
-- The clinic reads its trail with audit_log.view_org; inserts come from the API's batch writer, which
-- runs as the owner outside request transactions (no insert grant to the application roles).
create policy patient_access_log_read on patient_access_log for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.has_permission('audit_log.view_org'))
);
revoke insert on patient_access_log from app_rls, app_bypass;

-- A person reads who read its own patient records (GET /v1/me/access-log), at every clinic where it is
-- a patient: the rows that name one of its patient ids.
create or replace function app.my_patient_ids() returns uuid[]
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select coalesce(array_agg(p.id), '{}') from public.patients p where p.user_id = app.current_principal_id()
$$;
revoke all on function app.my_patient_ids() from public;
grant execute on function app.my_patient_ids() to app_rls, app_bypass;
create policy patient_access_log_read_own on patient_access_log for select to app_rls using (
  patient_ids && (select app.my_patient_ids())
);
