-- The current schema, generated from the migrations by `npm run docs:schema`: do not edit by hand.
-- The migrations in packages/db/migrations are the source; this file shows where they have led.

create table public.appointment_files (
  organization_id uuid not null,
  id uuid not null,
  appointment_id uuid not null,
  asset_key text not null,
  filename text not null,
  content_type text not null,
  size_bytes bigint not null,
  sha256 text not null,
  uploaded_by text not null,
  uploaded_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  constraint appointment_files_asset_key_check CHECK ((length(asset_key) <= 300)),
  constraint appointment_files_content_type_check CHECK (((length(content_type) >= 1) AND (length(content_type) <= 100))),
  constraint appointment_files_filename_check CHECK (((length(filename) >= 1) AND (length(filename) <= 255))),
  constraint appointment_files_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
  constraint appointment_files_size_bytes_check CHECK ((size_bytes >= 0)),
  constraint appointment_files_uploaded_by_check CHECK ((uploaded_by = ANY (ARRAY['staff'::text, 'patient'::text]))),
  constraint appointment_files_organization_id_appointment_id_fkey FOREIGN KEY (organization_id, appointment_id) REFERENCES appointments(organization_id, id) ON DELETE CASCADE,
  constraint appointment_files_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint appointment_files_pkey PRIMARY KEY (organization_id, id),
  constraint appointment_files_organization_id_asset_key_key UNIQUE (organization_id, asset_key)
);
alter table public.appointment_files enable row level security;
alter table public.appointment_files force row level security;
CREATE INDEX appointment_files_appointment_idx ON public.appointment_files USING btree (organization_id, appointment_id, created_at);
create policy appointment_files_delete on public.appointment_files as permissive for delete to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM appointments a
  WHERE ((a.organization_id = appointment_files.organization_id) AND (a.id = appointment_files.appointment_id) AND (( SELECT app.has_permission('appointments.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('appointments.update_own'::text) AS has_permission) AND (a.specialist_id = ( SELECT app.own_specialist_id() AS own_specialist_id))) OR ((appointment_files.uploaded_by = 'patient'::text) AND (a.patient_id IS NOT NULL) AND (a.patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))))))));
create policy appointment_files_insert on public.appointment_files as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (uploaded_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (EXISTS ( SELECT 1
   FROM appointments a
  WHERE ((a.organization_id = appointment_files.organization_id) AND (a.id = appointment_files.appointment_id) AND (a.status <> ALL (ARRAY['cancelled'::text, 'rescheduled'::text])) AND
        CASE appointment_files.uploaded_by
            WHEN 'staff'::text THEN (( SELECT app.has_permission('appointments.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('appointments.update_own'::text) AS has_permission) AND (a.specialist_id = ( SELECT app.own_specialist_id() AS own_specialist_id))))
            ELSE ((a.patient_id IS NOT NULL) AND (a.patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))
        END)))));
create policy appointment_files_read on public.appointment_files as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM appointments a
  WHERE ((a.organization_id = appointment_files.organization_id) AND (a.id = appointment_files.appointment_id))))));

create table public.appointment_reviews (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  appointment_id uuid not null,
  patient_id uuid not null,
  rating smallint not null,
  comment text,
  author_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  constraint appointment_reviews_comment_check CHECK (((length(comment) >= 1) AND (length(comment) <= 2000))),
  constraint appointment_reviews_rating_check CHECK (((rating >= 1) AND (rating <= 5))),
  constraint appointment_reviews_organization_id_appointment_id_fkey FOREIGN KEY (organization_id, appointment_id) REFERENCES appointments(organization_id, id) ON DELETE CASCADE,
  constraint appointment_reviews_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint appointment_reviews_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE RESTRICT,
  constraint appointment_reviews_pkey PRIMARY KEY (organization_id, id),
  constraint appointment_reviews_organization_id_appointment_id_key UNIQUE (organization_id, appointment_id)
);
alter table public.appointment_reviews enable row level security;
alter table public.appointment_reviews force row level security;
CREATE INDEX appointment_reviews_patient_idx ON public.appointment_reviews USING btree (organization_id, patient_id);
create policy appointment_reviews_insert on public.appointment_reviews as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (author_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)) AND (EXISTS ( SELECT 1
   FROM appointments a
  WHERE ((a.organization_id = appointment_reviews.organization_id) AND (a.id = appointment_reviews.appointment_id) AND (a.patient_id = appointment_reviews.patient_id) AND (a.status = 'done'::text))))));
create policy appointment_reviews_read on public.appointment_reviews as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM appointments a
  WHERE ((a.organization_id = appointment_reviews.organization_id) AND (a.id = appointment_reviews.appointment_id))))));

create table public.appointments (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  service_id uuid not null,
  specialist_id uuid,
  location_id uuid,
  patient_id uuid,
  starts_at timestamp with time zone not null,
  ends_at timestamp with time zone not null,
  buffer_before_minutes integer not null default 0,
  buffer_after_minutes integer not null default 0,
  cancellation_window_minutes integer not null default 0,
  mode text not null,
  status text not null default 'scheduled'::text,
  source text not null,
  guest_name text,
  guest_email text,
  guest_phone text,
  guest_consents jsonb not null default '[]'::jsonb,
  notes text,
  patient_note text,
  rescheduled_from uuid,
  rescheduled_to uuid,
  cancelled_at timestamp with time zone,
  cancelled_by_principal_id uuid,
  cancellation_reason text,
  status_changed_at timestamp with time zone not null default now(),
  created_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  intake_form_template_id uuid,
  intake_template_version integer,
  intake_fields jsonb not null default '[]'::jsonb,
  intake_answers jsonb not null default '{}'::jsonb,
  constraint appointments_buffer_after_minutes_check CHECK (((buffer_after_minutes >= 0) AND (buffer_after_minutes <= 240))),
  constraint appointments_buffer_before_minutes_check CHECK (((buffer_before_minutes >= 0) AND (buffer_before_minutes <= 240))),
  constraint appointments_cancellation_reason_check CHECK ((length(cancellation_reason) <= 500)),
  constraint appointments_cancellation_window_minutes_check CHECK ((cancellation_window_minutes >= 0)),
  constraint appointments_check CHECK ((ends_at > starts_at)),
  constraint appointments_check1 CHECK (((patient_id IS NOT NULL) OR (guest_email IS NOT NULL))),
  constraint appointments_guest_consents_check CHECK ((jsonb_typeof(guest_consents) = 'array'::text)),
  constraint appointments_guest_email_check CHECK ((length(guest_email) <= 320)),
  constraint appointments_guest_name_check CHECK ((length(guest_name) <= 200)),
  constraint appointments_guest_phone_check CHECK ((length(guest_phone) <= 40)),
  constraint appointments_intake_answers_check CHECK ((jsonb_typeof(intake_answers) = 'object'::text)),
  constraint appointments_intake_fields_check CHECK ((jsonb_typeof(intake_fields) = 'array'::text)),
  constraint appointments_mode_check CHECK ((mode = ANY (ARRAY['in_person'::text, 'video'::text, 'phone'::text]))),
  constraint appointments_notes_check CHECK ((length(notes) <= 5000)),
  constraint appointments_patient_note_check CHECK ((length(patient_note) <= 2000)),
  constraint appointments_source_check CHECK ((source = ANY (ARRAY['staff'::text, 'patient'::text, 'guest'::text]))),
  constraint appointments_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'confirmed'::text, 'checked_in'::text, 'in_progress'::text, 'done'::text, 'cancelled'::text, 'no_show'::text, 'rescheduled'::text]))),
  constraint appointments_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint appointments_organization_id_location_id_fkey FOREIGN KEY (organization_id, location_id) REFERENCES locations(organization_id, id) ON DELETE RESTRICT,
  constraint appointments_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE RESTRICT,
  constraint appointments_organization_id_service_id_fkey FOREIGN KEY (organization_id, service_id) REFERENCES services(organization_id, id) ON DELETE RESTRICT,
  constraint appointments_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE SET NULL (specialist_id),
  constraint appointments_pkey PRIMARY KEY (organization_id, id)
);
alter table public.appointments enable row level security;
alter table public.appointments force row level security;
CREATE INDEX appointments_org_patient_cover_idx ON public.appointments USING btree (organization_id, patient_id, starts_at) INCLUDE (service_id, status, specialist_id) WHERE (patient_id IS NOT NULL);
CREATE INDEX appointments_org_specialist_idx ON public.appointments USING btree (organization_id, specialist_id, starts_at) WHERE (specialist_id IS NOT NULL);
CREATE INDEX appointments_org_start_idx ON public.appointments USING btree (organization_id, starts_at, id);
create policy appointments_delete on public.appointments as permissive for delete to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('appointments.delete'::text) AS has_permission)));
create policy appointments_insert on public.appointments as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.create'::text) AS has_permission) OR ((patient_id IS NOT NULL) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)) AND (source = 'patient'::text)))));
create policy appointments_read on public.appointments as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.view_org'::text) AS has_permission) OR (( SELECT app.has_permission('appointments.view_own'::text) AS has_permission) AND (specialist_id = ( SELECT app.own_specialist_id() AS own_specialist_id))) OR ((patient_id IS NOT NULL) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))));
create policy appointments_update on public.appointments as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.update_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.cancel_org'::text) AS has_permission) OR ((( SELECT app.has_permission('appointments.update_own'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.cancel_own'::text) AS has_permission)) AND (specialist_id = ( SELECT app.own_specialist_id() AS own_specialist_id))) OR ((patient_id IS NOT NULL) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER appointments_files_follow AFTER UPDATE OF rescheduled_to ON public.appointments FOR EACH ROW WHEN (((new.rescheduled_to IS NOT NULL) AND (old.rescheduled_to IS DISTINCT FROM new.rescheduled_to))) EXECUTE FUNCTION app.appointment_files_follow();
CREATE TRIGGER appointments_touch BEFORE UPDATE ON public.appointments FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.audit_chain_heads (
  chain_id uuid not null,
  last_seq bigint not null,
  last_hash text not null,
  constraint audit_chain_heads_pkey PRIMARY KEY (chain_id)
);
alter table public.audit_chain_heads enable row level security;
alter table public.audit_chain_heads force row level security;

create table public.audit_checkpoints (
  chain_id uuid not null,
  id uuid not null default app.uuid_v7(),
  cut_seq bigint not null,
  last_hash text not null,
  older_than timestamp with time zone not null,
  removed bigint not null,
  key_id text not null,
  signature text not null,
  created_at timestamp with time zone not null,
  constraint audit_checkpoints_cut_seq_check CHECK ((cut_seq > 0)),
  constraint audit_checkpoints_key_id_check CHECK ((key_id ~ '^[A-Za-z0-9_-]{1,32}$'::text)),
  constraint audit_checkpoints_last_hash_check CHECK ((last_hash ~ '^[0-9a-f]{64}$'::text)),
  constraint audit_checkpoints_removed_check CHECK ((removed >= 0)),
  constraint audit_checkpoints_signature_check CHECK ((signature ~ '^[0-9a-f]{64}$'::text)),
  constraint audit_checkpoints_pkey PRIMARY KEY (chain_id, id)
);
alter table public.audit_checkpoints enable row level security;
alter table public.audit_checkpoints force row level security;
CREATE INDEX audit_checkpoints_chain_cut_idx ON public.audit_checkpoints USING btree (chain_id, cut_seq DESC);
CREATE TRIGGER audit_checkpoints_append_only BEFORE DELETE OR UPDATE ON public.audit_checkpoints FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON public.audit_checkpoints FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.audit_logs (
  id uuid not null default app.uuid_v7(),
  organization_id uuid,
  actor_user_id uuid,
  action text not null,
  entity_type text not null,
  entity_id uuid,
  action_context text,
  break_glass_id uuid,
  data jsonb not null default '{}'::jsonb,
  ip inet,
  created_at timestamp with time zone not null default now(),
  chain_seq bigint not null,
  prev_hash text not null,
  row_hash text not null,
  constraint audit_logs_action_check CHECK ((action ~ '^[a-z][a-z0-9_.]*$'::text)),
  constraint audit_logs_pkey PRIMARY KEY (id)
);
alter table public.audit_logs enable row level security;
alter table public.audit_logs force row level security;
CREATE UNIQUE INDEX audit_logs_chain_idx ON public.audit_logs USING btree (COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), chain_seq);
CREATE INDEX audit_logs_org_created_id_idx ON public.audit_logs USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX audit_logs_org_created_idx ON public.audit_logs USING btree (organization_id, created_at DESC);
create policy audit_logs_insert on public.audit_logs as permissive for insert to app_rls with check ((NOT (actor_user_id IS DISTINCT FROM ( SELECT app.current_principal_id() AS current_principal_id))));
create policy audit_logs_read on public.audit_logs as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('audit_log.view_org'::text) AS has_permission)));
CREATE TRIGGER audit_logs_append_only BEFORE DELETE OR UPDATE ON public.audit_logs FOR EACH ROW EXECUTE FUNCTION app.audit_logs_append_only();
CREATE TRIGGER audit_logs_chain BEFORE INSERT ON public.audit_logs FOR EACH ROW EXECUTE FUNCTION app.audit_chain_link();
CREATE TRIGGER audit_logs_chain_flush AFTER INSERT ON public.audit_logs REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION app.audit_chain_flush();
CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON public.audit_logs FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.automation_executions (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  run_id uuid not null,
  rule_id uuid not null,
  rule_version integer not null,
  trigger_type text not null,
  action_index integer not null,
  action_type text not null,
  status text not null,
  attempts integer not null default 1,
  error text,
  message_id uuid,
  created_at timestamp with time zone not null default now(),
  constraint automation_executions_action_index_check CHECK (((action_index >= 0) AND (action_index <= 9))),
  constraint automation_executions_attempts_check CHECK ((attempts >= 0)),
  constraint automation_executions_error_check CHECK ((length(error) <= 1000)),
  constraint automation_executions_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'skipped'::text]))),
  constraint automation_executions_pkey PRIMARY KEY (organization_id, id),
  constraint automation_executions_organization_id_run_id_action_index_key UNIQUE (organization_id, run_id, action_index)
);
alter table public.automation_executions enable row level security;
alter table public.automation_executions force row level security;
CREATE INDEX automation_executions_org_created_idx ON public.automation_executions USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX automation_executions_rule_idx ON public.automation_executions USING btree (organization_id, rule_id, created_at DESC);
create policy automation_executions_read on public.automation_executions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('automations.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('automations.manage'::text) AS has_permission))));
CREATE TRIGGER automation_executions_append_only BEFORE DELETE OR UPDATE ON public.automation_executions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER automation_executions_no_truncate BEFORE TRUNCATE ON public.automation_executions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.automation_rules (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  description text,
  status text not null default 'active'::text,
  trigger jsonb not null,
  conditions jsonb,
  actions jsonb not null,
  trigger_type text default (trigger ->> 'type'::text),
  event_type text default (trigger ->> 'event_type'::text),
  offset_minutes integer default ((trigger ->> 'offset_minutes'::text))::integer,
  version integer not null default 1,
  created_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  deleted_at timestamp with time zone,
  constraint automation_rules_actions_check CHECK (((jsonb_typeof(actions) = 'array'::text) AND ((jsonb_array_length(actions) >= 1) AND (jsonb_array_length(actions) <= 10)))),
  constraint automation_rules_conditions_check CHECK (((conditions IS NULL) OR (jsonb_typeof(conditions) = 'object'::text))),
  constraint automation_rules_description_check CHECK ((length(description) <= 2000)),
  constraint automation_rules_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint automation_rules_status_check CHECK ((status = ANY (ARRAY['active'::text, 'paused'::text]))),
  constraint automation_rules_trigger_check CHECK ((jsonb_typeof(trigger) = 'object'::text)),
  constraint automation_rules_trigger_type_check CHECK ((trigger_type = ANY (ARRAY['event'::text, 'appointment_offset'::text, 'schedule'::text]))),
  constraint automation_rules_version_check CHECK ((version >= 1)),
  constraint automation_rules_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint automation_rules_pkey PRIMARY KEY (organization_id, id)
);
alter table public.automation_rules enable row level security;
alter table public.automation_rules force row level security;
CREATE INDEX automation_rules_event_idx ON public.automation_rules USING btree (organization_id, event_type) WHERE ((status = 'active'::text) AND (deleted_at IS NULL) AND (trigger_type = 'event'::text));
CREATE INDEX automation_rules_offset_idx ON public.automation_rules USING btree (trigger_type) WHERE ((status = 'active'::text) AND (deleted_at IS NULL));
CREATE INDEX automation_rules_org_created_idx ON public.automation_rules USING btree (organization_id, created_at DESC, id DESC) WHERE (deleted_at IS NULL);
create policy automation_rules_insert on public.automation_rules as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission)));
create policy automation_rules_read on public.automation_rules as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('automations.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('automations.manage'::text) AS has_permission)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy automation_rules_update on public.automation_rules as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission)));
CREATE TRIGGER automation_rules_touch BEFORE UPDATE ON public.automation_rules FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.automation_runs (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  rule_id uuid not null,
  rule_version integer not null,
  trigger_type text not null,
  trigger_key text not null,
  target_key text not null,
  patient_id uuid,
  appointment_id uuid,
  fired_at timestamp with time zone not null default now(),
  not_before timestamp with time zone not null default now(),
  status text not null default 'queued'::text,
  attempts integer not null default 0,
  last_error text,
  created_at timestamp with time zone not null default now(),
  finished_at timestamp with time zone,
  constraint automation_runs_last_error_check CHECK ((length(last_error) <= 1000)),
  constraint automation_runs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'done'::text, 'cancelled'::text]))),
  constraint automation_runs_target_key_check CHECK ((length(target_key) <= 200)),
  constraint automation_runs_trigger_key_check CHECK ((length(trigger_key) <= 200)),
  constraint automation_runs_organization_id_appointment_id_fkey FOREIGN KEY (organization_id, appointment_id) REFERENCES appointments(organization_id, id) ON DELETE SET NULL (appointment_id),
  constraint automation_runs_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint automation_runs_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE SET NULL (patient_id),
  constraint automation_runs_organization_id_rule_id_fkey FOREIGN KEY (organization_id, rule_id) REFERENCES automation_rules(organization_id, id),
  constraint automation_runs_pkey PRIMARY KEY (organization_id, id),
  constraint automation_runs_organization_id_rule_id_trigger_key_target__key UNIQUE (organization_id, rule_id, trigger_key, target_key)
);
alter table public.automation_runs enable row level security;
alter table public.automation_runs force row level security;
CREATE INDEX automation_runs_appointment_idx ON public.automation_runs USING btree (organization_id, appointment_id) WHERE (appointment_id IS NOT NULL);
CREATE INDEX automation_runs_patient_idx ON public.automation_runs USING btree (organization_id, patient_id) WHERE (patient_id IS NOT NULL);
CREATE INDEX automation_runs_queued_idx ON public.automation_runs USING btree (not_before) WHERE (status = 'queued'::text);
CREATE INDEX automation_runs_rule_idx ON public.automation_runs USING btree (organization_id, rule_id, created_at DESC);
create policy automation_runs_read on public.automation_runs as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('automations.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('automations.manage'::text) AS has_permission))));

create table public.automation_settings (
  organization_id uuid not null,
  quiet_hours_start time without time zone,
  quiet_hours_end time without time zone,
  updated_at timestamp with time zone not null default now(),
  constraint automation_settings_check CHECK ((((quiet_hours_start IS NULL) = (quiet_hours_end IS NULL)) AND ((quiet_hours_start IS NULL) OR (quiet_hours_start <> quiet_hours_end)))),
  constraint automation_settings_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint automation_settings_pkey PRIMARY KEY (organization_id)
);
alter table public.automation_settings enable row level security;
alter table public.automation_settings force row level security;
create policy automation_settings_read on public.automation_settings as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('automations.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('automations.manage'::text) AS has_permission))));
create policy automation_settings_write on public.automation_settings as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission)));

