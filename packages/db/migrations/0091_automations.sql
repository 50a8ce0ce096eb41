-- Automation rules, their runs and the append-only execution trail (docs/automations.md).
--
-- A rule has one trigger (a domain event type, an offset from an appointment's start, or a daily schedule
-- over a segment), optional conditions in the segment criteria language, and a list of actions. Each time a
-- trigger fires for a target (a patient, or a guest's appointment) the worker makes one run: unique per
-- (rule, trigger, target), the idempotency key of everything the run does. Every action of a run ends as
-- one row of automation_executions, which nothing updates or deletes.

-- Quiet hours of an organization, in its zone (organization_settings.default_timezone): messages due inside
-- them wait for their end. No row, or null bounds: no quiet hours.
create table automation_settings (
  organization_id uuid primary key references organizations (id) on delete cascade,
  quiet_hours_start time,
  quiet_hours_end time,
  updated_at timestamptz not null default now(),
  check ((quiet_hours_start is null) = (quiet_hours_end is null) and (quiet_hours_start is null or quiet_hours_start <> quiet_hours_end))
);
select app.secure_table('automation_settings', 'select, insert, update');
create policy automation_settings_read on automation_settings for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('automations.view_org')) or (select app.has_permission('automations.manage')))
);
create policy automation_settings_write on automation_settings for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')));

create table automation_rules (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 2000),
  status text not null default 'active' check (status in ('active', 'paused')),
  "trigger" jsonb not null check (jsonb_typeof("trigger") = 'object'),
  conditions jsonb check (conditions is null or jsonb_typeof(conditions) = 'object'),
  actions jsonb not null check (jsonb_typeof(actions) = 'array' and jsonb_array_length(actions) between 1 and 10),
  -- What the worker selects on, kept from the trigger by the database.
  trigger_type text generated always as ("trigger" ->> 'type') stored,
  event_type text generated always as ("trigger" ->> 'event_type') stored,
  offset_minutes integer generated always as (("trigger" ->> 'offset_minutes')::integer) stored,
  -- Moves on every change; each run and execution says which version it followed (the audit log has the diff).
  version integer not null default 1 check (version >= 1),
  created_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- Deleted rules stay (their runs and executions name them) but never fire again.
  deleted_at timestamptz,
  primary key (organization_id, id),
  check (trigger_type in ('event', 'appointment_offset', 'schedule'))
);
create index automation_rules_org_created_idx on automation_rules (organization_id, created_at desc, id desc) where deleted_at is null;
create index automation_rules_event_idx on automation_rules (organization_id, event_type) where status = 'active' and deleted_at is null and trigger_type = 'event';
create index automation_rules_offset_idx on automation_rules (trigger_type) where status = 'active' and deleted_at is null;
create trigger automation_rules_touch before update on automation_rules for each row execute function app.touch_updated_at();
select app.secure_table('automation_rules', 'select, insert, update');
create policy automation_rules_read on automation_rules for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('automations.view_org')) or (select app.has_permission('automations.manage')))
);
create policy automation_rules_write on automation_rules for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')));

-- One run per (rule, trigger, target). trigger_key: `event:<event id>`, `appointment:<id>@<start>` for an
-- offset trigger (a moved appointment is a new appointment, so a new key), `schedule:<local date>`.
-- target_key: `patient:<id>` or `appointment:<id>` (a guest). Erasure clears the patient and the keys' ids.
create table automation_runs (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  rule_id uuid not null,
  rule_version integer not null,
  trigger_type text not null,
  trigger_key text not null check (length(trigger_key) <= 200),
  target_key text not null check (length(target_key) <= 200),
  patient_id uuid,
  appointment_id uuid,
  -- When the trigger fired (the nominal time) and when the run may next act (quiet hours, retries).
  fired_at timestamptz not null default now(),
  not_before timestamptz not null default now(),
  status text not null default 'queued' check (status in ('queued', 'done', 'cancelled')),
  attempts integer not null default 0,
  last_error text check (length(last_error) <= 1000),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  primary key (organization_id, id),
  unique (organization_id, rule_id, trigger_key, target_key),
  foreign key (organization_id, rule_id) references automation_rules (organization_id, id),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete set null (patient_id),
  foreign key (organization_id, appointment_id) references appointments (organization_id, id) on delete set null (appointment_id)
);
create index automation_runs_rule_idx on automation_runs (organization_id, rule_id, created_at desc);
create index automation_runs_queued_idx on automation_runs (not_before) where status = 'queued';
create index automation_runs_patient_idx on automation_runs (organization_id, patient_id) where patient_id is not null;
create index automation_runs_appointment_idx on automation_runs (organization_id, appointment_id) where appointment_id is not null;
-- The worker writes runs (as the owner); staff read them through the executions.
select app.secure_table('automation_runs', 'select');
create policy automation_runs_read on automation_runs for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('automations.view_org')) or (select app.has_permission('automations.manage')))
);

-- The trail (spec 4.5: GET /v1/automation-executions): one row per run of every action, written once when
-- the action ends (succeeded, failed after its attempts, or skipped with the reason), never changed. It names
-- no person: the run carries the target, and an erasure removes it there. No foreign keys, as for audit_logs
-- and break_glass_sessions: a cascade would have to delete history, which the append-only trigger refuses.
create table automation_executions (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  run_id uuid not null,
  rule_id uuid not null,
  rule_version integer not null,
  trigger_type text not null,
  action_index integer not null check (action_index between 0 and 9),
  action_type text not null,
  status text not null check (status in ('succeeded', 'failed', 'skipped')),
  attempts integer not null default 1 check (attempts >= 0),
  error text check (length(error) <= 1000),
  message_id uuid,
  created_at timestamptz not null default now(),
  primary key (organization_id, id),
  -- The idempotency key of an action: once recorded, no retry or second worker records (or sends) it again.
  unique (organization_id, run_id, action_index)
);
create index automation_executions_org_created_idx on automation_executions (organization_id, created_at desc, id desc);
create index automation_executions_rule_idx on automation_executions (organization_id, rule_id, created_at desc);
select app.append_only('automation_executions');
create policy automation_executions_read on automation_executions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('automations.view_org')) or (select app.has_permission('automations.manage')))
);

-- Tags on patient records (a segment criterion; the add_tag action).
create table patient_tags (
  organization_id uuid not null,
  patient_id uuid not null,
  tag text not null check (tag ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
  created_at timestamptz not null default now(),
  primary key (organization_id, patient_id, tag),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade
);
create index patient_tags_tag_idx on patient_tags (organization_id, tag, patient_id);
select app.secure_table('patient_tags', 'select, insert, delete');
create policy patient_tags_read on patient_tags for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('patients.view_org')) or (select app.has_permission('segments.view_org'))
       or (select app.has_permission('segments.manage')))
);
create policy patient_tags_write on patient_tags for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('patients.update_org')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('patients.update_org')));