create table public.availability_exceptions (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  specialist_id uuid,
  kind text not null,
  location_id uuid,
  date date not null,
  start_time time without time zone,
  end_time time without time zone,
  time_zone text not null,
  note text,
  "position" smallint not null default 0,
  calendar_id uuid,
  constraint availability_exceptions_check CHECK (((start_time IS NULL) = (end_time IS NULL))),
  constraint availability_exceptions_check1 CHECK (((start_time IS NULL) OR (end_time > start_time))),
  constraint availability_exceptions_check2 CHECK (((kind = 'time_off'::text) OR ((location_id IS NOT NULL) AND (start_time IS NOT NULL)))),
  constraint availability_exceptions_kind_check CHECK ((kind = ANY (ARRAY['time_off'::text, 'extra_hours'::text]))),
  constraint availability_exceptions_note_check CHECK ((length(note) <= 500)),
  constraint availability_exceptions_owner CHECK ((num_nonnulls(specialist_id, calendar_id) = 1)),
  constraint availability_exceptions_time_zone_check CHECK (((length(time_zone) >= 1) AND (length(time_zone) <= 64))),
  constraint availability_exceptions_calendar_fkey FOREIGN KEY (organization_id, calendar_id) REFERENCES calendars(organization_id, id) ON DELETE CASCADE,
  constraint availability_exceptions_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE CASCADE,
  constraint availability_exceptions_organization_id_specialist_id_loca_fkey FOREIGN KEY (organization_id, specialist_id, location_id) REFERENCES specialist_locations(organization_id, specialist_id, location_id) ON DELETE RESTRICT,
  constraint availability_exceptions_pkey PRIMARY KEY (organization_id, id)
);
alter table public.availability_exceptions enable row level security;
alter table public.availability_exceptions force row level security;
CREATE INDEX availability_exceptions_specialist_idx ON public.availability_exceptions USING btree (organization_id, specialist_id, date);
create policy availability_exceptions_calendar_read on public.availability_exceptions as permissive for select to app_rls using (((calendar_id IS NOT NULL) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.create'::text) AS has_permission) OR ( SELECT app.has_permission('locations.manage'::text) AS has_permission))));
create policy availability_exceptions_calendar_write on public.availability_exceptions as permissive for all to app_rls using (((calendar_id IS NOT NULL) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission))) with check (((calendar_id IS NOT NULL) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
create policy availability_exceptions_read on public.availability_exceptions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.view'::text) AS has_permission) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL) OR (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))));
create policy availability_exceptions_write on public.availability_exceptions as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id)))))))));

create table public.availability_rules (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  specialist_id uuid,
  location_id uuid not null,
  weekday smallint not null,
  start_time time without time zone not null,
  end_time time without time zone not null,
  time_zone text not null,
  effective_from date,
  effective_until date,
  "position" smallint not null default 0,
  calendar_id uuid,
  constraint availability_rules_check CHECK ((end_time > start_time)),
  constraint availability_rules_check1 CHECK (((effective_until IS NULL) OR (effective_from IS NULL) OR (effective_until >= effective_from))),
  constraint availability_rules_owner CHECK ((num_nonnulls(specialist_id, calendar_id) = 1)),
  constraint availability_rules_time_zone_check CHECK (((length(time_zone) >= 1) AND (length(time_zone) <= 64))),
  constraint availability_rules_weekday_check CHECK (((weekday >= 1) AND (weekday <= 7))),
  constraint availability_rules_calendar_fkey FOREIGN KEY (organization_id, calendar_id) REFERENCES calendars(organization_id, id) ON DELETE CASCADE,
  constraint availability_rules_organization_id_specialist_id_location__fkey FOREIGN KEY (organization_id, specialist_id, location_id) REFERENCES specialist_locations(organization_id, specialist_id, location_id) ON DELETE RESTRICT,
  constraint availability_rules_pkey PRIMARY KEY (organization_id, id)
);
alter table public.availability_rules enable row level security;
alter table public.availability_rules force row level security;
CREATE INDEX availability_rules_calendar_idx ON public.availability_rules USING btree (organization_id, calendar_id, weekday) WHERE (calendar_id IS NOT NULL);
CREATE INDEX availability_rules_specialist_idx ON public.availability_rules USING btree (organization_id, specialist_id, weekday);
create policy availability_rules_calendar_read on public.availability_rules as permissive for select to app_rls using (((calendar_id IS NOT NULL) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.create'::text) AS has_permission) OR ( SELECT app.has_permission('locations.manage'::text) AS has_permission))));
create policy availability_rules_calendar_write on public.availability_rules as permissive for all to app_rls using (((calendar_id IS NOT NULL) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission))) with check (((calendar_id IS NOT NULL) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
create policy availability_rules_read on public.availability_rules as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.view'::text) AS has_permission) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL) OR (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))));
create policy availability_rules_write on public.availability_rules as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id)))))))));

create table public.break_glass_sessions (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  superadmin_user_id uuid not null,
  scope text not null,
  reason_category text not null,
  reason_text text not null,
  reason_ref text,
  created_at timestamp with time zone not null default now(),
  expires_at timestamp with time zone not null,
  ended_at timestamp with time zone,
  constraint break_glass_sessions_check CHECK (((expires_at > created_at) AND (expires_at <= (created_at + '04:00:00'::interval)))),
  constraint break_glass_sessions_ended_check CHECK (((ended_at IS NULL) OR ((ended_at >= created_at) AND (ended_at <= expires_at)))),
  constraint break_glass_sessions_reason_category_check CHECK ((reason_category = ANY (ARRAY['support_ticket'::text, 'security_incident'::text, 'dsar_routing'::text, 'fraud_investigation'::text, 'platform_engineering'::text]))),
  constraint break_glass_sessions_reason_ref_check CHECK (((length(reason_ref) >= 1) AND (length(reason_ref) <= 200))),
  constraint break_glass_sessions_reason_text_check CHECK (((length(reason_text) >= 1) AND (length(reason_text) <= 2000))),
  constraint break_glass_sessions_scope_check CHECK ((scope = ANY (ARRAY['patient_list'::text, 'patient_detail'::text, 'audit_full'::text, 'cross_org_lookup'::text, 'org_management'::text]))),
  constraint break_glass_sessions_pkey PRIMARY KEY (organization_id, id)
);
alter table public.break_glass_sessions enable row level security;
alter table public.break_glass_sessions force row level security;
CREATE INDEX break_glass_sessions_lookup_idx ON public.break_glass_sessions USING btree (superadmin_user_id, organization_id, scope, expires_at DESC);
CREATE INDEX break_glass_sessions_pkey_lookup ON public.break_glass_sessions USING btree (id);
create policy break_glass_sessions_read on public.break_glass_sessions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('audit_log.view_org'::text) AS has_permission)));
CREATE TRIGGER break_glass_sessions_append_only BEFORE DELETE OR UPDATE ON public.break_glass_sessions FOR EACH ROW EXECUTE FUNCTION app.break_glass_end_only();
CREATE TRIGGER break_glass_sessions_no_truncate BEFORE TRUNCATE ON public.break_glass_sessions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.calendar_claims (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  calendar_id uuid not null,
  during tstzrange not null,
  appointment_id uuid,
  hold_id uuid,
  expires_at timestamp with time zone,
  active boolean not null default true,
  created_at timestamp with time zone not null default now(),
  constraint calendar_claims_check CHECK ((num_nonnulls(appointment_id, hold_id) = 1)),
  constraint calendar_claims_during_check CHECK ((NOT isempty(during))),
  constraint calendar_claims_organization_id_appointment_id_fkey FOREIGN KEY (organization_id, appointment_id) REFERENCES appointments(organization_id, id) ON DELETE CASCADE,
  constraint calendar_claims_organization_id_calendar_id_fkey FOREIGN KEY (organization_id, calendar_id) REFERENCES calendars(organization_id, id) ON DELETE CASCADE,
  constraint calendar_claims_organization_id_hold_id_fkey FOREIGN KEY (organization_id, hold_id) REFERENCES holds(organization_id, id) ON DELETE CASCADE,
  constraint calendar_claims_pkey PRIMARY KEY (organization_id, id),
  constraint calendar_claims_no_overlap EXCLUDE USING gist (organization_id WITH =, calendar_id WITH =, during WITH &&) WHERE (active)
);
alter table public.calendar_claims enable row level security;
alter table public.calendar_claims force row level security;
CREATE INDEX calendar_claims_appointment_idx ON public.calendar_claims USING btree (organization_id, appointment_id) WHERE (appointment_id IS NOT NULL);
CREATE INDEX calendar_claims_hold_idx ON public.calendar_claims USING btree (organization_id, hold_id) WHERE (hold_id IS NOT NULL);
create policy calendar_claims_read on public.calendar_claims as permissive for select to app_rls using ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
create policy calendar_claims_write on public.calendar_claims as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.create'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.update_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.cancel_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.update_own'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.cancel_own'::text) AS has_permission) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));

create table public.calendars (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  kind text not null,
  name text not null,
  description text,
  specialist_id uuid,
  location_id uuid,
  feed_token_hash text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint calendars_check CHECK (((kind = 'specialist'::text) = (specialist_id IS NOT NULL))),
  constraint calendars_check1 CHECK (((kind = 'specialist'::text) OR (location_id IS NOT NULL))),
  constraint calendars_description_check CHECK ((length(description) <= 2000)),
  constraint calendars_feed_token_hash_check CHECK ((feed_token_hash ~ '^[0-9a-f]{64}$'::text)),
  constraint calendars_kind_check CHECK ((kind = ANY (ARRAY['specialist'::text, 'room'::text, 'device'::text]))),
  constraint calendars_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint calendars_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint calendars_organization_id_location_id_fkey FOREIGN KEY (organization_id, location_id) REFERENCES locations(organization_id, id) ON DELETE RESTRICT,
  constraint calendars_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE CASCADE,
  constraint calendars_pkey PRIMARY KEY (organization_id, id)
);
alter table public.calendars enable row level security;
alter table public.calendars force row level security;
CREATE UNIQUE INDEX calendars_feed_key ON public.calendars USING btree (organization_id, feed_token_hash) WHERE (feed_token_hash IS NOT NULL);
CREATE INDEX calendars_feed_key_lookup ON public.calendars USING btree (feed_token_hash) WHERE (feed_token_hash IS NOT NULL);
CREATE UNIQUE INDEX calendars_specialist_key ON public.calendars USING btree (organization_id, specialist_id) WHERE (specialist_id IS NOT NULL);
create policy calendars_read on public.calendars as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.create'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.view_own'::text) AS has_permission) OR ( SELECT app.has_permission('locations.manage'::text) AS has_permission) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL))));
create policy calendars_write on public.calendars as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
CREATE TRIGGER calendars_touch BEFORE UPDATE ON public.calendars FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.caregiver_links (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  patient_id uuid not null,
  caregiver_user_id uuid not null,
  relationship text,
  approved_by text not null,
  created_by_user_id uuid not null,
  created_at timestamp with time zone not null default now(),
  revoked_at timestamp with time zone,
  revoked_by_user_id uuid,
  constraint caregiver_links_approved_by_check CHECK ((approved_by = ANY (ARRAY['patient'::text, 'staff'::text]))),
  constraint caregiver_links_relationship_check CHECK ((relationship = ANY (ARRAY['parent'::text, 'guardian'::text, 'spouse'::text, 'partner'::text, 'child'::text, 'relative'::text, 'other'::text]))),
  constraint caregiver_links_caregiver_user_id_fkey FOREIGN KEY (caregiver_user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint caregiver_links_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint caregiver_links_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint caregiver_links_pkey PRIMARY KEY (organization_id, id)
);
alter table public.caregiver_links enable row level security;
alter table public.caregiver_links force row level security;
CREATE UNIQUE INDEX caregiver_links_active_key ON public.caregiver_links USING btree (organization_id, patient_id, caregiver_user_id) WHERE (revoked_at IS NULL);
CREATE INDEX caregiver_links_caregiver_idx ON public.caregiver_links USING btree (caregiver_user_id) WHERE (revoked_at IS NULL);
create policy caregiver_links_insert on public.caregiver_links as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (created_by_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (((approved_by = 'staff'::text) AND ( SELECT app.has_permission('patients.update_org'::text) AS has_permission)) OR ((approved_by = 'patient'::text) AND (patient_id = ( SELECT app.own_patient_id() AS own_patient_id))))));
create policy caregiver_links_read on public.caregiver_links as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('patients.view'::text) AS has_permission) OR (caregiver_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR (patient_id = ( SELECT app.own_patient_id() AS own_patient_id)))));
create policy caregiver_links_revoke on public.caregiver_links as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.update_org'::text) AS has_permission) OR (caregiver_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR (patient_id = ( SELECT app.own_patient_id() AS own_patient_id))))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (revoked_by_user_id = ( SELECT app.current_principal_id() AS current_principal_id))));
CREATE TRIGGER caregiver_links_context_version AFTER INSERT OR DELETE OR UPDATE ON public.caregiver_links FOR EACH ROW EXECUTE FUNCTION app.bump_user_context_version('caregiver_user_id');

create table public.consent_ledger (
  id uuid not null default app.uuid_v7(),
  organization_id uuid,
  patient_profile_id uuid not null,
  purpose_code text not null,
  purpose_version integer not null,
  source text not null,
  source_form_id uuid,
  granted_at timestamp with time zone not null default now(),
  granted_by_principal_id uuid not null,
  granted_via_ip inet,
  withdrawn_at timestamp with time zone,
  withdrawn_by_principal_id uuid,
  withdrawal_reason text,
  created_at timestamp with time zone not null default now(),
  constraint consent_ledger_check CHECK (((source_form_id IS NULL) OR (source = 'form'::text))),
  constraint consent_ledger_purpose_version_check CHECK ((purpose_version > 0)),
  constraint consent_ledger_source_check CHECK ((source = ANY (ARRAY['signup_checkbox'::text, 'self_toggle'::text, 'form'::text, 'staff_action'::text, 'api'::text]))),
  constraint consent_ledger_withdrawal_complete CHECK ((((withdrawn_at IS NULL) = (withdrawn_by_principal_id IS NULL)) AND ((withdrawal_reason IS NULL) OR (withdrawn_at IS NOT NULL)))),
  constraint consent_ledger_withdrawal_reason_check CHECK ((length(withdrawal_reason) <= 1000)),
  constraint consent_ledger_purpose_code_fkey FOREIGN KEY (purpose_code) REFERENCES consent_purposes(code),
  constraint consent_ledger_pkey PRIMARY KEY (id)
);
alter table public.consent_ledger enable row level security;
alter table public.consent_ledger force row level security;
CREATE INDEX consent_ledger_org_idx ON public.consent_ledger USING btree (organization_id, patient_profile_id);
CREATE INDEX consent_ledger_subject_idx ON public.consent_ledger USING btree (patient_profile_id, purpose_code, organization_id, granted_at DESC);
create policy consent_ledger_insert on public.consent_ledger as permissive for insert to app_rls with check (((granted_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (((patient_profile_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND ((organization_id IS NULL) OR (EXISTS ( SELECT 1
   FROM patients p
  WHERE ((p.organization_id = consent_ledger.organization_id) AND (p.user_id = consent_ledger.patient_profile_id) AND (p.deleted_at IS NULL)))))) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('consents.manage'::text) AS has_permission)))));
create policy consent_ledger_read on public.consent_ledger as permissive for select to app_rls using (((patient_profile_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('consents.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('consents.manage'::text) AS has_permission)))));
create policy consent_ledger_withdraw on public.consent_ledger as permissive for update to app_rls using (((patient_profile_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('consents.manage'::text) AS has_permission)))) with check ((withdrawn_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)));
CREATE TRIGGER consent_ledger_context_version AFTER INSERT OR UPDATE ON public.consent_ledger FOR EACH ROW EXECUTE FUNCTION app.bump_user_context_version('patient_profile_id');
CREATE TRIGGER consent_ledger_events AFTER INSERT OR UPDATE OF withdrawn_at ON public.consent_ledger FOR EACH ROW EXECUTE FUNCTION app.emit_consent_event();
CREATE TRIGGER consent_ledger_guard BEFORE DELETE OR UPDATE ON public.consent_ledger FOR EACH ROW EXECUTE FUNCTION app.consent_ledger_guard();
CREATE TRIGGER consent_ledger_no_truncate BEFORE TRUNCATE ON public.consent_ledger FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER consent_ledger_owner BEFORE INSERT ON public.consent_ledger FOR EACH ROW EXECUTE FUNCTION app.consent_purpose_owner_rule();
CREATE TRIGGER consent_ledger_withdrawal_cascade AFTER UPDATE OF withdrawn_at ON public.consent_ledger FOR EACH ROW WHEN (((old.withdrawn_at IS NULL) AND (new.withdrawn_at IS NOT NULL))) EXECUTE FUNCTION app.consent_withdrawal_cascade();

create table public.consent_purpose_versions (
  id uuid not null default app.uuid_v7(),
  purpose_code text not null,
  organization_id uuid,
  version integer not null,
  body_translations jsonb not null,
  published_at timestamp with time zone not null default now(),
  published_by_principal_id uuid not null,
  created_at timestamp with time zone not null default now(),
  constraint consent_purpose_versions_body_translations_check CHECK (((jsonb_typeof(body_translations) = 'object'::text) AND (jsonb_typeof((body_translations -> 'en'::text)) = 'string'::text))),
  constraint consent_purpose_versions_version_check CHECK ((version > 0)),
  constraint consent_purpose_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint consent_purpose_versions_purpose_code_fkey FOREIGN KEY (purpose_code) REFERENCES consent_purposes(code),
  constraint consent_purpose_versions_pkey PRIMARY KEY (id)
);
alter table public.consent_purpose_versions enable row level security;
alter table public.consent_purpose_versions force row level security;
CREATE UNIQUE INDEX consent_purpose_versions_key ON public.consent_purpose_versions USING btree (purpose_code, COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), version);
CREATE INDEX consent_purpose_versions_latest_idx ON public.consent_purpose_versions USING btree (purpose_code, organization_id, version DESC);
create policy consent_purpose_versions_insert on public.consent_purpose_versions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND
CASE
    WHEN (purpose_code = 'org_privacy_notice'::text) THEN ( SELECT app.has_permission('organizations.manage_privacy_notice'::text) AS has_permission)
    ELSE ( SELECT app.has_permission('consents.manage'::text) AS has_permission)
END AND (published_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id))));
create policy consent_purpose_versions_read on public.consent_purpose_versions as permissive for select to app_rls using (true);
CREATE TRIGGER consent_purpose_versions_append_only BEFORE DELETE OR UPDATE ON public.consent_purpose_versions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER consent_purpose_versions_context_epoch AFTER INSERT ON public.consent_purpose_versions FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();
CREATE TRIGGER consent_purpose_versions_no_truncate BEFORE TRUNCATE ON public.consent_purpose_versions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER consent_purpose_versions_owner BEFORE INSERT ON public.consent_purpose_versions FOR EACH ROW EXECUTE FUNCTION app.consent_purpose_owner_rule();
CREATE TRIGGER consent_purpose_versions_scope BEFORE INSERT ON public.consent_purpose_versions FOR EACH ROW EXECUTE FUNCTION app.consent_version_scope_rule();

create table public.consent_purposes (
  code text not null,
  scope text not null,
  name text not null,
  description text not null,
  legal_basis text not null,
  withdrawable boolean default (legal_basis = 'consent'::text),
  required boolean not null default false,
  organization_id uuid,
  constraint consent_purposes_code_check CHECK ((code ~ '^[a-z][a-z0-9_]*$'::text)),
  constraint consent_purposes_legal_basis_check CHECK ((legal_basis = ANY (ARRAY['contract'::text, 'legitimate_interest'::text, 'consent'::text, 'legal_obligation'::text, 'vital_interest'::text]))),
  constraint consent_purposes_org_owned CHECK (((organization_id IS NULL) OR ((code ~ '^treatment_specific_[a-z0-9_]+$'::text) AND (scope = 'org'::text) AND (legal_basis = 'consent'::text) AND (NOT required)))),
  constraint consent_purposes_required_not_consent CHECK ((NOT (required AND (legal_basis = 'consent'::text)))),
  constraint consent_purposes_scope_check CHECK ((scope = ANY (ARRAY['platform'::text, 'org'::text]))),
  constraint consent_purposes_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint consent_purposes_pkey PRIMARY KEY (code)
);
alter table public.consent_purposes enable row level security;
alter table public.consent_purposes force row level security;
create policy consent_purposes_insert on public.consent_purposes as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('consents.manage'::text) AS has_permission)));
create policy consent_purposes_read on public.consent_purposes as permissive for select to app_rls using (((organization_id IS NULL) OR (organization_id = ( SELECT app.current_org_id() AS current_org_id)) OR (EXISTS ( SELECT 1
   FROM consent_ledger l
  WHERE (l.purpose_code = consent_purposes.code)))));
CREATE TRIGGER consent_purposes_context_epoch AFTER INSERT OR DELETE OR UPDATE ON public.consent_purposes FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();

create table public.custom_field_versions (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  custom_field_id uuid not null,
  version integer not null,
  fields_snapshot jsonb not null,
  published_at timestamp with time zone not null default now(),
  published_by_principal_id uuid,
  constraint custom_field_versions_fields_snapshot_check CHECK ((jsonb_typeof(fields_snapshot) = 'object'::text)),
  constraint custom_field_versions_version_check CHECK ((version >= 1)),
  constraint custom_field_versions_custom_field_id_fkey FOREIGN KEY (organization_id, custom_field_id) REFERENCES custom_fields(organization_id, id),
  constraint custom_field_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint custom_field_versions_pkey PRIMARY KEY (organization_id, id),
  constraint custom_field_versions_custom_field_id_version_key UNIQUE (organization_id, custom_field_id, version)
);
alter table public.custom_field_versions enable row level security;
alter table public.custom_field_versions force row level security;
CREATE INDEX custom_field_versions_custom_field_id_version_key_lookup ON public.custom_field_versions USING btree (custom_field_id, version);
CREATE INDEX custom_field_versions_pkey_lookup ON public.custom_field_versions USING btree (id);
create policy custom_field_versions_insert on public.custom_field_versions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('custom_fields.manage'::text) AS has_permission)));
create policy custom_field_versions_read on public.custom_field_versions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org)));
create policy custom_field_versions_read_patient on public.custom_field_versions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)));
CREATE TRIGGER custom_field_versions_append_only BEFORE DELETE OR UPDATE ON public.custom_field_versions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER custom_field_versions_no_truncate BEFORE TRUNCATE ON public.custom_field_versions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.custom_fields (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  entity_type text not null,
  key text not null,
  label text not null,
  field_type text not null,
  options jsonb not null default '[]'::jsonb,
  private boolean not null default false,
  system_key text,
  version integer not null default 1,
  published boolean not null default true,
  published_at timestamp with time zone not null default now(),
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint custom_fields_entity_type_check CHECK ((entity_type = ANY (ARRAY['patient'::text, 'specialist'::text, 'form'::text]))),
  constraint custom_fields_field_type_check CHECK ((field_type = ANY (ARRAY['text'::text, 'long_text'::text, 'number'::text, 'date'::text, 'boolean'::text, 'select'::text, 'multi_select'::text]))),
  constraint custom_fields_key_check CHECK ((key ~ '^[a-z][a-z0-9_]{0,62}$'::text)),
  constraint custom_fields_label_check CHECK (((length(btrim(label)) >= 1) AND (length(btrim(label)) <= 200))),
  constraint custom_fields_options_check CHECK ((jsonb_typeof(options) = 'array'::text)),
  constraint custom_fields_system_key_check CHECK ((system_key ~ '^[a-z][a-z0-9_.]{0,62}$'::text)),
  constraint custom_fields_version_check CHECK ((version >= 1)),
  constraint custom_fields_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint custom_fields_pkey PRIMARY KEY (organization_id, id)
);
alter table public.custom_fields enable row level security;
alter table public.custom_fields force row level security;
CREATE UNIQUE INDEX custom_fields_key ON public.custom_fields USING btree (organization_id, entity_type, key) WHERE (deleted_at IS NULL);
CREATE INDEX custom_fields_org_idx ON public.custom_fields USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX custom_fields_pkey_lookup ON public.custom_fields USING btree (id);
CREATE UNIQUE INDEX custom_fields_system_key ON public.custom_fields USING btree (organization_id, entity_type, system_key) WHERE ((deleted_at IS NULL) AND (system_key IS NOT NULL));
create policy custom_fields_insert on public.custom_fields as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('custom_fields.manage'::text) AS has_permission)));
create policy custom_fields_read on public.custom_fields as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy custom_fields_read_patient on public.custom_fields as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (deleted_at IS NULL) AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)));
create policy custom_fields_update on public.custom_fields as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('custom_fields.manage'::text) AS has_permission))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER custom_fields_guard BEFORE UPDATE ON public.custom_fields FOR EACH ROW EXECUTE FUNCTION app.custom_field_guard();
CREATE TRIGGER custom_fields_touch BEFORE UPDATE ON public.custom_fields FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.document_letterheads (
  organization_id uuid not null,
  name text not null,
  address_lines text[] not null default '{}'::text[],
  registration_numbers text[] not null default '{}'::text[],
  logo_asset_key text,
  logo_content_type text,
  logo_sha256 text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint document_letterheads_address_lines_check CHECK ((cardinality(address_lines) <= 4)),
  constraint document_letterheads_logo_asset_key_check CHECK ((length(logo_asset_key) <= 300)),
  constraint document_letterheads_logo_complete CHECK ((((logo_asset_key IS NULL) = (logo_content_type IS NULL)) AND ((logo_asset_key IS NULL) = (logo_sha256 IS NULL)))),
  constraint document_letterheads_logo_content_type_check CHECK ((logo_content_type = ANY (ARRAY['image/png'::text, 'image/jpeg'::text]))),
  constraint document_letterheads_logo_sha256_check CHECK ((logo_sha256 ~ '^[0-9a-f]{64}$'::text)),
  constraint document_letterheads_name_check CHECK (((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200))),
  constraint document_letterheads_registration_numbers_check CHECK ((cardinality(registration_numbers) <= 6)),
  constraint document_letterheads_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint document_letterheads_pkey PRIMARY KEY (organization_id)
);
alter table public.document_letterheads enable row level security;
alter table public.document_letterheads force row level security;
create policy document_letterheads_read on public.document_letterheads as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission) OR ( SELECT app.has_permission('pdf_templates.view_published'::text) AS has_permission) OR ( SELECT app.has_permission('pdf_templates.render'::text) AS has_permission) OR ( SELECT app.has_permission('documents.create'::text) AS has_permission))));
create policy document_letterheads_update on public.document_letterheads as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
create policy document_letterheads_write on public.document_letterheads as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission)));
CREATE TRIGGER document_letterheads_touch BEFORE UPDATE ON public.document_letterheads FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.documents (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  kind text not null,
  source text not null,
  form_id uuid,
  appointment_id uuid,
  patient_id uuid not null,
  pdf_template_id uuid not null,
  template_version integer not null,
  title text not null,
  input jsonb,
  source_sha256 text not null,
  render_key text not null,
  status text not null default 'queued'::text,
  progress smallint not null default 0,
  error text,
  asset_key text,
  size_bytes bigint,
  sha256 text,
  page_count integer,
  published_at timestamp with time zone,
  published_by_principal_id uuid,
  created_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  rendered_at timestamp with time zone,
  constraint documents_asset_key_check CHECK ((length(asset_key) <= 300)),
  constraint documents_error_check CHECK ((length(error) <= 500)),
  constraint documents_input_check CHECK (((input IS NULL) OR (jsonb_typeof(input) = 'object'::text))),
  constraint documents_kind_check CHECK ((kind = ANY (ARRAY['form'::text, 'visit_summary'::text, 'prescription'::text, 'report'::text, 'receipt'::text]))),
  constraint documents_page_count_check CHECK ((page_count >= 1)),
  constraint documents_progress_check CHECK (((progress >= 0) AND (progress <= 100))),
  constraint documents_published_ready CHECK (((published_at IS NULL) OR (status = 'ready'::text))),
  constraint documents_ready_check CHECK (((status = 'ready'::text) = ((asset_key IS NOT NULL) AND (sha256 IS NOT NULL) AND (page_count IS NOT NULL)))),
  constraint documents_render_key_check CHECK ((render_key ~ '^[0-9a-f]{64}$'::text)),
  constraint documents_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
  constraint documents_size_bytes_check CHECK ((size_bytes >= 0)),
  constraint documents_source_check CHECK ((source = ANY (ARRAY['form'::text, 'appointment'::text]))),
  constraint documents_source_sha256_check CHECK ((source_sha256 ~ '^[0-9a-f]{64}$'::text)),
  constraint documents_source_shape CHECK ((((source = 'form'::text) AND (form_id IS NOT NULL) AND (appointment_id IS NULL) AND (kind = 'form'::text)) OR ((source = 'appointment'::text) AND (appointment_id IS NOT NULL) AND (form_id IS NULL) AND (kind <> 'form'::text)))),
  constraint documents_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'rendering'::text, 'ready'::text, 'failed'::text]))),
  constraint documents_template_version_check CHECK ((template_version >= 1)),
  constraint documents_title_check CHECK (((length(btrim(title)) >= 1) AND (length(btrim(title)) <= 200))),
  constraint documents_organization_id_appointment_id_fkey FOREIGN KEY (organization_id, appointment_id) REFERENCES appointments(organization_id, id) ON DELETE CASCADE,
  constraint documents_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint documents_organization_id_form_id_fkey FOREIGN KEY (organization_id, form_id) REFERENCES forms(organization_id, id),
  constraint documents_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE RESTRICT,
  constraint documents_organization_id_pdf_template_id_fkey FOREIGN KEY (organization_id, pdf_template_id) REFERENCES pdf_templates(organization_id, id),
  constraint documents_pkey PRIMARY KEY (organization_id, id),
  constraint documents_organization_id_asset_key_key UNIQUE (organization_id, asset_key),
  constraint documents_organization_id_render_key_key UNIQUE (organization_id, render_key)
);
alter table public.documents enable row level security;
alter table public.documents force row level security;
CREATE INDEX documents_appointment_idx ON public.documents USING btree (organization_id, appointment_id, created_at DESC) WHERE (appointment_id IS NOT NULL);
CREATE INDEX documents_form_idx ON public.documents USING btree (organization_id, form_id, created_at DESC) WHERE (form_id IS NOT NULL);
CREATE INDEX documents_patient_idx ON public.documents USING btree (organization_id, patient_id, created_at DESC);
CREATE INDEX documents_pending_idx ON public.documents USING btree (organization_id, created_at) WHERE (status = ANY (ARRAY['queued'::text, 'rendering'::text]));
create policy documents_insert on public.documents as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (created_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND
CASE source
    WHEN 'form'::text THEN ( SELECT app.has_permission('pdf_templates.render'::text) AS has_permission)
    ELSE ( SELECT app.has_permission('documents.create'::text) AS has_permission)
END));
create policy documents_read on public.documents as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('documents.view_org'::text) AS has_permission) OR ((published_at IS NOT NULL) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))));
create policy documents_update on public.documents as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('documents.publish'::text) AS has_permission) OR (created_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER documents_guard BEFORE UPDATE ON public.documents FOR EACH ROW EXECUTE FUNCTION app.documents_guard();
CREATE TRIGGER documents_touch BEFORE UPDATE ON public.documents FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.domain_events (
  id uuid not null default app.uuid_v7(),
  organization_id uuid,
  type text not null,
  data jsonb not null,
  principal_id uuid,
  occurred_at timestamp with time zone not null default now(),
  dispatched_at timestamp with time zone,
  constraint domain_events_data_check CHECK ((jsonb_typeof(data) = 'object'::text)),
  constraint domain_events_type_check CHECK ((type ~ '^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$'::text)),
  constraint domain_events_pkey PRIMARY KEY (id)
);
alter table public.domain_events enable row level security;
alter table public.domain_events force row level security;
CREATE INDEX domain_events_org_idx ON public.domain_events USING btree (organization_id, occurred_at DESC);
CREATE INDEX domain_events_pending_idx ON public.domain_events USING btree (id) WHERE (dispatched_at IS NULL);
create policy domain_events_bypass on public.domain_events as permissive for select to app_bypass using (true);

create table public.exercise_movements (
  exercise_id uuid not null,
  organization_id uuid,
  definition jsonb not null,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint exercise_movements_definition_check CHECK ((jsonb_typeof(definition) = 'object'::text)),
  constraint exercise_movements_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id) ON DELETE CASCADE,
  constraint exercise_movements_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint exercise_movements_pkey PRIMARY KEY (exercise_id)
);
alter table public.exercise_movements enable row level security;
alter table public.exercise_movements force row level security;
create policy exercise_movements_insert on public.exercise_movements as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission)));
create policy exercise_movements_read on public.exercise_movements as permissive for select to app_rls using ((EXISTS ( SELECT 1
   FROM exercises e
  WHERE (e.id = exercise_movements.exercise_id))));
create policy exercise_movements_update on public.exercise_movements as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission)));
CREATE TRIGGER exercise_movements_touch BEFORE UPDATE ON public.exercise_movements FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.exercise_renders (
  id uuid not null default app.uuid_v7(),
  exercise_id uuid not null,
  organization_id uuid,
  recipe_hash text not null,
  language text not null,
  asset_version integer not null,
  recipe jsonb,
  status text not null,
  stream_video_id text,
  playback_hls_url text,
  duration_seconds double precision,
  error text,
  claim_token uuid,
  heartbeat_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint exercise_renders_asset_version_check CHECK ((asset_version >= 1)),
  constraint exercise_renders_check CHECK (((recipe_hash = '_imported'::text) = (recipe IS NULL))),
  constraint exercise_renders_check1 CHECK (((status <> ALL (ARRAY['processing'::text, 'ready'::text])) OR ((stream_video_id IS NOT NULL) AND (playback_hls_url IS NOT NULL)))),
  constraint exercise_renders_language_check CHECK ((language ~ '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$'::text)),
  constraint exercise_renders_recipe_hash_check CHECK (((recipe_hash = '_imported'::text) OR (recipe_hash ~ '^[0-9a-f]{64}$'::text))),
  constraint exercise_renders_status_check CHECK ((status = ANY (ARRAY['rendering'::text, 'processing'::text, 'ready'::text, 'failed'::text]))),
  constraint exercise_renders_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id) ON DELETE CASCADE,
  constraint exercise_renders_pkey PRIMARY KEY (id),
  constraint exercise_renders_exercise_id_recipe_hash_language_asset_ver_key UNIQUE (exercise_id, recipe_hash, language, asset_version)
);
alter table public.exercise_renders enable row level security;
alter table public.exercise_renders force row level security;
CREATE INDEX exercise_renders_processing_idx ON public.exercise_renders USING btree (updated_at) WHERE (status = 'processing'::text);
create policy exercise_renders_composer on public.exercise_renders as permissive for all to app_composer using (true) with check (true);
create policy exercise_renders_read on public.exercise_renders as permissive for select to app_rls using ((EXISTS ( SELECT 1
   FROM exercises e
  WHERE (e.id = exercise_renders.exercise_id))));
CREATE TRIGGER exercise_renders_touch BEFORE UPDATE ON public.exercise_renders FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.exercise_sessions (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  patient_user_id uuid not null,
  exercise_id uuid not null,
  movement jsonb not null,
  status text not null default 'active'::text,
  end_reason text,
  started_at timestamp with time zone not null default now(),
  ended_at timestamp with time zone,
  batches_received integer not null default 0,
  frames_received integer not null default 0,
  result jsonb,
  replay_key text,
  replay_deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint exercise_sessions_end_reason_check CHECK ((end_reason = ANY (ARRAY['session_end'::text, 'silence'::text, 'consent_withdrawn'::text]))),
  constraint exercise_sessions_status_check CHECK ((status = ANY (ARRAY['active'::text, 'ending'::text, 'completed'::text, 'incomplete'::text]))),
  constraint exercise_sessions_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id),
  constraint exercise_sessions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint exercise_sessions_patient_user_id_fkey FOREIGN KEY (patient_user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint exercise_sessions_pkey PRIMARY KEY (organization_id, id)
);
alter table public.exercise_sessions enable row level security;
alter table public.exercise_sessions force row level security;
CREATE INDEX exercise_sessions_open_idx ON public.exercise_sessions USING btree (started_at) WHERE (status = ANY (ARRAY['active'::text, 'ending'::text]));
CREATE INDEX exercise_sessions_org_idx ON public.exercise_sessions USING btree (organization_id, started_at DESC);
CREATE INDEX exercise_sessions_patient_idx ON public.exercise_sessions USING btree (patient_user_id, started_at DESC);
CREATE INDEX exercise_sessions_pkey_lookup ON public.exercise_sessions USING btree (id);
CREATE INDEX exercise_sessions_replay_idx ON public.exercise_sessions USING btree (ended_at) WHERE (replay_key IS NOT NULL);
create policy exercise_sessions_insert on public.exercise_sessions as permissive for insert to app_rls with check (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM patients p
  WHERE ((p.organization_id = exercise_sessions.organization_id) AND (p.user_id = exercise_sessions.patient_user_id) AND (p.deleted_at IS NULL))))));
create policy exercise_sessions_insert_caregiver on public.exercise_sessions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (patient_user_id = ( SELECT app.current_patient_user_id() AS current_patient_user_id))));
create policy exercise_sessions_read on public.exercise_sessions as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));
create policy exercise_sessions_read_caregiver on public.exercise_sessions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (patient_user_id = ( SELECT app.current_patient_user_id() AS current_patient_user_id))));
CREATE TRIGGER exercise_sessions_drop_batches AFTER DELETE ON public.exercise_sessions FOR EACH ROW EXECUTE FUNCTION app.pose_batches_of_deleted_session();
CREATE TRIGGER exercise_sessions_touch BEFORE UPDATE ON public.exercise_sessions FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.exercises (
  id uuid not null default app.uuid_v7(),
  organization_id uuid,
  slug text not null,
  name text not null,
  kind text not null,
  status text not null default 'draft'::text,
  asset_version integer not null default 1,
  catalog_render_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  template_exercise_id uuid,
  constraint exercises_asset_version_check CHECK ((asset_version >= 1)),
  constraint exercises_kind_check CHECK ((kind = ANY (ARRAY['reps_based'::text, 'duration_based'::text]))),
  constraint exercises_name_check CHECK (((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200))),
  constraint exercises_slug_check CHECK (((slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'::text) AND (length(slug) <= 100))),
  constraint exercises_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'published'::text, 'archived'::text]))),
  constraint exercises_template_owned CHECK (((template_exercise_id IS NULL) OR (organization_id IS NOT NULL))),
  constraint exercises_catalog_render_fk FOREIGN KEY (catalog_render_id) REFERENCES exercise_renders(id) ON DELETE SET NULL,
  constraint exercises_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint exercises_template_exercise_id_fkey FOREIGN KEY (template_exercise_id) REFERENCES exercises(id) ON DELETE SET NULL,
  constraint exercises_pkey PRIMARY KEY (id),
  constraint exercises_slug_key UNIQUE (slug)
);
alter table public.exercises enable row level security;
alter table public.exercises force row level security;
CREATE INDEX exercises_org_idx ON public.exercises USING btree (organization_id, created_at DESC);
CREATE UNIQUE INDEX exercises_template_key ON public.exercises USING btree (organization_id, template_exercise_id) WHERE (template_exercise_id IS NOT NULL);
create policy exercises_composer_read on public.exercises as permissive for select to app_composer using (true);
create policy exercises_delete on public.exercises as permissive for delete to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission)));
create policy exercises_insert on public.exercises as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission)));
create policy exercises_read on public.exercises as permissive for select to app_rls using ((((organization_id IS NULL) AND (status = 'published'::text)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ((status = 'published'::text) OR ( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org)))));
create policy exercises_update on public.exercises as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('exercises.manage_org'::text) AS has_permission)));
CREATE TRIGGER exercises_touch BEFORE UPDATE ON public.exercises FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.form_field_snapshots (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  form_id uuid not null,
  "position" integer not null,
  custom_field_id uuid not null,
  version integer not null,
  key text not null,
  label text not null,
  field_type text not null,
  options jsonb not null,
  private boolean not null,
  required boolean not null,
  constraint form_field_snapshots_position_check CHECK (("position" >= 0)),
  constraint form_field_snapshots_version_check CHECK ((version >= 1)),
  constraint form_field_snapshots_form_id_fkey FOREIGN KEY (organization_id, form_id) REFERENCES forms(organization_id, id),
  constraint form_field_snapshots_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint form_field_snapshots_pkey PRIMARY KEY (organization_id, id),
  constraint form_field_snapshots_form_id_key_key UNIQUE (organization_id, form_id, key),
  constraint form_field_snapshots_form_id_position_key UNIQUE (organization_id, form_id, "position")
);
alter table public.form_field_snapshots enable row level security;
alter table public.form_field_snapshots force row level security;
CREATE INDEX form_field_snapshots_form_id_key_key_lookup ON public.form_field_snapshots USING btree (form_id, key);
CREATE INDEX form_field_snapshots_form_id_position_key_lookup ON public.form_field_snapshots USING btree (form_id, "position");
CREATE INDEX form_field_snapshots_pkey_lookup ON public.form_field_snapshots USING btree (id);
create policy form_field_snapshots_insert on public.form_field_snapshots as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('forms.create'::text) AS has_permission)));
create policy form_field_snapshots_read on public.form_field_snapshots as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM forms f
  WHERE (f.id = form_field_snapshots.form_id)
 OFFSET 0))));
CREATE TRIGGER form_field_snapshots_append_only BEFORE DELETE OR UPDATE ON public.form_field_snapshots FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER form_field_snapshots_no_truncate BEFORE TRUNCATE ON public.form_field_snapshots FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.form_files (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  form_id uuid not null,
  asset_key text not null,
  filename text not null,
  content_type text not null,
  size_bytes bigint not null,
  sha256 text not null,
  uploaded_by_principal_id uuid not null,
  created_at timestamp with time zone not null default now(),
  constraint form_files_filename_check CHECK (((length(filename) >= 1) AND (length(filename) <= 255))),
  constraint form_files_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
  constraint form_files_size_bytes_check CHECK ((size_bytes >= 0)),
  constraint form_files_form_id_fkey FOREIGN KEY (organization_id, form_id) REFERENCES forms(organization_id, id),
  constraint form_files_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint form_files_pkey PRIMARY KEY (organization_id, id),
  constraint form_files_asset_key_key UNIQUE (organization_id, asset_key)
);
alter table public.form_files enable row level security;
alter table public.form_files force row level security;
CREATE INDEX form_files_asset_key_key_lookup ON public.form_files USING btree (asset_key);
CREATE INDEX form_files_form_idx ON public.form_files USING btree (form_id, created_at);
CREATE INDEX form_files_pkey_lookup ON public.form_files USING btree (id);
create policy form_files_delete on public.form_files as permissive for delete to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM forms f
  WHERE ((f.id = form_files.form_id) AND (f.deleted_at IS NULL) AND (( SELECT app.has_permission('forms.fill_org'::text) AS has_permission) OR (f.patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))
 OFFSET 0))));
create policy form_files_insert on public.form_files as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (uploaded_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (EXISTS ( SELECT 1
   FROM forms f
  WHERE ((f.id = form_files.form_id) AND (f.deleted_at IS NULL) AND (( SELECT app.has_permission('forms.fill_org'::text) AS has_permission) OR (f.patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))
 OFFSET 0))));
create policy form_files_read on public.form_files as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM forms f
  WHERE (f.id = form_files.form_id)
 OFFSET 0))));
CREATE TRIGGER form_files_guard BEFORE INSERT OR DELETE OR UPDATE ON public.form_files FOR EACH ROW EXECUTE FUNCTION app.form_files_guard();

create table public.form_template_versions (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  form_template_id uuid not null,
  version integer not null,
  snapshot jsonb not null,
  published_at timestamp with time zone not null default now(),
  published_by_principal_id uuid,
  constraint form_template_versions_snapshot_check CHECK ((jsonb_typeof(snapshot) = 'object'::text)),
  constraint form_template_versions_version_check CHECK ((version >= 1)),
  constraint form_template_versions_form_template_id_fkey FOREIGN KEY (organization_id, form_template_id) REFERENCES form_templates(organization_id, id),
  constraint form_template_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint form_template_versions_pkey PRIMARY KEY (organization_id, id),
  constraint form_template_versions_form_template_id_version_key UNIQUE (organization_id, form_template_id, version)
);
alter table public.form_template_versions enable row level security;
alter table public.form_template_versions force row level security;
CREATE INDEX form_template_versions_form_template_id_version_key_lookup ON public.form_template_versions USING btree (form_template_id, version);
CREATE INDEX form_template_versions_pkey_lookup ON public.form_template_versions USING btree (id);
create policy form_template_versions_insert on public.form_template_versions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission)));
create policy form_template_versions_read on public.form_template_versions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('form_templates.view'::text) AS has_permission) OR ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission) OR ( SELECT app.has_permission('forms.create'::text) AS has_permission))));
CREATE TRIGGER form_template_versions_append_only BEFORE DELETE OR UPDATE ON public.form_template_versions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER form_template_versions_no_truncate BEFORE TRUNCATE ON public.form_template_versions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.form_templates (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  name text not null,
  description text,
  fields jsonb not null,
  version integer not null default 1,
  published boolean not null default true,
  published_at timestamp with time zone not null default now(),
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint form_templates_description_check CHECK ((length(description) <= 2000)),
  constraint form_templates_fields_check CHECK ((jsonb_typeof(fields) = 'array'::text)),
  constraint form_templates_name_check CHECK (((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200))),
  constraint form_templates_version_check CHECK ((version >= 1)),
  constraint form_templates_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint form_templates_pkey PRIMARY KEY (organization_id, id)
);
alter table public.form_templates enable row level security;
alter table public.form_templates force row level security;
CREATE INDEX form_templates_org_idx ON public.form_templates USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX form_templates_pkey_lookup ON public.form_templates USING btree (id);
create policy form_templates_insert on public.form_templates as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission)));
create policy form_templates_read on public.form_templates as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('form_templates.view'::text) AS has_permission) OR ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy form_templates_update on public.form_templates as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER form_templates_touch BEFORE UPDATE ON public.form_templates FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.forms (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  patient_id uuid not null,
  form_template_id uuid not null,
  template_version integer not null,
  title text not null,
  status text not null default 'pending'::text,
  "values" jsonb not null default '{}'::jsonb,
  created_by_principal_id uuid not null,
  signed_at timestamp with time zone,
  signed_by_principal_id uuid,
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint forms_signed_complete CHECK (((status = 'signed'::text) = ((signed_at IS NOT NULL) AND (signed_by_principal_id IS NOT NULL)))),
  constraint forms_signed_not_deleted CHECK ((NOT ((status = 'signed'::text) AND (deleted_at IS NOT NULL)))),
  constraint forms_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'signed'::text]))),
  constraint forms_template_version_check CHECK ((template_version >= 1)),
  constraint forms_values_check CHECK ((jsonb_typeof("values") = 'object'::text)),
  constraint forms_form_template_id_fkey FOREIGN KEY (organization_id, form_template_id) REFERENCES form_templates(organization_id, id),
  constraint forms_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint forms_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id),
  constraint forms_pkey PRIMARY KEY (organization_id, id)
);
alter table public.forms enable row level security;
alter table public.forms force row level security;
CREATE INDEX forms_org_created_idx ON public.forms USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX forms_patient_idx ON public.forms USING btree (patient_id, created_at DESC);
CREATE INDEX forms_pkey_lookup ON public.forms USING btree (id);
create policy forms_insert on public.forms as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('forms.create'::text) AS has_permission) AND (created_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (status = 'pending'::text)));
create policy forms_read on public.forms as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission)) AND (( SELECT app.has_permission('forms.view_org'::text) AS has_permission) OR (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))));
create policy forms_update on public.forms as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('forms.fill_org'::text) AS has_permission) OR ( SELECT app.has_permission('forms.sign'::text) AS has_permission) OR ( SELECT app.has_permission('forms.delete_unsigned'::text) AS has_permission) OR (patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER forms_no_truncate BEFORE TRUNCATE ON public.forms FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER forms_signed_guard BEFORE DELETE OR UPDATE ON public.forms FOR EACH ROW EXECUTE FUNCTION app.forms_signed_guard();
CREATE TRIGGER forms_touch BEFORE UPDATE ON public.forms FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.gdpr_restrictions (
  id uuid not null default app.uuid_v7(),
  user_id uuid not null,
  organization_id uuid,
  reason text,
  restricted_at timestamp with time zone not null default now(),
  restricted_by_principal_id uuid not null,
  lifted_at timestamp with time zone,
  lifted_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  constraint gdpr_restrictions_lift_complete CHECK (((lifted_at IS NULL) = (lifted_by_principal_id IS NULL))),
  constraint gdpr_restrictions_reason_check CHECK ((length(reason) <= 1000)),
  constraint gdpr_restrictions_pkey PRIMARY KEY (id)
);
alter table public.gdpr_restrictions enable row level security;
alter table public.gdpr_restrictions force row level security;
CREATE UNIQUE INDEX gdpr_restrictions_active_key ON public.gdpr_restrictions USING btree (user_id, COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid)) WHERE (lifted_at IS NULL);
create policy gdpr_restrictions_insert on public.gdpr_restrictions as permissive for insert to app_rls with check (((restricted_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (organization_id IS NULL)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('gdpr.restrict_processing'::text) AS has_permission)))));
create policy gdpr_restrictions_lift on public.gdpr_restrictions as permissive for update to app_rls using ((((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (organization_id IS NULL)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('gdpr.restrict_processing'::text) AS has_permission)))) with check ((lifted_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)));
create policy gdpr_restrictions_read on public.gdpr_restrictions as permissive for select to app_rls using (((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('gdpr.restrict_processing'::text) AS has_permission))));

create table public.holds (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  service_id uuid not null,
  specialist_id uuid not null,
  location_id uuid,
  starts_at timestamp with time zone not null,
  ends_at timestamp with time zone not null,
  secret_hash text not null,
  status text not null default 'live'::text,
  expires_at timestamp with time zone not null,
  appointment_id uuid,
  created_ip inet,
  created_at timestamp with time zone not null default now(),
  ended_at timestamp with time zone,
  constraint holds_check CHECK (((ends_at > starts_at) AND (expires_at > created_at))),
  constraint holds_secret_hash_check CHECK ((secret_hash ~ '^[0-9a-f]{64}$'::text)),
  constraint holds_status_check CHECK ((status = ANY (ARRAY['live'::text, 'released'::text, 'converted'::text, 'expired'::text]))),
  constraint holds_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint holds_organization_id_service_id_fkey FOREIGN KEY (organization_id, service_id) REFERENCES services(organization_id, id) ON DELETE CASCADE,
  constraint holds_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE CASCADE,
  constraint holds_pkey PRIMARY KEY (organization_id, id)
);
alter table public.holds enable row level security;
alter table public.holds force row level security;
CREATE INDEX holds_id_idx ON public.holds USING btree (id);
CREATE INDEX holds_live_idx ON public.holds USING btree (expires_at) WHERE (status = 'live'::text);
create policy holds_read on public.holds as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('appointments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('appointments.create'::text) AS has_permission))));
CREATE TRIGGER holds_announce AFTER UPDATE OF status, expires_at ON public.holds FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) OR (old.expires_at IS DISTINCT FROM new.expires_at))) EXECUTE FUNCTION app.announce_hold_change();

create table public.impersonation_sessions (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  patient_id uuid not null,
  patient_user_id uuid not null,
  staff_user_id uuid not null,
  reason text not null,
  token_hash text not null,
  started_at timestamp with time zone not null default now(),
  expires_at timestamp with time zone not null,
  ended_at timestamp with time zone,
  ended_by_user_id uuid,
  constraint impersonation_sessions_check CHECK ((expires_at > started_at)),
  constraint impersonation_sessions_reason_check CHECK (((length(btrim(reason)) >= 3) AND (length(btrim(reason)) <= 500))),
  constraint impersonation_sessions_token_hash_check CHECK ((token_hash ~ '^[0-9a-f]{64}$'::text)),
  constraint impersonation_sessions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint impersonation_sessions_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint impersonation_sessions_staff_user_id_fkey FOREIGN KEY (staff_user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint impersonation_sessions_pkey PRIMARY KEY (organization_id, id),
  constraint impersonation_sessions_token_hash_key UNIQUE (organization_id, token_hash)
);
alter table public.impersonation_sessions enable row level security;
alter table public.impersonation_sessions force row level security;
CREATE INDEX impersonation_sessions_staff_idx ON public.impersonation_sessions USING btree (organization_id, staff_user_id, started_at DESC);
CREATE INDEX impersonation_sessions_token_hash_key_lookup ON public.impersonation_sessions USING btree (token_hash);
create policy impersonation_sessions_end on public.impersonation_sessions as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (staff_user_id = ( SELECT app.current_principal_id() AS current_principal_id)))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (staff_user_id = ( SELECT app.current_principal_id() AS current_principal_id))));
create policy impersonation_sessions_insert on public.impersonation_sessions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('patients.impersonate'::text) AS has_permission) AND (staff_user_id = ( SELECT app.current_principal_id() AS current_principal_id))));
create policy impersonation_sessions_read on public.impersonation_sessions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ((staff_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ( SELECT app.has_permission('audit_log.view_org'::text) AS has_permission))));

create table public.jobs (
  id uuid not null default app.uuid_v7(),
  kind text not null,
  status text not null default 'queued'::text,
  progress integer not null default 0,
  organization_id uuid,
  requested_by_principal_id uuid not null,
  payload jsonb not null default '{}'::jsonb,
  result_path text,
  result jsonb,
  file bytea,
  error text,
  attempts integer not null default 0,
  expires_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint jobs_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_.]*$'::text)),
  constraint jobs_progress_check CHECK (((progress >= 0) AND (progress <= 100))),
  constraint jobs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'done'::text, 'failed'::text]))),
  constraint jobs_pkey PRIMARY KEY (id)
);
alter table public.jobs enable row level security;
alter table public.jobs force row level security;
CREATE INDEX jobs_queue_idx ON public.jobs USING btree (kind, created_at) WHERE (status = 'queued'::text);
create policy jobs_insert on public.jobs as permissive for insert to app_rls with check (((requested_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (status = 'queued'::text) AND (progress = 0) AND (file IS NULL) AND (result IS NULL) AND ((organization_id IS NULL) OR (organization_id = ( SELECT app.current_org_id() AS current_org_id)))));
create policy jobs_read on public.jobs as permissive for select to app_rls using (((requested_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (kind = 'gdpr_export'::text) AND ( SELECT app.has_permission('gdpr.export_data'::text) AS has_permission))));
CREATE TRIGGER jobs_touch BEFORE UPDATE ON public.jobs FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.locations (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  name text not null,
  address_line1 text,
  address_line2 text,
  city text,
  region text,
  postal_code text,
  country text,
  timezone text not null,
  phone text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint locations_address_line1_check CHECK ((length(address_line1) <= 200)),
  constraint locations_address_line2_check CHECK ((length(address_line2) <= 200)),
  constraint locations_city_check CHECK ((length(city) <= 100)),
  constraint locations_country_check CHECK ((country ~ '^[A-Z]{2}$'::text)),
  constraint locations_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint locations_phone_check CHECK ((length(phone) <= 40)),
  constraint locations_postal_code_check CHECK ((length(postal_code) <= 20)),
  constraint locations_region_check CHECK ((length(region) <= 100)),
  constraint locations_timezone_check CHECK (((length(timezone) >= 1) AND (length(timezone) <= 64))),
  constraint locations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint locations_pkey PRIMARY KEY (organization_id, id)
);
alter table public.locations enable row level security;
alter table public.locations force row level security;
CREATE INDEX locations_org_created_idx ON public.locations USING btree (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX locations_org_name_key ON public.locations USING btree (organization_id, lower(name));
CREATE INDEX locations_pkey_lookup ON public.locations USING btree (id);
create policy locations_delete on public.locations as permissive for delete to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
create policy locations_insert on public.locations as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
create policy locations_read on public.locations as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org)));
create policy locations_read_patient on public.locations as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)));
create policy locations_update on public.locations as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
CREATE TRIGGER locations_touch BEFORE UPDATE ON public.locations FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.media_events (
  media_session_id uuid not null,
  seq integer not null,
  kind text not null,
  occurred_at timestamp with time zone not null,
  payload jsonb not null,
  received_at timestamp with time zone not null default now(),
  organization_id uuid not null,
  patient_user_id uuid not null,
  constraint media_events_seq_check CHECK ((seq >= 0)),
  constraint media_events_organization_id_patient_user_id_media_session_fkey FOREIGN KEY (organization_id, patient_user_id, media_session_id) REFERENCES media_session_metrics(organization_id, patient_user_id, media_session_id) ON DELETE CASCADE,
  constraint media_events_pkey PRIMARY KEY (organization_id, patient_user_id, media_session_id, seq)
);
alter table public.media_events enable row level security;
alter table public.media_events force row level security;
create policy media_events_bypass on public.media_events as permissive for select to app_bypass using (true);

create table public.media_session_metrics (
  media_session_id uuid not null,
  organization_id uuid not null,
  patient_user_id uuid not null,
  exercise_id uuid,
  video_id text,
  started_at timestamp with time zone,
  load_time_ms integer,
  connection jsonb,
  heartbeats integer not null default 0,
  bitrate_kbps_sum bigint not null default 0,
  last_bitrate_kbps integer,
  last_quality text,
  quality_changes integer not null default 0,
  buffering_events integer not null default 0,
  buffering_ms bigint not null default 0,
  dropped_frames bigint not null default 0,
  max_position_s numeric,
  milestones integer[] not null default '{}'::integer[],
  completion_status text,
  watched_percent numeric,
  final_stats jsonb,
  ended_at timestamp with time zone,
  last_event_at timestamp with time zone not null default now(),
  created_at timestamp with time zone not null default now(),
  constraint media_session_metrics_completion_status_check CHECK ((completion_status = ANY (ARRAY['completed'::text, 'abandoned'::text, 'error'::text]))),
  constraint media_session_metrics_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id) ON DELETE SET NULL,
  constraint media_session_metrics_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint media_session_metrics_patient_user_id_fkey FOREIGN KEY (patient_user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint media_session_metrics_pkey PRIMARY KEY (organization_id, patient_user_id, media_session_id)
);
alter table public.media_session_metrics enable row level security;
alter table public.media_session_metrics force row level security;
CREATE INDEX media_session_metrics_age_idx ON public.media_session_metrics USING btree (created_at);
CREATE INDEX media_session_metrics_org_idx ON public.media_session_metrics USING btree (organization_id, created_at DESC);
create policy media_session_metrics_read on public.media_session_metrics as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));

create table public.memberships (
  user_id uuid not null,
  organization_id uuid not null,
  role_id uuid not null,
  created_at timestamp with time zone not null default now(),
  email_sort text,
  constraint memberships_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint memberships_role_id_organization_id_fkey FOREIGN KEY (role_id, organization_id) REFERENCES roles(id, organization_id),
  constraint memberships_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint memberships_pkey PRIMARY KEY (organization_id, user_id)
);
alter table public.memberships enable row level security;
alter table public.memberships force row level security;
CREATE INDEX memberships_org_email_sort_idx ON public.memberships USING btree (organization_id, email_sort, user_id);
CREATE INDEX memberships_org_list_idx ON public.memberships USING btree (organization_id, created_at, user_id);
create policy memberships_read on public.memberships as permissive for select to app_rls using (((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('organizations.view_directory'::text) AS has_permission) OR ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)))));
create policy memberships_write on public.memberships as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)));
CREATE TRIGGER memberships_context_version AFTER INSERT OR DELETE OR UPDATE ON public.memberships FOR EACH ROW EXECUTE FUNCTION app.bump_user_context_version('user_id');
CREATE TRIGGER memberships_email_sort BEFORE INSERT OR UPDATE OF user_id ON public.memberships FOR EACH ROW EXECUTE FUNCTION app.membership_email_sort();
CREATE TRIGGER memberships_events AFTER INSERT OR DELETE OR UPDATE OF role_id ON public.memberships FOR EACH ROW EXECUTE FUNCTION app.emit_membership_event();
CREATE TRIGGER memberships_principal_rule BEFORE INSERT OR UPDATE ON public.memberships FOR EACH ROW EXECUTE FUNCTION app.membership_principal_rule();

create table public.message_templates (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  channel text not null,
  purpose text not null default 'transactional'::text,
  content jsonb not null,
  attach_ics boolean not null default true,
  created_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint message_templates_channel_check CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text]))),
  constraint message_templates_content_check CHECK (((jsonb_typeof(content) = 'object'::text) AND (content <> '{}'::jsonb))),
  constraint message_templates_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint message_templates_purpose_check CHECK ((purpose = ANY (ARRAY['transactional'::text, 'marketing'::text]))),
  constraint message_templates_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint message_templates_pkey PRIMARY KEY (organization_id, id),
  constraint message_templates_organization_id_name_key UNIQUE (organization_id, name)
);
alter table public.message_templates enable row level security;
alter table public.message_templates force row level security;
CREATE INDEX message_templates_org_created_idx ON public.message_templates USING btree (organization_id, created_at DESC, id DESC);
create policy message_templates_read on public.message_templates as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('automations.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('automations.manage'::text) AS has_permission))));
create policy message_templates_write on public.message_templates as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission)));
CREATE TRIGGER message_templates_touch BEFORE UPDATE ON public.message_templates FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.messages (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  channel text not null,
  purpose text not null,
  template_id uuid,
  patient_id uuid,
  appointment_id uuid,
  run_id uuid,
  action_index integer,
  to_address text,
  language text,
  subject text,
  body_text text,
  status text not null default 'sending'::text,
  provider text,
  provider_message_id text,
  error text,
  attempts integer not null default 0,
  claimed_until timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  sent_at timestamp with time zone,
  bounced_at timestamp with time zone,
  updated_at timestamp with time zone not null default now(),
  constraint messages_action_index_check CHECK ((action_index >= 0)),
  constraint messages_attempts_check CHECK ((attempts >= 0)),
  constraint messages_body_text_check CHECK ((length(body_text) <= 20000)),
  constraint messages_channel_check CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text]))),
  constraint messages_error_check CHECK ((length(error) <= 1000)),
  constraint messages_language_check CHECK ((length(language) <= 35)),
  constraint messages_provider_check CHECK ((length(provider) <= 40)),
  constraint messages_provider_message_id_check CHECK ((length(provider_message_id) <= 300)),
  constraint messages_purpose_check CHECK ((purpose = ANY (ARRAY['transactional'::text, 'marketing'::text]))),
  constraint messages_status_check CHECK ((status = ANY (ARRAY['sending'::text, 'retrying'::text, 'sent'::text, 'refused'::text, 'bounced'::text, 'failed'::text, 'erased'::text]))),
  constraint messages_subject_check CHECK ((length(subject) <= 998)),
  constraint messages_to_address_check CHECK ((length(to_address) <= 320)),
  constraint messages_organization_id_appointment_id_fkey FOREIGN KEY (organization_id, appointment_id) REFERENCES appointments(organization_id, id) ON DELETE SET NULL (appointment_id),
  constraint messages_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint messages_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE SET NULL (patient_id),
  constraint messages_organization_id_template_id_fkey FOREIGN KEY (organization_id, template_id) REFERENCES message_templates(organization_id, id) ON DELETE SET NULL (template_id),
  constraint messages_pkey PRIMARY KEY (organization_id, id)
);
alter table public.messages enable row level security;
alter table public.messages force row level security;
CREATE INDEX messages_org_created_idx ON public.messages USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX messages_org_patient_idx ON public.messages USING btree (organization_id, patient_id) WHERE (patient_id IS NOT NULL);
CREATE INDEX messages_provider_id_idx ON public.messages USING btree (provider, provider_message_id) WHERE (provider_message_id IS NOT NULL);
CREATE UNIQUE INDEX messages_run_action_key ON public.messages USING btree (organization_id, run_id, action_index) WHERE (run_id IS NOT NULL);
create policy messages_read on public.messages as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('messages.view_org'::text) AS has_permission) OR ((patient_id IS NOT NULL) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))));
create policy messages_test_send on public.messages as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (run_id IS NULL) AND (patient_id IS NULL) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (run_id IS NULL) AND (patient_id IS NULL) AND ( SELECT app.has_permission('automations.manage'::text) AS has_permission)));
CREATE TRIGGER messages_touch BEFORE UPDATE ON public.messages FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.organization_domains (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  domain text not null,
  verification_token text not null,
  verified_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  constraint organization_domains_domain_check CHECK ((domain ~ '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$'::text)),
  constraint organization_domains_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint organization_domains_pkey PRIMARY KEY (id)
);
alter table public.organization_domains enable row level security;
alter table public.organization_domains force row level security;
CREATE UNIQUE INDEX organization_domains_domain_key ON public.organization_domains USING btree (domain);
CREATE INDEX organization_domains_org_idx ON public.organization_domains USING btree (organization_id);
create policy organization_domains_all on public.organization_domains as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_domains'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_domains'::text) AS has_permission)));

create table public.organization_rate_limits (
  organization_id uuid not null,
  route_limit integer not null,
  reason text,
  updated_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint organization_rate_limits_reason_check CHECK ((length(reason) <= 500)),
  constraint organization_rate_limits_route_limit_check CHECK (((route_limit >= 1) AND (route_limit <= 1000000))),
  constraint organization_rate_limits_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint organization_rate_limits_pkey PRIMARY KEY (organization_id)
);
alter table public.organization_rate_limits enable row level security;
alter table public.organization_rate_limits force row level security;
CREATE TRIGGER organization_rate_limits_touch BEFORE UPDATE ON public.organization_rate_limits FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.organization_settings (
  organization_id uuid not null,
  default_timezone text not null default 'UTC'::text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  calendar_title text not null default 'clinic'::text,
  constraint organization_settings_calendar_title_check CHECK ((calendar_title = ANY (ARRAY['clinic'::text, 'clinic_and_service'::text, 'full'::text]))),
  constraint organization_settings_default_timezone_check CHECK (((length(default_timezone) >= 1) AND (length(default_timezone) <= 64))),
  constraint organization_settings_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint organization_settings_pkey PRIMARY KEY (organization_id)
);
alter table public.organization_settings enable row level security;
alter table public.organization_settings force row level security;
create policy organization_settings_read on public.organization_settings as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.view_directory'::text) AS has_permission)));
create policy organization_settings_update on public.organization_settings as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.update_settings'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.update_settings'::text) AS has_permission)));
CREATE TRIGGER organization_settings_touch BEFORE UPDATE ON public.organization_settings FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.organizations (
  id uuid not null default app.uuid_v7(),
  slug text not null,
  name text not null,
  language_code text not null default 'en'::text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint organizations_language_code_check CHECK (((length(language_code) >= 1) AND (length(language_code) <= 35))),
  constraint organizations_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
  constraint organizations_slug_check CHECK ((slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'::text)),
  constraint organizations_pkey PRIMARY KEY (id),
  constraint organizations_slug_key UNIQUE (slug)
);
alter table public.organizations enable row level security;
alter table public.organizations force row level security;
create policy organizations_read on public.organizations as permissive for select to app_rls using (((id = ( SELECT app.current_org_id() AS current_org_id)) OR (id IN ( SELECT m.organization_id
   FROM memberships m
  WHERE (m.user_id = ( SELECT app.current_principal_id() AS current_principal_id)))) OR (id IN ( SELECT p.organization_id
   FROM patients p
  WHERE ((p.user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (p.deleted_at IS NULL))))));
create policy organizations_update on public.organizations as permissive for update to app_rls using (((id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.update'::text) AS has_permission))) with check ((id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER organizations_context_epoch AFTER INSERT OR DELETE ON public.organizations FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();
CREATE TRIGGER organizations_settings_row AFTER INSERT ON public.organizations FOR EACH ROW EXECUTE FUNCTION app.create_organization_settings();
CREATE TRIGGER organizations_touch BEFORE UPDATE ON public.organizations FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.patient_access_log (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  occurred_at timestamp with time zone not null default now(),
  actor_user_id uuid,
  patient_ids uuid[] not null,
  action text not null,
  target_id uuid,
  action_context text,
  context_id uuid,
  request_id text,
  ip inet,
  method text,
  route text,
  constraint patient_access_log_action_check CHECK ((action ~ '^[a-z][a-z0-9_.]*$'::text)),
  constraint patient_access_log_action_context_check CHECK ((action_context = ANY (ARRAY['impersonation'::text, 'break_glass'::text, 'caregiver'::text]))),
  constraint patient_access_log_method_check CHECK ((method ~ '^[A-Z]{3,7}$'::text)),
  constraint patient_access_log_patient_ids_check CHECK (((cardinality(patient_ids) >= 1) AND (cardinality(patient_ids) <= 500))),
  constraint patient_access_log_request_id_check CHECK ((length(request_id) <= 100)),
  constraint patient_access_log_route_check CHECK ((length(route) <= 200)),
  constraint patient_access_log_pkey PRIMARY KEY (organization_id, id)
);
alter table public.patient_access_log enable row level security;
alter table public.patient_access_log force row level security;
CREATE INDEX patient_access_log_org_time_idx ON public.patient_access_log USING btree (organization_id, occurred_at DESC, id DESC);
CREATE INDEX patient_access_log_patients_idx ON public.patient_access_log USING gin (patient_ids);
create policy patient_access_log_read on public.patient_access_log as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('audit_log.view_org'::text) AS has_permission)));
create policy patient_access_log_read_own on public.patient_access_log as permissive for select to app_rls using ((patient_ids && ( SELECT app.my_patient_ids() AS my_patient_ids)));
CREATE TRIGGER patient_access_log_append_only BEFORE DELETE OR UPDATE ON public.patient_access_log FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER patient_access_log_no_truncate BEFORE TRUNCATE ON public.patient_access_log FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.patient_counts (
  organization_id uuid not null,
  slot smallint not null,
  live bigint not null default 0,
  constraint patient_counts_slot_check CHECK (((slot >= 0) AND (slot <= 7))),
  constraint patient_counts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint patient_counts_pkey PRIMARY KEY (organization_id, slot)
);
alter table public.patient_counts enable row level security;
alter table public.patient_counts force row level security;
create policy patient_counts_read on public.patient_counts as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('patients.view'::text) AS has_permission))));

create table public.patient_exercise_log (
  organization_id uuid not null,
  patient_user_id uuid not null,
  exercise_id uuid not null,
  sessions integer not null default 0,
  completed_sessions integer not null default 0,
  total_reps integer not null default 0,
  last_session_id uuid,
  last_session_at timestamp with time zone,
  last_form_score integer,
  best_form_score integer,
  updated_at timestamp with time zone not null default now(),
  constraint patient_exercise_log_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id) ON DELETE CASCADE,
  constraint patient_exercise_log_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint patient_exercise_log_patient_user_id_fkey FOREIGN KEY (patient_user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint patient_exercise_log_pkey PRIMARY KEY (organization_id, patient_user_id, exercise_id)
);
alter table public.patient_exercise_log enable row level security;
alter table public.patient_exercise_log force row level security;
create policy patient_exercise_log_read on public.patient_exercise_log as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));

create table public.patient_tags (
  organization_id uuid not null,
  patient_id uuid not null,
  tag text not null,
  created_at timestamp with time zone not null default now(),
  constraint patient_tags_tag_check CHECK ((tag ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'::text)),
  constraint patient_tags_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint patient_tags_pkey PRIMARY KEY (organization_id, patient_id, tag)
);
alter table public.patient_tags enable row level security;
alter table public.patient_tags force row level security;
CREATE INDEX patient_tags_tag_idx ON public.patient_tags USING btree (organization_id, tag, patient_id);
create policy patient_tags_read on public.patient_tags as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('segments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('segments.manage'::text) AS has_permission))));
create policy patient_tags_write on public.patient_tags as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('patients.update_org'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('patients.update_org'::text) AS has_permission)));

create table public.patients (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  user_id uuid not null,
  profile_shared boolean not null default false,
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  first_name text,
  last_name text,
  date_of_birth date,
  phone text,
  notes text,
  custom_field_values jsonb not null default '{}'::jsonb,
  created_by_principal_id uuid,
  updated_at timestamp with time zone not null default now(),
  sex text,
  address_line1 text,
  address_line2 text,
  city text,
  region text,
  postal_code text,
  country text,
  preferred_language text,
  external_record_number text,
  user_email text,
  search_text text default ((((((COALESCE(first_name, ''::text) || ' '::text) || COALESCE(last_name, ''::text)) || '
'::text) || COALESCE(phone, ''::text)) || '
'::text) || COALESCE(user_email, ''::text)),
  constraint patients_address_line1_check CHECK ((length(address_line1) <= 200)),
  constraint patients_address_line2_check CHECK ((length(address_line2) <= 200)),
  constraint patients_city_check CHECK ((length(city) <= 100)),
  constraint patients_country_check CHECK ((country ~ '^[A-Z]{2}$'::text)),
  constraint patients_custom_field_values_check CHECK ((jsonb_typeof(custom_field_values) = 'object'::text)),
  constraint patients_external_record_number_check CHECK (((length(btrim(external_record_number)) >= 1) AND (length(btrim(external_record_number)) <= 64))),
  constraint patients_first_name_check CHECK ((length(first_name) <= 100)),
  constraint patients_last_name_check CHECK ((length(last_name) <= 100)),
  constraint patients_notes_check CHECK ((length(notes) <= 10000)),
  constraint patients_phone_check CHECK ((length(phone) <= 40)),
  constraint patients_postal_code_check CHECK ((length(postal_code) <= 20)),
  constraint patients_preferred_language_check CHECK (((length(preferred_language) >= 2) AND (length(preferred_language) <= 35))),
  constraint patients_region_check CHECK ((length(region) <= 100)),
  constraint patients_sex_check CHECK ((sex = ANY (ARRAY['female'::text, 'male'::text, 'other'::text, 'unknown'::text]))),
  constraint patients_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint patients_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint patients_pkey PRIMARY KEY (organization_id, id),
  constraint patients_organization_id_user_id_key UNIQUE (organization_id, user_id)
);
alter table public.patients enable row level security;
alter table public.patients force row level security;
CREATE UNIQUE INDEX patients_org_external_record_key ON public.patients USING btree (organization_id, external_record_number) WHERE ((external_record_number IS NOT NULL) AND (deleted_at IS NULL));
CREATE INDEX patients_org_live_created_idx ON public.patients USING btree (organization_id, created_at DESC, id DESC) WHERE (deleted_at IS NULL);
CREATE INDEX patients_org_live_first_name_idx ON public.patients USING btree (organization_id, lower(first_name), id) WHERE (deleted_at IS NULL);
CREATE INDEX patients_org_live_id_idx ON public.patients USING btree (organization_id, id) INCLUDE (user_id, deleted_at) WHERE (deleted_at IS NULL);
CREATE INDEX patients_org_live_last_name_idx ON public.patients USING btree (organization_id, lower(last_name), id) WHERE (deleted_at IS NULL);
CREATE INDEX patients_org_live_search_idx ON public.patients USING gin (organization_id, search_text gin_trgm_ops) WHERE (deleted_at IS NULL);
CREATE INDEX patients_pkey_lookup ON public.patients USING btree (id);
CREATE INDEX patients_user_idx ON public.patients USING btree (user_id);
create policy patients_insert on public.patients as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('patients.onboard'::text) AS has_permission)));
create policy patients_read_org on public.patients as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('patients.view'::text) AS has_permission)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy patients_read_own on public.patients as permissive for select to app_rls using (((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR (id = ( SELECT app.current_patient_id() AS current_patient_id))));
create policy patients_update_org on public.patients as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.update_org'::text) AS has_permission) OR ( SELECT app.has_permission('patients.delete'::text) AS has_permission)))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
create policy patients_update_self on public.patients as permissive for update to app_rls using ((((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR (id = ( SELECT app.current_patient_id() AS current_patient_id))) AND (deleted_at IS NULL))) with check (((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR (id = ( SELECT app.current_patient_id() AS current_patient_id))));
CREATE TRIGGER patient_counts_delete AFTER DELETE ON public.patients REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app.patient_counts_apply();
CREATE TRIGGER patient_counts_insert AFTER INSERT ON public.patients REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app.patient_counts_apply();
CREATE TRIGGER patient_counts_truncate AFTER TRUNCATE ON public.patients FOR EACH STATEMENT EXECUTE FUNCTION app.patient_counts_truncate();
CREATE TRIGGER patient_counts_update AFTER UPDATE ON public.patients REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app.patient_counts_apply();
CREATE TRIGGER patients_caregivers_context_version AFTER UPDATE OF deleted_at ON public.patients FOR EACH ROW WHEN ((old.deleted_at IS DISTINCT FROM new.deleted_at)) EXECUTE FUNCTION app.bump_caregivers_context_version();
CREATE TRIGGER patients_context_version AFTER INSERT OR DELETE OR UPDATE ON public.patients FOR EACH ROW EXECUTE FUNCTION app.bump_user_context_version('user_id');
CREATE TRIGGER patients_touch BEFORE UPDATE ON public.patients FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();
CREATE TRIGGER patients_user_email BEFORE INSERT OR UPDATE OF user_id, deleted_at ON public.patients FOR EACH ROW EXECUTE FUNCTION app.patients_user_email();
CREATE TRIGGER patients_write_guard BEFORE UPDATE ON public.patients FOR EACH ROW EXECUTE FUNCTION app.patients_write_guard();

create table public.pdf_template_versions (
  organization_id uuid not null,
  pdf_template_id uuid not null,
  version integer not null,
  snapshot jsonb not null,
  published_at timestamp with time zone not null default now(),
  published_by_principal_id uuid,
  constraint pdf_template_versions_snapshot_check CHECK ((jsonb_typeof(snapshot) = 'object'::text)),
  constraint pdf_template_versions_version_check CHECK ((version >= 1)),
  constraint pdf_template_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint pdf_template_versions_organization_id_pdf_template_id_fkey FOREIGN KEY (organization_id, pdf_template_id) REFERENCES pdf_templates(organization_id, id) ON DELETE CASCADE,
  constraint pdf_template_versions_pkey PRIMARY KEY (organization_id, pdf_template_id, version)
);
alter table public.pdf_template_versions enable row level security;
alter table public.pdf_template_versions force row level security;
create policy pdf_template_versions_insert on public.pdf_template_versions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission)));
create policy pdf_template_versions_read on public.pdf_template_versions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission) OR ( SELECT app.has_permission('pdf_templates.view_published'::text) AS has_permission) OR ( SELECT app.has_permission('pdf_templates.render'::text) AS has_permission) OR ( SELECT app.has_permission('documents.create'::text) AS has_permission))));
CREATE TRIGGER pdf_template_versions_append_only BEFORE DELETE OR UPDATE ON public.pdf_template_versions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER pdf_template_versions_no_truncate BEFORE TRUNCATE ON public.pdf_template_versions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.pdf_templates (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  description text,
  kind text not null,
  content jsonb not null,
  version integer not null default 1,
  published boolean not null default true,
  published_at timestamp with time zone not null default now(),
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint pdf_templates_check CHECK (((version > 0) OR (NOT published))),
  constraint pdf_templates_content_check CHECK ((jsonb_typeof(content) = 'object'::text)),
  constraint pdf_templates_description_check CHECK ((length(description) <= 2000)),
  constraint pdf_templates_kind_check CHECK ((kind = ANY (ARRAY['form'::text, 'visit_summary'::text, 'prescription'::text, 'report'::text, 'receipt'::text]))),
  constraint pdf_templates_name_check CHECK (((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200))),
  constraint pdf_templates_version_check CHECK ((version >= 0)),
  constraint pdf_templates_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint pdf_templates_pkey PRIMARY KEY (organization_id, id)
);
alter table public.pdf_templates enable row level security;
alter table public.pdf_templates force row level security;
CREATE INDEX pdf_templates_org_idx ON public.pdf_templates USING btree (organization_id, created_at DESC, id DESC);
create policy pdf_templates_insert on public.pdf_templates as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission)));
create policy pdf_templates_read on public.pdf_templates as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission) OR ( SELECT app.has_permission('pdf_templates.view_published'::text) AS has_permission) OR ( SELECT app.has_permission('pdf_templates.render'::text) AS has_permission) OR ( SELECT app.has_permission('documents.create'::text) AS has_permission)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy pdf_templates_update on public.pdf_templates as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('pdf_templates.manage'::text) AS has_permission))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER pdf_templates_touch BEFORE UPDATE ON public.pdf_templates FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.permissions (
  code text not null,
  resource text not null,
  action text not null,
  description text not null,
  constraint permissions_check CHECK ((code = ((resource || '.'::text) || action))),
  constraint permissions_pkey PRIMARY KEY (code)
);
alter table public.permissions enable row level security;
alter table public.permissions force row level security;
create policy permissions_read on public.permissions as permissive for select to app_rls using ((( SELECT app.has_permission('organizations.view_directory'::text) AS has_permission) OR ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)));

create table public.plan_sessions (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  enrollment_id uuid not null,
  patient_id uuid not null,
  treatment_plan_id uuid not null,
  plan_version integer not null,
  plan_day integer not null,
  scheduled_on date not null,
  item_index integer not null,
  exercise_id uuid not null,
  status text not null,
  exercise_session_id uuid,
  starts integer not null default 0,
  render_id uuid,
  seed bigint,
  started_at timestamp with time zone,
  completed_at timestamp with time zone,
  skipped_at timestamp with time zone,
  skip_reason text,
  rep_count integer,
  form_score integer,
  rom jsonb,
  duration_s numeric,
  algorithm_version text,
  software_version text,
  udi_di text,
  pain smallint,
  effort smallint,
  patient_note text,
  acted_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint plan_sessions_algorithm_version_check CHECK (((length(algorithm_version) >= 1) AND (length(algorithm_version) <= 100))),
  constraint plan_sessions_check CHECK ((((status = 'skipped'::text) = (skip_reason IS NOT NULL)) AND ((status = 'skipped'::text) = (skipped_at IS NOT NULL)))),
  constraint plan_sessions_check1 CHECK (((status = 'completed'::text) = (completed_at IS NOT NULL))),
  constraint plan_sessions_check2 CHECK ((((rep_count IS NULL) AND (form_score IS NULL) AND (rom IS NULL)) OR (algorithm_version IS NOT NULL))),
  constraint plan_sessions_duration_s_check CHECK ((duration_s >= (0)::numeric)),
  constraint plan_sessions_effort_check CHECK (((effort >= 0) AND (effort <= 10))),
  constraint plan_sessions_form_score_check CHECK (((form_score >= 0) AND (form_score <= 100))),
  constraint plan_sessions_item_index_check CHECK (((item_index >= 0) AND (item_index <= 19))),
  constraint plan_sessions_pain_check CHECK (((pain >= 0) AND (pain <= 10))),
  constraint plan_sessions_patient_note_check CHECK ((length(patient_note) <= 2000)),
  constraint plan_sessions_plan_day_check CHECK ((plan_day >= 1)),
  constraint plan_sessions_rep_count_check CHECK ((rep_count >= 0)),
  constraint plan_sessions_rom_check CHECK (((rom IS NULL) OR (jsonb_typeof(rom) = 'object'::text))),
  constraint plan_sessions_skip_reason_check CHECK (((length(btrim(skip_reason)) >= 1) AND (length(btrim(skip_reason)) <= 500))),
  constraint plan_sessions_software_version_check CHECK ((length(software_version) <= 100)),
  constraint plan_sessions_starts_check CHECK ((starts >= 0)),
  constraint plan_sessions_status_check CHECK ((status = ANY (ARRAY['started'::text, 'completed'::text, 'skipped'::text]))),
  constraint plan_sessions_udi_di_check CHECK ((length(udi_di) <= 100)),
  constraint plan_sessions_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id),
  constraint plan_sessions_exercise_session_id_fkey FOREIGN KEY (organization_id, exercise_session_id) REFERENCES exercise_sessions(organization_id, id) ON DELETE SET NULL (exercise_session_id),
  constraint plan_sessions_organization_id_enrollment_id_fkey FOREIGN KEY (organization_id, enrollment_id) REFERENCES treatment_enrollments(organization_id, id) ON DELETE CASCADE,
  constraint plan_sessions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint plan_sessions_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint plan_sessions_organization_id_treatment_plan_id_plan_versi_fkey FOREIGN KEY (organization_id, treatment_plan_id, plan_version) REFERENCES treatment_plan_versions(organization_id, treatment_plan_id, version),
  constraint plan_sessions_render_id_fkey FOREIGN KEY (render_id) REFERENCES exercise_renders(id) ON DELETE SET NULL,
  constraint plan_sessions_pkey PRIMARY KEY (organization_id, id),
  constraint plan_sessions_organization_id_enrollment_id_scheduled_on_it_key UNIQUE (organization_id, enrollment_id, scheduled_on, item_index)
);
alter table public.plan_sessions enable row level security;
alter table public.plan_sessions force row level security;
CREATE INDEX plan_sessions_exercise_session_idx ON public.plan_sessions USING btree (exercise_session_id) WHERE (exercise_session_id IS NOT NULL);
CREATE INDEX plan_sessions_patient_idx ON public.plan_sessions USING btree (organization_id, patient_id, scheduled_on);
CREATE INDEX plan_sessions_window_idx ON public.plan_sessions USING btree (organization_id, enrollment_id, scheduled_on) INCLUDE (status, form_score, completed_at, patient_id);
create policy plan_sessions_read on public.plan_sessions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission) OR (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))));
create policy plan_sessions_write on public.plan_sessions as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (patient_id = ( SELECT app.current_patient_id() AS current_patient_id))));
CREATE TRIGGER plan_sessions_closed BEFORE UPDATE ON public.plan_sessions FOR EACH ROW EXECUTE FUNCTION app.plan_session_closed_guard();
CREATE TRIGGER plan_sessions_touch BEFORE UPDATE ON public.plan_sessions FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.platform_memberships (
  user_id uuid not null,
  role text not null,
  granted_at timestamp with time zone not null default now(),
  constraint platform_memberships_role_check CHECK ((role ~ '^[a-z][a-z0-9_]*$'::text)),
  constraint platform_memberships_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint platform_memberships_pkey PRIMARY KEY (user_id, role)
);
alter table public.platform_memberships enable row level security;
alter table public.platform_memberships force row level security;
create policy platform_memberships_read_self on public.platform_memberships as permissive for select to app_rls using ((user_id = ( SELECT app.current_principal_id() AS current_principal_id)));
CREATE TRIGGER platform_memberships_context_version AFTER INSERT OR DELETE OR UPDATE ON public.platform_memberships FOR EACH ROW EXECUTE FUNCTION app.bump_user_context_version('user_id');
CREATE TRIGGER platform_memberships_human BEFORE INSERT OR UPDATE ON public.platform_memberships FOR EACH ROW EXECUTE FUNCTION app.platform_membership_human_only();

create table public.platform_provider_kinds (
  capability text not null,
  provider text not null,
  constraint platform_provider_kinds_capability_check CHECK ((capability = ANY (ARRAY['email'::text, 'storage'::text, 'auth'::text, 'sms'::text]))),
  constraint platform_provider_kinds_pkey PRIMARY KEY (capability),
  constraint platform_provider_kinds_capability_provider_key UNIQUE (capability, provider)
);
alter table public.platform_provider_kinds enable row level security;
alter table public.platform_provider_kinds force row level security;

create table public.platform_service_providers (
  id uuid not null default app.uuid_v7(),
  capability text not null,
  provider text not null,
  organization_id uuid,
  credentials_sealed text,
  credentials_key_id text,
  config jsonb not null default '{}'::jsonb,
  status text not null default 'inactive'::text,
  last_error text,
  last_error_at timestamp with time zone,
  last_health_check_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint platform_service_providers_check CHECK (((credentials_sealed IS NULL) = (credentials_key_id IS NULL))),
  constraint platform_service_providers_check1 CHECK (((status = 'inactive'::text) OR (credentials_sealed IS NOT NULL))),
  constraint platform_service_providers_config_check CHECK ((jsonb_typeof(config) = 'object'::text)),
  constraint platform_service_providers_status_check CHECK ((status = ANY (ARRAY['active'::text, 'error'::text, 'inactive'::text]))),
  constraint platform_service_providers_capability_provider_fkey FOREIGN KEY (capability, provider) REFERENCES platform_provider_kinds(capability, provider),
  constraint platform_service_providers_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint platform_service_providers_pkey PRIMARY KEY (id)
);
alter table public.platform_service_providers enable row level security;
alter table public.platform_service_providers force row level security;
CREATE UNIQUE INDEX platform_service_providers_scope_key ON public.platform_service_providers USING btree (capability, COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid));

create table public.pose_batches (
  session_id uuid not null,
  seq integer not null,
  organization_id uuid not null,
  frame_count integer not null,
  t_first_ms bigint not null,
  t_last_ms bigint not null,
  payload bytea not null,
  received_at timestamp with time zone not null default now(),
  constraint pose_batches_frame_count_check CHECK (((frame_count >= 1) AND (frame_count <= 1000))),
  constraint pose_batches_seq_check CHECK ((seq >= 0)),
  constraint pose_batches_pkey PRIMARY KEY (organization_id, session_id, seq)
);
alter table public.pose_batches enable row level security;
alter table public.pose_batches force row level security;
CREATE INDEX pose_batches_pkey_lookup ON public.pose_batches USING btree (session_id, seq);
create policy pose_batches_bypass on public.pose_batches as permissive for select to app_bypass using (true);

create table public.pose_rep_metrics (
  session_id uuid not null,
  rep_index integer not null,
  organization_id uuid not null,
  patient_user_id uuid not null,
  start_ms bigint not null,
  end_ms bigint not null,
  range_deg numeric not null,
  peak_deg numeric not null,
  tempo_s numeric not null,
  score integer not null,
  constraint pose_rep_metrics_score_check CHECK (((score >= 0) AND (score <= 100))),
  constraint pose_rep_metrics_session_id_fkey FOREIGN KEY (organization_id, session_id) REFERENCES exercise_sessions(organization_id, id) ON DELETE CASCADE,
  constraint pose_rep_metrics_pkey PRIMARY KEY (organization_id, session_id, rep_index)
);
alter table public.pose_rep_metrics enable row level security;
alter table public.pose_rep_metrics force row level security;
CREATE INDEX pose_rep_metrics_pkey_lookup ON public.pose_rep_metrics USING btree (session_id, rep_index);
create policy pose_rep_metrics_read on public.pose_rep_metrics as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));

create table public.pose_session_metrics (
  session_id uuid not null,
  organization_id uuid not null,
  patient_user_id uuid not null,
  exercise_id uuid not null,
  status text not null,
  rep_count integer not null,
  form_score integer,
  rom jsonb not null,
  algorithm_version text not null,
  duration_s numeric not null,
  frames integer not null,
  valid_frames integer not null,
  ended_at timestamp with time zone not null,
  created_at timestamp with time zone not null default now(),
  constraint pose_session_metrics_form_score_check CHECK (((form_score >= 0) AND (form_score <= 100))),
  constraint pose_session_metrics_session_id_fkey FOREIGN KEY (organization_id, session_id) REFERENCES exercise_sessions(organization_id, id) ON DELETE CASCADE,
  constraint pose_session_metrics_pkey PRIMARY KEY (organization_id, session_id)
);
alter table public.pose_session_metrics enable row level security;
alter table public.pose_session_metrics force row level security;
CREATE INDEX pose_session_metrics_age_idx ON public.pose_session_metrics USING btree (ended_at);
CREATE INDEX pose_session_metrics_pkey_lookup ON public.pose_session_metrics USING btree (session_id);
create policy pose_session_metrics_read on public.pose_session_metrics as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));
create policy pose_session_metrics_read_caregiver on public.pose_session_metrics as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (patient_user_id = ( SELECT app.current_patient_user_id() AS current_patient_user_id))));

create table public.products (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  sku text not null,
  description text,
  price_minor integer not null default 0,
  currency text not null,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint products_currency_check CHECK ((currency ~ '^[A-Z]{3}$'::text)),
  constraint products_description_check CHECK ((length(description) <= 5000)),
  constraint products_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint products_price_minor_check CHECK ((price_minor >= 0)),
  constraint products_sku_check CHECK ((sku ~ '^[A-Z0-9][A-Z0-9._-]{0,63}$'::text)),
  constraint products_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint products_pkey PRIMARY KEY (organization_id, id),
  constraint products_organization_id_sku_key UNIQUE (organization_id, sku)
);
alter table public.products enable row level security;
alter table public.products force row level security;
CREATE INDEX products_org_created_idx ON public.products USING btree (organization_id, created_at DESC, id DESC);
create policy products_read on public.products as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.may_read_catalog() AS may_read_catalog)));
create policy products_write on public.products as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));
CREATE TRIGGER products_touch BEFORE UPDATE ON public.products FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.role_permissions (
  role_id uuid not null,
  permission_code text not null,
  organization_id uuid,
  constraint role_permissions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint role_permissions_permission_code_fkey FOREIGN KEY (permission_code) REFERENCES permissions(code),
  constraint role_permissions_role_id_fkey FOREIGN KEY (role_id) REFERENCES roles(id) ON DELETE CASCADE,
  constraint role_permissions_pkey PRIMARY KEY (role_id, permission_code)
);
alter table public.role_permissions enable row level security;
alter table public.role_permissions force row level security;
CREATE INDEX role_permissions_org_idx ON public.role_permissions USING btree (organization_id);
create policy role_permissions_read on public.role_permissions as permissive for select to app_rls using (((organization_id IS NULL) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('organizations.view_directory'::text) AS has_permission) OR ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)))));
create policy role_permissions_write on public.role_permissions as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)));
CREATE TRIGGER role_permissions_context_epoch AFTER INSERT OR DELETE OR UPDATE ON public.role_permissions FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();

create table public.roles (
  id uuid not null default app.uuid_v7(),
  organization_id uuid,
  code text not null,
  name text not null,
  is_system boolean not null default false,
  created_at timestamp with time zone not null default now(),
  constraint roles_code_check CHECK ((code ~ '^[a-z][a-z0-9_]{0,62}$'::text)),
  constraint roles_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint roles_pkey PRIMARY KEY (id),
  constraint roles_id_organization_id_key UNIQUE (id, organization_id)
);
alter table public.roles enable row level security;
alter table public.roles force row level security;
CREATE UNIQUE INDEX roles_org_code_key ON public.roles USING btree (organization_id, code) WHERE (organization_id IS NOT NULL);
CREATE UNIQUE INDEX roles_template_code_key ON public.roles USING btree (code) WHERE (organization_id IS NULL);
create policy roles_read on public.roles as permissive for select to app_rls using (((organization_id IS NULL) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('organizations.view_directory'::text) AS has_permission) OR ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)))));
create policy roles_write on public.roles as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)));
CREATE TRIGGER roles_context_epoch AFTER INSERT OR DELETE OR UPDATE ON public.roles FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();

create table public.segment_evaluations (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  segment_id uuid not null,
  status text not null default 'running'::text,
  total integer not null default 0,
  processed integer not null default 0,
  member_count integer not null default 0,
  error text,
  requested_by_principal_id uuid not null,
  requested_permissions text[] not null default '{}'::text[],
  started_at timestamp with time zone not null default now(),
  finished_at timestamp with time zone,
  constraint segment_evaluations_error_check CHECK ((length(error) <= 1000)),
  constraint segment_evaluations_status_check CHECK ((status = ANY (ARRAY['running'::text, 'done'::text, 'failed'::text]))),
  constraint segment_evaluations_organization_id_segment_id_fkey FOREIGN KEY (organization_id, segment_id) REFERENCES segments(organization_id, id) ON DELETE CASCADE,
  constraint segment_evaluations_pkey PRIMARY KEY (organization_id, id)
);
alter table public.segment_evaluations enable row level security;
alter table public.segment_evaluations force row level security;
CREATE INDEX segment_evaluations_segment_idx ON public.segment_evaluations USING btree (organization_id, segment_id, started_at DESC);
create policy segment_evaluations_read on public.segment_evaluations as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('segments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('segments.manage'::text) AS has_permission))));
create policy segment_evaluations_write on public.segment_evaluations as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('segments.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('segments.manage'::text) AS has_permission)));

create table public.segment_members (
  organization_id uuid not null,
  segment_id uuid not null,
  evaluation_id uuid not null,
  patient_id uuid not null,
  constraint segment_members_organization_id_evaluation_id_fkey FOREIGN KEY (organization_id, evaluation_id) REFERENCES segment_evaluations(organization_id, id) ON DELETE CASCADE,
  constraint segment_members_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint segment_members_organization_id_segment_id_fkey FOREIGN KEY (organization_id, segment_id) REFERENCES segments(organization_id, id) ON DELETE CASCADE,
  constraint segment_members_pkey PRIMARY KEY (organization_id, segment_id, evaluation_id, patient_id)
);
alter table public.segment_members enable row level security;
alter table public.segment_members force row level security;
CREATE INDEX segment_members_patient_idx ON public.segment_members USING btree (organization_id, patient_id);
create policy segment_members_read on public.segment_members as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('segments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('segments.manage'::text) AS has_permission) OR (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))));
create policy segment_members_write on public.segment_members as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('segments.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('segments.manage'::text) AS has_permission)));

create table public.segments (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  description text,
  criteria jsonb not null,
  current_evaluation_id uuid,
  evaluated_at timestamp with time zone,
  member_count integer,
  created_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint segments_criteria_check CHECK ((jsonb_typeof(criteria) = 'object'::text)),
  constraint segments_description_check CHECK ((length(description) <= 2000)),
  constraint segments_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint segments_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint segments_pkey PRIMARY KEY (organization_id, id),
  constraint segments_organization_id_name_key UNIQUE (organization_id, name)
);
alter table public.segments enable row level security;
alter table public.segments force row level security;
CREATE INDEX segments_org_created_idx ON public.segments USING btree (organization_id, created_at DESC, id DESC);
create policy segments_read on public.segments as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('segments.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('segments.manage'::text) AS has_permission))));
create policy segments_write on public.segments as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('segments.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('segments.manage'::text) AS has_permission)));
CREATE TRIGGER segments_touch BEFORE UPDATE ON public.segments FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.service_locations (
  organization_id uuid not null,
  service_id uuid not null,
  location_id uuid not null,
  constraint service_locations_organization_id_location_id_fkey FOREIGN KEY (organization_id, location_id) REFERENCES locations(organization_id, id) ON DELETE RESTRICT,
  constraint service_locations_organization_id_service_id_fkey FOREIGN KEY (organization_id, service_id) REFERENCES services(organization_id, id) ON DELETE CASCADE,
  constraint service_locations_pkey PRIMARY KEY (organization_id, service_id, location_id)
);
alter table public.service_locations enable row level security;
alter table public.service_locations force row level security;
CREATE INDEX service_locations_location_idx ON public.service_locations USING btree (organization_id, location_id);
create policy service_locations_read on public.service_locations as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.may_read_catalog() AS may_read_catalog) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL))));
create policy service_locations_write on public.service_locations as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));

create table public.service_plan_products (
  organization_id uuid not null,
  plan_id uuid not null,
  product_id uuid not null,
  quantity integer not null,
  created_at timestamp with time zone not null default now(),
  constraint service_plan_products_quantity_check CHECK (((quantity >= 1) AND (quantity <= 1000))),
  constraint service_plan_products_organization_id_plan_id_fkey FOREIGN KEY (organization_id, plan_id) REFERENCES service_plans(organization_id, id) ON DELETE CASCADE,
  constraint service_plan_products_organization_id_product_id_fkey FOREIGN KEY (organization_id, product_id) REFERENCES products(organization_id, id) ON DELETE RESTRICT,
  constraint service_plan_products_pkey PRIMARY KEY (organization_id, plan_id, product_id)
);
alter table public.service_plan_products enable row level security;
alter table public.service_plan_products force row level security;
CREATE INDEX service_plan_products_product_idx ON public.service_plan_products USING btree (organization_id, product_id);
create policy service_plan_products_read on public.service_plan_products as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.may_read_catalog() AS may_read_catalog) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL))));
create policy service_plan_products_write on public.service_plan_products as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));

create table public.service_plan_services (
  organization_id uuid not null,
  plan_id uuid not null,
  service_id uuid not null,
  quantity integer not null,
  constraint service_plan_services_quantity_check CHECK (((quantity >= 1) AND (quantity <= 1000))),
  constraint service_plan_services_organization_id_plan_id_fkey FOREIGN KEY (organization_id, plan_id) REFERENCES service_plans(organization_id, id) ON DELETE CASCADE,
  constraint service_plan_services_organization_id_service_id_fkey FOREIGN KEY (organization_id, service_id) REFERENCES services(organization_id, id) ON DELETE RESTRICT,
  constraint service_plan_services_pkey PRIMARY KEY (organization_id, plan_id, service_id)
);
alter table public.service_plan_services enable row level security;
alter table public.service_plan_services force row level security;
CREATE INDEX service_plan_services_service_idx ON public.service_plan_services USING btree (organization_id, service_id);
create policy service_plan_services_read on public.service_plan_services as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.may_read_catalog() AS may_read_catalog) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL))));
create policy service_plan_services_write on public.service_plan_services as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));

create table public.service_plans (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  description text,
  price_minor integer not null default 0,
  currency text not null,
  validity_days integer not null,
  is_public boolean not null default false,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint service_plans_currency_check CHECK ((currency ~ '^[A-Z]{3}$'::text)),
  constraint service_plans_description_check CHECK ((length(description) <= 5000)),
  constraint service_plans_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint service_plans_price_minor_check CHECK ((price_minor >= 0)),
  constraint service_plans_validity_days_check CHECK (((validity_days >= 1) AND (validity_days <= 3660))),
  constraint service_plans_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint service_plans_pkey PRIMARY KEY (organization_id, id)
);
alter table public.service_plans enable row level security;
alter table public.service_plans force row level security;
CREATE INDEX service_plans_org_created_idx ON public.service_plans USING btree (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX service_plans_org_name_key ON public.service_plans USING btree (organization_id, lower(name));
create policy service_plans_read on public.service_plans as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.may_read_catalog() AS may_read_catalog) OR (is_public AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)))));
create policy service_plans_write on public.service_plans as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));
CREATE TRIGGER service_plans_touch BEFORE UPDATE ON public.service_plans FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.service_specialists (
  organization_id uuid not null,
  service_id uuid not null,
  specialist_id uuid not null,
  constraint service_specialists_organization_id_service_id_fkey FOREIGN KEY (organization_id, service_id) REFERENCES services(organization_id, id) ON DELETE CASCADE,
  constraint service_specialists_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE CASCADE,
  constraint service_specialists_pkey PRIMARY KEY (organization_id, service_id, specialist_id)
);
alter table public.service_specialists enable row level security;
alter table public.service_specialists force row level security;
CREATE INDEX service_specialists_specialist_idx ON public.service_specialists USING btree (organization_id, specialist_id);
create policy service_specialists_read on public.service_specialists as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.may_read_catalog() AS may_read_catalog) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL))));
create policy service_specialists_write on public.service_specialists as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));

create table public.services (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  name text not null,
  description text,
  duration_minutes integer not null,
  buffer_before_minutes integer not null default 0,
  buffer_after_minutes integer not null default 0,
  price_minor integer not null default 0,
  currency text not null,
  mode text not null,
  min_notice_minutes integer not null default 0,
  max_days_ahead integer not null default 90,
  cancellation_window_minutes integer not null default 0,
  is_public boolean not null default false,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  slot_interval_minutes integer,
  intake_form_template_id uuid,
  constraint services_buffer_after_minutes_check CHECK (((buffer_after_minutes >= 0) AND (buffer_after_minutes <= 240))),
  constraint services_buffer_before_minutes_check CHECK (((buffer_before_minutes >= 0) AND (buffer_before_minutes <= 240))),
  constraint services_cancellation_window_minutes_check CHECK (((cancellation_window_minutes >= 0) AND (cancellation_window_minutes <= 525600))),
  constraint services_currency_check CHECK ((currency ~ '^[A-Z]{3}$'::text)),
  constraint services_description_check CHECK ((length(description) <= 5000)),
  constraint services_duration_minutes_check CHECK (((duration_minutes >= 5) AND (duration_minutes <= 1440))),
  constraint services_max_days_ahead_check CHECK (((max_days_ahead >= 1) AND (max_days_ahead <= 730))),
  constraint services_min_notice_minutes_check CHECK (((min_notice_minutes >= 0) AND (min_notice_minutes <= 525600))),
  constraint services_mode_check CHECK ((mode = ANY (ARRAY['in_person'::text, 'video'::text, 'phone'::text]))),
  constraint services_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint services_price_minor_check CHECK ((price_minor >= 0)),
  constraint services_slot_interval_minutes_check CHECK (((slot_interval_minutes >= 5) AND (slot_interval_minutes <= 240))),
  constraint services_intake_form_template_id_fkey FOREIGN KEY (organization_id, intake_form_template_id) REFERENCES form_templates(organization_id, id) ON DELETE SET NULL (intake_form_template_id),
  constraint services_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint services_pkey PRIMARY KEY (organization_id, id)
);
alter table public.services enable row level security;
alter table public.services force row level security;
CREATE INDEX services_org_created_idx ON public.services USING btree (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX services_org_name_key ON public.services USING btree (organization_id, lower(name));
create policy services_read on public.services as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.may_read_catalog() AS may_read_catalog) OR (is_public AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)))));
create policy services_write on public.services as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));
CREATE TRIGGER services_touch BEFORE UPDATE ON public.services FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.specialist_locations (
  organization_id uuid not null,
  specialist_id uuid not null,
  location_id uuid not null,
  constraint specialist_locations_organization_id_location_id_fkey FOREIGN KEY (organization_id, location_id) REFERENCES locations(organization_id, id) ON DELETE RESTRICT,
  constraint specialist_locations_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE CASCADE,
  constraint specialist_locations_pkey PRIMARY KEY (organization_id, specialist_id, location_id)
);
alter table public.specialist_locations enable row level security;
alter table public.specialist_locations force row level security;
CREATE INDEX specialist_locations_location_idx ON public.specialist_locations USING btree (organization_id, location_id);
create policy specialist_locations_read on public.specialist_locations as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.view'::text) AS has_permission) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL) OR (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))));
create policy specialist_locations_write on public.specialist_locations as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id)))))))));

create table public.specialist_specialties (
  organization_id uuid not null,
  specialist_id uuid not null,
  specialty_id uuid not null,
  constraint specialist_specialties_organization_id_specialist_id_fkey FOREIGN KEY (organization_id, specialist_id) REFERENCES specialists(organization_id, id) ON DELETE CASCADE,
  constraint specialist_specialties_organization_id_specialty_id_fkey FOREIGN KEY (organization_id, specialty_id) REFERENCES specialties(organization_id, id) ON DELETE RESTRICT,
  constraint specialist_specialties_pkey PRIMARY KEY (organization_id, specialist_id, specialty_id)
);
alter table public.specialist_specialties enable row level security;
alter table public.specialist_specialties force row level security;
CREATE INDEX specialist_specialties_specialty_idx ON public.specialist_specialties USING btree (organization_id, specialty_id);
create policy specialist_specialties_read on public.specialist_specialties as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.view'::text) AS has_permission) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL) OR (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))));
create policy specialist_specialties_write on public.specialist_specialties as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id))))))))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR (( SELECT app.has_permission('specialists.update_self'::text) AS has_permission) AND (specialist_id IN ( SELECT s.id
   FROM specialists s
  WHERE ((s.organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (s.user_id = ( SELECT app.current_principal_id() AS current_principal_id)))))))));

create table public.specialists (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  user_id uuid not null,
  display_name text not null,
  title text,
  bio text,
  contact_email text,
  contact_phone text,
  custom_field_values jsonb not null default '{}'::jsonb,
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  languages text[] not null default '{}'::text[],
  bookable_online boolean not null default false,
  gender text,
  registration_number text,
  qualifications jsonb not null default '[]'::jsonb,
  practising_since integer,
  booking_note text,
  constraint specialists_bio_check CHECK ((length(bio) <= 5000)),
  constraint specialists_booking_note_check CHECK ((length(booking_note) <= 1000)),
  constraint specialists_contact_email_check CHECK ((length(contact_email) <= 320)),
  constraint specialists_contact_phone_check CHECK ((length(contact_phone) <= 40)),
  constraint specialists_custom_field_values_check CHECK ((jsonb_typeof(custom_field_values) = 'object'::text)),
  constraint specialists_display_name_check CHECK (((length(btrim(display_name)) >= 1) AND (length(btrim(display_name)) <= 200))),
  constraint specialists_gender_check CHECK ((gender = ANY (ARRAY['female'::text, 'male'::text, 'other'::text, 'unknown'::text]))),
  constraint specialists_languages_check CHECK ((cardinality(languages) <= 20)),
  constraint specialists_practising_since_check CHECK (((practising_since >= 1900) AND (practising_since <= 2200))),
  constraint specialists_qualifications_check CHECK (((jsonb_typeof(qualifications) = 'array'::text) AND (jsonb_array_length(qualifications) <= 30))),
  constraint specialists_registration_number_check CHECK (((length(btrim(registration_number)) >= 1) AND (length(btrim(registration_number)) <= 64))),
  constraint specialists_title_check CHECK ((length(title) <= 200)),
  constraint specialists_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint specialists_user_id_organization_id_fkey FOREIGN KEY (organization_id, user_id) REFERENCES memberships(organization_id, user_id) ON DELETE CASCADE,
  constraint specialists_pkey PRIMARY KEY (organization_id, id)
);
alter table public.specialists enable row level security;
alter table public.specialists force row level security;
CREATE UNIQUE INDEX specialists_member_key ON public.specialists USING btree (organization_id, user_id);
CREATE INDEX specialists_org_created_idx ON public.specialists USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX specialists_pkey_lookup ON public.specialists USING btree (id);
create policy specialists_insert on public.specialists as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('specialists.create'::text) AS has_permission)));
create policy specialists_read on public.specialists as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission)) AND (( SELECT app.has_permission('specialists.view'::text) AS has_permission) OR (user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((deleted_at IS NULL) AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)))));
create policy specialists_update on public.specialists as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR ( SELECT app.has_permission('specialists.delete'::text) AS has_permission) OR ((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND ( SELECT app.has_permission('specialists.update_self'::text) AS has_permission))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER specialists_availability_first BEFORE DELETE ON public.specialists FOR EACH ROW EXECUTE FUNCTION app.specialist_availability_goes_first();
CREATE TRIGGER specialists_calendar AFTER INSERT ON public.specialists FOR EACH ROW EXECUTE FUNCTION app.specialist_calendar();
CREATE TRIGGER specialists_touch BEFORE UPDATE ON public.specialists FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();
CREATE TRIGGER specialists_write_guard BEFORE UPDATE ON public.specialists FOR EACH ROW EXECUTE FUNCTION app.specialists_write_guard();

create table public.specialties (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  code text not null,
  name text not null,
  description text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint specialties_code_check CHECK ((code ~ '^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$'::text)),
  constraint specialties_description_check CHECK ((length(description) <= 2000)),
  constraint specialties_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint specialties_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint specialties_pkey PRIMARY KEY (organization_id, id),
  constraint specialties_organization_id_code_key UNIQUE (organization_id, code)
);
alter table public.specialties enable row level security;
alter table public.specialties force row level security;
CREATE INDEX specialties_org_created_idx ON public.specialties USING btree (organization_id, created_at DESC, id DESC);
create policy specialties_read on public.specialties as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.in_current_org_directory() AS in_current_org_directory)));
create policy specialties_write on public.specialties as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('services.manage'::text) AS has_permission)));
CREATE TRIGGER specialties_touch BEFORE UPDATE ON public.specialties FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.telerehab_settings (
  organization_id uuid not null,
  enabled boolean not null default false,
  require_plan_approval boolean not null default false,
  intended_use_version text,
  intended_use_accepted_at timestamp with time zone,
  intended_use_accepted_by uuid,
  updated_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint telerehab_settings_check CHECK (((NOT enabled) OR (intended_use_accepted_at IS NOT NULL))),
  constraint telerehab_settings_check1 CHECK (((intended_use_accepted_at IS NULL) = (intended_use_version IS NULL))),
  constraint telerehab_settings_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint telerehab_settings_pkey PRIMARY KEY (organization_id)
);
alter table public.telerehab_settings enable row level security;
alter table public.telerehab_settings force row level security;
create policy telerehab_settings_read on public.telerehab_settings as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org) OR (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL))));
create policy telerehab_settings_write on public.telerehab_settings as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.update'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('organizations.update'::text) AS has_permission)));
CREATE TRIGGER telerehab_settings_touch BEFORE UPDATE ON public.telerehab_settings FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.treatment_enrollment_pauses (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  enrollment_id uuid not null,
  paused_on date not null,
  resumed_on date,
  pause_reason text not null,
  resume_reason text,
  paused_by_principal_id uuid not null,
  resumed_by_principal_id uuid,
  paused_at timestamp with time zone not null default now(),
  resumed_at timestamp with time zone,
  constraint treatment_enrollment_pauses_check CHECK (((resumed_on IS NULL) OR (resumed_on >= paused_on))),
  constraint treatment_enrollment_pauses_check1 CHECK ((((resumed_at IS NULL) = (resumed_on IS NULL)) AND ((resumed_at IS NULL) = (resumed_by_principal_id IS NULL)))),
  constraint treatment_enrollment_pauses_pause_reason_check CHECK (((length(btrim(pause_reason)) >= 1) AND (length(btrim(pause_reason)) <= 500))),
  constraint treatment_enrollment_pauses_resume_reason_check CHECK (((length(btrim(resume_reason)) >= 1) AND (length(btrim(resume_reason)) <= 500))),
  constraint treatment_enrollment_pauses_organization_id_enrollment_id_fkey FOREIGN KEY (organization_id, enrollment_id) REFERENCES treatment_enrollments(organization_id, id) ON DELETE CASCADE,
  constraint treatment_enrollment_pauses_pkey PRIMARY KEY (organization_id, id),
  constraint treatment_enrollment_pauses_consistent TRIGGER DEFERRABLE INITIALLY DEFERRED
);
alter table public.treatment_enrollment_pauses enable row level security;
alter table public.treatment_enrollment_pauses force row level security;
CREATE INDEX treatment_enrollment_pauses_enrollment_idx ON public.treatment_enrollment_pauses USING btree (organization_id, enrollment_id, paused_on);
CREATE UNIQUE INDEX treatment_enrollment_pauses_open_key ON public.treatment_enrollment_pauses USING btree (organization_id, enrollment_id) WHERE (resumed_on IS NULL);
create policy treatment_enrollment_pauses_read on public.treatment_enrollment_pauses as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM treatment_enrollments e
  WHERE ((e.organization_id = treatment_enrollment_pauses.organization_id) AND (e.id = treatment_enrollment_pauses.enrollment_id))))));
create policy treatment_enrollment_pauses_write on public.treatment_enrollment_pauses as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM treatment_enrollments e
  WHERE ((e.organization_id = treatment_enrollment_pauses.organization_id) AND (e.id = treatment_enrollment_pauses.enrollment_id) AND (( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission) OR (e.patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE CONSTRAINT TRIGGER treatment_enrollment_pauses_consistent AFTER INSERT OR UPDATE ON public.treatment_enrollment_pauses DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION app.treatment_enrollment_pause_consistent();

create table public.treatment_enrollments (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  treatment_plan_id uuid not null,
  plan_version integer not null,
  patient_id uuid not null,
  status text not null default 'active'::text,
  start_date date not null,
  weekdays smallint[] not null,
  time_zone text not null,
  status_changed_at timestamp with time zone not null default now(),
  cancel_reason text,
  cancelled_at timestamp with time zone,
  cancelled_by_principal_id uuid,
  enrolled_by_principal_id uuid not null,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint treatment_enrollments_cancel_reason_check CHECK (((length(cancel_reason) >= 1) AND (length(cancel_reason) <= 500))),
  constraint treatment_enrollments_check CHECK (((status = 'cancelled'::text) = (cancelled_at IS NOT NULL))),
  constraint treatment_enrollments_check1 CHECK (((cancelled_at IS NULL) = (cancel_reason IS NULL))),
  constraint treatment_enrollments_status_check CHECK ((status = ANY (ARRAY['active'::text, 'paused'::text, 'cancelled'::text]))),
  constraint treatment_enrollments_time_zone_check CHECK (((length(time_zone) >= 1) AND (length(time_zone) <= 64))),
  constraint treatment_enrollments_weekdays_check CHECK ((((cardinality(weekdays) >= 1) AND (cardinality(weekdays) <= 7)) AND (weekdays <@ '{1,2,3,4,5,6,7}'::smallint[]))),
  constraint treatment_enrollments_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint treatment_enrollments_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint treatment_enrollments_organization_id_treatment_plan_id_pl_fkey FOREIGN KEY (organization_id, treatment_plan_id, plan_version) REFERENCES treatment_plan_versions(organization_id, treatment_plan_id, version),
  constraint treatment_enrollments_pkey PRIMARY KEY (organization_id, id),
  constraint treatment_enrollments_pause_consistent TRIGGER DEFERRABLE INITIALLY DEFERRED
);
alter table public.treatment_enrollments enable row level security;
alter table public.treatment_enrollments force row level security;
CREATE INDEX treatment_enrollments_live_idx ON public.treatment_enrollments USING btree (organization_id, created_at DESC) WHERE (status = ANY (ARRAY['active'::text, 'paused'::text]));
CREATE UNIQUE INDEX treatment_enrollments_live_key ON public.treatment_enrollments USING btree (organization_id, patient_id, treatment_plan_id) WHERE (status = ANY (ARRAY['active'::text, 'paused'::text]));
CREATE INDEX treatment_enrollments_patient_idx ON public.treatment_enrollments USING btree (organization_id, patient_id, created_at DESC);
create policy treatment_enrollments_insert on public.treatment_enrollments as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission)));
create policy treatment_enrollments_read on public.treatment_enrollments as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission) OR ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission) OR (patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))));
create policy treatment_enrollments_update on public.treatment_enrollments as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission) OR (patient_id = ( SELECT app.current_patient_id() AS current_patient_id))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE CONSTRAINT TRIGGER treatment_enrollments_pause_consistent AFTER INSERT OR UPDATE ON public.treatment_enrollments DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION app.treatment_enrollment_pause_consistent();
CREATE TRIGGER treatment_enrollments_touch BEFORE UPDATE ON public.treatment_enrollments FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.treatment_plan_exercises (
  organization_id uuid not null,
  treatment_plan_id uuid not null,
  exercise_id uuid not null,
  constraint treatment_plan_exercises_exercise_id_fkey FOREIGN KEY (exercise_id) REFERENCES exercises(id) ON DELETE RESTRICT,
  constraint treatment_plan_exercises_organization_id_treatment_plan_id_fkey FOREIGN KEY (organization_id, treatment_plan_id) REFERENCES treatment_plans(organization_id, id) ON DELETE CASCADE,
  constraint treatment_plan_exercises_pkey PRIMARY KEY (organization_id, treatment_plan_id, exercise_id)
);
alter table public.treatment_plan_exercises enable row level security;
alter table public.treatment_plan_exercises force row level security;
CREATE INDEX treatment_plan_exercises_exercise_idx ON public.treatment_plan_exercises USING btree (exercise_id);
create policy treatment_plan_exercises_read on public.treatment_plan_exercises as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.manage'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.approve'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.promote_to_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.delete'::text) AS has_permission))));

create table public.treatment_plan_versions (
  organization_id uuid not null,
  treatment_plan_id uuid not null,
  version integer not null,
  snapshot jsonb not null,
  published_at timestamp with time zone not null,
  published_by_principal_id uuid not null,
  approved_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  constraint treatment_plan_versions_snapshot_check CHECK ((jsonb_typeof(snapshot) = 'object'::text)),
  constraint treatment_plan_versions_version_check CHECK ((version >= 1)),
  constraint treatment_plan_versions_organization_id_treatment_plan_id_fkey FOREIGN KEY (organization_id, treatment_plan_id) REFERENCES treatment_plans(organization_id, id) ON DELETE CASCADE,
  constraint treatment_plan_versions_pkey PRIMARY KEY (organization_id, treatment_plan_id, version)
);
alter table public.treatment_plan_versions enable row level security;
alter table public.treatment_plan_versions force row level security;
create policy treatment_plan_versions_insert on public.treatment_plan_versions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('treatment_plans.manage'::text) AS has_permission) AND (published_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id))));
create policy treatment_plan_versions_read on public.treatment_plan_versions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.manage'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.approve'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.promote_to_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.delete'::text) AS has_permission))));
create policy treatment_plan_versions_read_enrolled on public.treatment_plan_versions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM treatment_enrollments e
  WHERE ((e.organization_id = treatment_plan_versions.organization_id) AND (e.treatment_plan_id = treatment_plan_versions.treatment_plan_id) AND (e.plan_version = treatment_plan_versions.version) AND (e.patient_id = ( SELECT app.current_patient_id() AS current_patient_id)))))));
CREATE TRIGGER treatment_plan_versions_append_only BEFORE DELETE OR UPDATE ON public.treatment_plan_versions FOR EACH ROW EXECUTE FUNCTION app.treatment_plan_versions_guard();
CREATE TRIGGER treatment_plan_versions_approval BEFORE INSERT ON public.treatment_plan_versions FOR EACH ROW EXECUTE FUNCTION app.treatment_plan_version_approval();
CREATE TRIGGER treatment_plan_versions_no_truncate BEFORE TRUNCATE ON public.treatment_plan_versions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

create table public.treatment_plans (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  kind text not null,
  patient_id uuid,
  name text not null,
  description text,
  phases jsonb not null,
  required_consents text[] not null default '{}'::text[],
  self_report jsonb not null default '{"pain": false, "effort": false}'::jsonb,
  version integer not null default 0,
  published boolean not null default false,
  published_at timestamp with time zone,
  draft_author_principal_id uuid,
  approved_by_principal_id uuid,
  approved_at timestamp with time zone,
  source_plan_id uuid,
  source_version integer,
  source_kind text,
  created_by_principal_id uuid not null,
  deleted_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint treatment_plans_check CHECK (((kind = 'patient'::text) = (patient_id IS NOT NULL))),
  constraint treatment_plans_check1 CHECK (((NOT published) OR ((version >= 1) AND (published_at IS NOT NULL)))),
  constraint treatment_plans_check2 CHECK (((approved_by_principal_id IS NULL) = (approved_at IS NULL))),
  constraint treatment_plans_check3 CHECK ((((source_plan_id IS NULL) AND (source_version IS NULL)) OR (source_kind IS NOT NULL))),
  constraint treatment_plans_description_check CHECK ((length(description) <= 5000)),
  constraint treatment_plans_kind_check CHECK ((kind = ANY (ARRAY['library'::text, 'patient'::text]))),
  constraint treatment_plans_name_check CHECK ((((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)) AND (name = btrim(name)))),
  constraint treatment_plans_phases_check CHECK (((jsonb_typeof(phases) = 'array'::text) AND ((jsonb_array_length(phases) >= 1) AND (jsonb_array_length(phases) <= 52)))),
  constraint treatment_plans_required_consents_check CHECK ((cardinality(required_consents) <= 10)),
  constraint treatment_plans_second_clinician CHECK (((approved_by_principal_id IS NULL) OR (approved_by_principal_id <> draft_author_principal_id))),
  constraint treatment_plans_self_report_check CHECK ((jsonb_typeof(self_report) = 'object'::text)),
  constraint treatment_plans_source_kind_check CHECK ((source_kind = ANY (ARRAY['duplicate'::text, 'clone'::text, 'promote'::text]))),
  constraint treatment_plans_version_check CHECK ((version >= 0)),
  constraint treatment_plans_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint treatment_plans_organization_id_patient_id_fkey FOREIGN KEY (organization_id, patient_id) REFERENCES patients(organization_id, id) ON DELETE CASCADE,
  constraint treatment_plans_organization_id_source_plan_id_fkey FOREIGN KEY (organization_id, source_plan_id) REFERENCES treatment_plans(organization_id, id) ON DELETE SET NULL (source_plan_id),
  constraint treatment_plans_pkey PRIMARY KEY (organization_id, id)
);
alter table public.treatment_plans enable row level security;
alter table public.treatment_plans force row level security;
CREATE INDEX treatment_plans_org_idx ON public.treatment_plans USING btree (organization_id, created_at DESC) WHERE (deleted_at IS NULL);
CREATE INDEX treatment_plans_patient_idx ON public.treatment_plans USING btree (organization_id, patient_id) WHERE (patient_id IS NOT NULL);
create policy treatment_plans_insert on public.treatment_plans as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.manage'::text) AS has_permission) OR ((kind = 'library'::text) AND ( SELECT app.has_permission('treatment_plans.promote_to_org'::text) AS has_permission)))));
create policy treatment_plans_read on public.treatment_plans as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.manage'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.approve'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.assign'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.promote_to_org'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.delete'::text) AS has_permission)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy treatment_plans_update on public.treatment_plans as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('treatment_plans.manage'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.approve'::text) AS has_permission) OR ( SELECT app.has_permission('treatment_plans.delete'::text) AS has_permission)))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER treatment_plans_content BEFORE INSERT OR UPDATE ON public.treatment_plans FOR EACH ROW EXECUTE FUNCTION app.treatment_plan_content_change();
CREATE TRIGGER treatment_plans_exercises AFTER INSERT OR UPDATE OF phases ON public.treatment_plans FOR EACH ROW EXECUTE FUNCTION app.treatment_plan_exercises_sync();
CREATE TRIGGER treatment_plans_touch BEFORE UPDATE ON public.treatment_plans FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.users (
  id uuid not null default app.uuid_v7(),
  external_subject text,
  email text not null,
  kind text not null default 'human'::text,
  home_organization_id uuid,
  confirmed boolean not null default false,
  last_activity timestamp with time zone,
  current_organization_id uuid,
  preferred_language text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  context_version bigint not null default 0,
  constraint users_email_check CHECK ((POSITION(('@'::text) IN (email)) > 1)),
  constraint users_kind_check CHECK ((kind = ANY (ARRAY['human'::text, 'agent'::text, 'service_account'::text]))),
  constraint users_non_human_home CHECK (((kind = 'human'::text) = (home_organization_id IS NULL))),
  constraint users_current_organization_id_fkey FOREIGN KEY (current_organization_id) REFERENCES organizations(id) ON DELETE SET NULL,
  constraint users_home_organization_id_fkey FOREIGN KEY (home_organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint users_pkey PRIMARY KEY (id),
  constraint users_external_subject_key UNIQUE (external_subject)
);
alter table public.users enable row level security;
alter table public.users force row level security;
CREATE UNIQUE INDEX users_email_key ON public.users USING btree (lower(email));
create policy users_insert_invited on public.users as permissive for insert to app_rls with check ((( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission) AND (kind = 'human'::text) AND (external_subject IS NULL)));
create policy users_read_directory on public.users as permissive for select to app_rls using (((( SELECT app.has_permission('organizations.view_directory'::text) AS has_permission) OR ( SELECT app.has_permission('organizations.manage_members'::text) AS has_permission)) AND (EXISTS ( SELECT 1
   FROM memberships m
  WHERE ((m.user_id = users.id) AND (m.organization_id = ( SELECT app.current_org_id() AS current_org_id)))
 OFFSET 0))));
create policy users_read_self on public.users as permissive for select to app_rls using ((id = ( SELECT app.current_principal_id() AS current_principal_id)));
create policy users_update_self on public.users as permissive for update to app_rls using ((id = ( SELECT app.current_principal_id() AS current_principal_id))) with check ((id = ( SELECT app.current_principal_id() AS current_principal_id)));
CREATE TRIGGER users_context_version BEFORE UPDATE ON public.users FOR EACH ROW EXECUTE FUNCTION app.bump_own_context_version();
CREATE TRIGGER users_delete_context_epoch AFTER DELETE ON public.users FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();
CREATE TRIGGER users_email_sort AFTER UPDATE OF email ON public.users FOR EACH ROW WHEN ((old.email IS DISTINCT FROM new.email)) EXECUTE FUNCTION app.user_email_sort();
CREATE TRIGGER users_email_to_patients AFTER UPDATE OF email ON public.users FOR EACH ROW WHEN ((old.email IS DISTINCT FROM new.email)) EXECUTE FUNCTION app.user_email_to_patients();
CREATE TRIGGER users_subject_context_epoch AFTER UPDATE OF external_subject ON public.users FOR EACH ROW WHEN ((old.external_subject IS DISTINCT FROM new.external_subject)) EXECUTE FUNCTION app.bump_context_epoch();
CREATE TRIGGER users_touch BEFORE UPDATE ON public.users FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.webhook_deliveries (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  subscription_id uuid not null,
  event_id uuid not null,
  event_type text not null,
  status text not null default 'pending'::text,
  attempts integer not null default 0,
  next_attempt_at timestamp with time zone,
  last_status_code integer,
  last_error text,
  delivered_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  resend_requested_at timestamp with time zone,
  constraint webhook_deliveries_attempts_check CHECK ((attempts >= 0)),
  constraint webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text]))),
  constraint webhook_deliveries_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint webhook_deliveries_subscription_id_fkey FOREIGN KEY (organization_id, subscription_id) REFERENCES webhook_subscriptions(organization_id, id) ON DELETE CASCADE,
  constraint webhook_deliveries_pkey PRIMARY KEY (organization_id, id),
  constraint webhook_deliveries_subscription_id_event_id_key UNIQUE (organization_id, subscription_id, event_id)
);
alter table public.webhook_deliveries enable row level security;
alter table public.webhook_deliveries force row level security;
CREATE INDEX webhook_deliveries_pkey_lookup ON public.webhook_deliveries USING btree (id);
CREATE INDEX webhook_deliveries_resend_idx ON public.webhook_deliveries USING btree (resend_requested_at) WHERE (resend_requested_at IS NOT NULL);
CREATE INDEX webhook_deliveries_sub_idx ON public.webhook_deliveries USING btree (subscription_id, created_at DESC);
CREATE INDEX webhook_deliveries_subscription_id_event_id_key_lookup ON public.webhook_deliveries USING btree (subscription_id, event_id);
create policy webhook_deliveries_all on public.webhook_deliveries as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission)));
CREATE TRIGGER webhook_deliveries_touch BEFORE UPDATE ON public.webhook_deliveries FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

create table public.webhook_delivery_attempts (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  subscription_id uuid not null,
  delivery_id uuid not null,
  attempt integer not null,
  trigger text not null default 'event'::text,
  status_code integer,
  latency_ms integer not null,
  error text,
  response_body text,
  next_attempt_at timestamp with time zone,
  created_at timestamp with time zone not null default now(),
  constraint webhook_delivery_attempts_attempt_check CHECK ((attempt >= 1)),
  constraint webhook_delivery_attempts_response_body_check CHECK ((length(response_body) <= 2048)),
  constraint webhook_delivery_attempts_trigger_check CHECK ((trigger = ANY (ARRAY['event'::text, 'test'::text, 'resend'::text]))),
  constraint webhook_delivery_attempts_delivery_id_fkey FOREIGN KEY (organization_id, delivery_id) REFERENCES webhook_deliveries(organization_id, id) ON DELETE CASCADE,
  constraint webhook_delivery_attempts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint webhook_delivery_attempts_subscription_id_fkey FOREIGN KEY (organization_id, subscription_id) REFERENCES webhook_subscriptions(organization_id, id) ON DELETE CASCADE,
  constraint webhook_delivery_attempts_pkey PRIMARY KEY (organization_id, id)
);
alter table public.webhook_delivery_attempts enable row level security;
alter table public.webhook_delivery_attempts force row level security;
CREATE UNIQUE INDEX webhook_delivery_attempts_key ON public.webhook_delivery_attempts USING btree (organization_id, delivery_id, attempt);
CREATE INDEX webhook_delivery_attempts_key_lookup ON public.webhook_delivery_attempts USING btree (delivery_id, attempt);
CREATE INDEX webhook_delivery_attempts_pkey_lookup ON public.webhook_delivery_attempts USING btree (id);
CREATE INDEX webhook_delivery_attempts_sub_idx ON public.webhook_delivery_attempts USING btree (subscription_id, created_at DESC, id DESC);
create policy webhook_delivery_attempts_all on public.webhook_delivery_attempts as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission)));

create table public.webhook_subscriptions (
  id uuid not null default app.uuid_v7(),
  organization_id uuid not null,
  url text not null,
  description text,
  event_types text[] not null,
  status text not null default 'active'::text,
  disabled_reason text,
  disabled_at timestamp with time zone,
  secret_sealed text not null,
  previous_secret_sealed text,
  previous_secret_expires_at timestamp with time zone,
  failing_since timestamp with time zone,
  created_by_principal_id uuid,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
  constraint webhook_subscriptions_description_check CHECK ((length(description) <= 500)),
  constraint webhook_subscriptions_disabled_reason_check CHECK ((disabled_reason = ANY (ARRAY['manual'::text, 'gone'::text, 'failing'::text]))),
  constraint webhook_subscriptions_event_types_check CHECK (((cardinality(event_types) >= 1) AND (cardinality(event_types) <= 100))),
  constraint webhook_subscriptions_status_check CHECK ((status = ANY (ARRAY['active'::text, 'disabled'::text]))),
  constraint webhook_subscriptions_url_check CHECK (((url ~ '^https://'::text) AND (length(url) <= 2048))),
  constraint webhook_subscriptions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint webhook_subscriptions_pkey PRIMARY KEY (organization_id, id)
);
alter table public.webhook_subscriptions enable row level security;
alter table public.webhook_subscriptions force row level security;
CREATE INDEX webhook_subscriptions_org_idx ON public.webhook_subscriptions USING btree (organization_id, created_at DESC);
CREATE INDEX webhook_subscriptions_pkey_lookup ON public.webhook_subscriptions USING btree (id);
create policy webhook_subscriptions_all on public.webhook_subscriptions as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission)));
CREATE TRIGGER webhook_subscriptions_touch BEFORE UPDATE ON public.webhook_subscriptions FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

-- Functions (signatures; the bodies are in the migrations)
--   app.admin_permission() returns text
--   app.announce_hold_change() returns trigger
--   app.append_only(t regclass) returns void
--   app.appointment_files_follow() returns trigger security definer
--   app.audit_canonical(a audit_logs) returns text
--   app.audit_chain_flush() returns trigger security definer
--   app.audit_chain_link() returns trigger security definer
--   app.audit_hash(prev_hash text, canonical text) returns text
--   app.audit_logs_append_only() returns trigger
--   app.audit_prune(p_chain uuid, p_cut_seq bigint, p_last_hash text, p_older_than timestamp with time zone, p_key_id text, p_signature text, p_created_at timestamp with time zone) returns bigint security definer
--   app.break_glass_end_only() returns trigger
--   app.bump_caregivers_context_version() returns trigger security definer
--   app.bump_context_epoch() returns trigger security definer
--   app.bump_own_context_version() returns trigger
--   app.bump_user_context_version() returns trigger security definer
--   app.calendar_heading(org uuid) returns text[] security definer
--   app.caregiver_email(link_org uuid, link_id uuid) returns text security definer
--   app.consent_ledger_guard() returns trigger
--   app.consent_patient_user_id(patient uuid) returns uuid security definer
--   app.consent_purpose_owner_rule() returns trigger security definer
--   app.consent_version_scope_rule() returns trigger
--   app.consent_withdrawal_cascade() returns trigger security definer
--   app.create_organization_settings() returns trigger security definer
--   app.current_org_id() returns uuid
--   app.current_patient_consent_gaps(codes text[]) returns jsonb security definer
--   app.current_patient_id() returns uuid security definer
--   app.current_patient_user_id() returns uuid security definer
--   app.current_principal_id() returns uuid
--   app.custom_field_guard() returns trigger
--   app.documents_guard() returns trigger
--   app.emit_consent_event() returns trigger
--   app.emit_event(p_organization_id uuid, p_type text, p_data jsonb) returns uuid security definer
--   app.emit_membership_event() returns trigger
--   app.enrollment_schedule(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], e_until date) returns TABLE(day date, plan_day integer)
--   app.enrollment_schedule_window(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], e_from date, e_until date) returns TABLE(day date, plan_day integer)
--   app.enrollment_scheduled_before(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], d date) returns integer
--   app.ensure_caregiver_user(address text) returns uuid security definer
--   app.ensure_patient_user(address text) returns uuid security definer
--   app.erase_patient_records(target uuid, org uuid) returns jsonb security definer
--   app.erase_patient_records_0059(target uuid, org uuid) returns jsonb security definer
--   app.erase_patient_records_0061(target uuid, org uuid) returns jsonb security definer
--   app.erase_patient_records_0068(target uuid, org uuid) returns jsonb security definer
--   app.erase_patient_records_0085(target uuid, org uuid) returns jsonb security definer
--   app.erase_patient_records_0093(target uuid, org uuid) returns jsonb security definer
--   app.erase_patient_records_0100(target uuid, org uuid) returns jsonb security definer
--   app.erase_user(target uuid, org uuid, reason text) returns jsonb security definer
--   app.forbid_change() returns trigger
--   app.form_files_guard() returns trigger security definer
--   app.forms_signed_guard() returns trigger
--   app.gdpr_patient_user_id(patient uuid) returns uuid security definer
--   app.has_permission(code text) returns boolean
--   app.in_current_org_directory() returns boolean
--   app.is_staff_at_current_org() returns boolean
--   app.is_superadmin(target uuid) returns boolean security definer
--   app.leave_clinic(org uuid) returns jsonb security definer
--   app.lock_admin_set(org uuid) returns void
--   app.may_edit_specialist(org uuid, specialist uuid) returns boolean
--   app.may_read_catalog() returns boolean
--   app.may_read_specialist(org uuid, specialist uuid) returns boolean
--   app.membership_email_sort() returns trigger security definer
--   app.membership_principal_rule() returns trigger security definer
--   app.my_caregiving() returns TABLE(id uuid, organization_id uuid, organization_name text, patient_id uuid, first_name text, last_name text, relationship text, created_at timestamp with time zone) security definer
--   app.my_patient_ids() returns uuid[] security definer
--   app.onboard_patient(org uuid) returns TABLE(patient_id uuid, status text) security definer
--   app.org_accepts_patients(org uuid) returns boolean security definer
--   app.other_admin_exists(org uuid, except_user uuid, except_role uuid) returns boolean
--   app.own_patient_id() returns uuid security definer
--   app.own_specialist_id() returns uuid security definer
--   app.patient_counts_apply() returns trigger security definer
--   app.patient_counts_truncate() returns trigger security definer
--   app.patient_email(p_patient_id uuid) returns text security definer
--   app.patient_search(org uuid, pattern text) returns SETOF uuid security definer
--   app.patients_user_email() returns trigger security definer
--   app.patients_write_guard() returns trigger
--   app.plan_items_per_day(snapshot jsonb) returns integer[]
--   app.plan_session_closed_guard() returns trigger
--   app.platform_membership_human_only() returns trigger
--   app.pose_batches_of_deleted_session() returns trigger security definer
--   app.secure_table(t regclass, privileges text) returns void
--   app.segment_current_evaluation(org uuid, seg uuid) returns uuid security definer
--   app.set_calendar_title(org uuid, title text) returns text security definer
--   app.set_own_calendar_feed(cal uuid, hash text) returns boolean security definer
--   app.specialist_availability_goes_first() returns trigger security definer
--   app.specialist_calendar() returns trigger security definer
--   app.specialists_write_guard() returns trigger
--   app.telemetry_begin_end(p_session uuid, p_user uuid, p_org uuid) returns text security definer
--   app.telemetry_finish(p_session uuid, p_status text, p_reason text, p_result jsonb, p_replay_key text, p_batches integer, p_frames integer) returns boolean security definer
--   app.telemetry_gate(p_user uuid, p_org uuid, p_purpose text) returns text security definer
--   app.telemetry_ingest_media(p_user uuid, p_org uuid, p_media_session uuid, p_exercise uuid, p_video text, p_events jsonb, OUT status text, OUT accepted integer) returns record security definer
--   app.telemetry_ingest_pose(p_session uuid, p_user uuid, p_org uuid, p_seq integer, p_frames integer, p_t_first bigint, p_t_last bigint, p_payload bytea) returns text security definer
--   app.telemetry_session(p_session uuid) returns TABLE(organization_id uuid, patient_user_id uuid, exercise_id uuid, status text, movement jsonb, started_at timestamp with time zone, result jsonb, replay_key text) security definer
--   app.telemetry_session_batches(p_session uuid) returns TABLE(seq integer, frame_count integer, payload bytea) security definer
--   app.telemetry_user_by_subject(p_subject text) returns uuid security definer
--   app.touch_updated_at() returns trigger
--   app.treatment_enrollment_pause_consistent() returns trigger security definer
--   app.treatment_plan_content_change() returns trigger
--   app.treatment_plan_exercises_sync() returns trigger security definer
--   app.treatment_plan_version_approval() returns trigger security definer
--   app.treatment_plan_versions_guard() returns trigger
--   app.unresolved_references(p_org uuid, p_targets text[], p_ids uuid[]) returns SETOF integer security definer
--   app.user_email_sort() returns trigger security definer
--   app.user_email_to_patients() returns trigger security definer
--   app.user_id_by_email(address text) returns uuid security definer
--   app.uuid_v7() returns uuid
--   app.weekdays_between(a date, b date, wd smallint[]) returns integer
--   app.withdraw_all_consents(person uuid, org uuid, everywhere boolean, by_principal uuid, reason text) returns jsonb security definer
