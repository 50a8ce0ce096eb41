-- The current schema, generated from the migrations by `npm run docs:schema`: do not edit by hand.
-- The migrations in packages/db/migrations are the source; this file shows where they have led.

create table public.audit_chain_heads (
  chain_id uuid not null,
  last_seq bigint not null,
  last_hash text not null,
  constraint audit_chain_heads_pkey PRIMARY KEY (chain_id)
);
alter table public.audit_chain_heads enable row level security;
alter table public.audit_chain_heads force row level security;

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
CREATE TRIGGER audit_logs_append_only BEFORE DELETE OR UPDATE ON public.audit_logs FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER audit_logs_chain BEFORE INSERT ON public.audit_logs FOR EACH ROW EXECUTE FUNCTION app.audit_chain_link();
CREATE TRIGGER audit_logs_chain_flush AFTER INSERT ON public.audit_logs REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION app.audit_chain_flush();
CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON public.audit_logs FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

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
  constraint break_glass_sessions_check CHECK (((expires_at > created_at) AND (expires_at <= (created_at + '04:00:00'::interval)))),
  constraint break_glass_sessions_reason_category_check CHECK ((reason_category = ANY (ARRAY['support_ticket'::text, 'security_incident'::text, 'dsar_routing'::text, 'fraud_investigation'::text, 'platform_engineering'::text]))),
  constraint break_glass_sessions_reason_ref_check CHECK (((length(reason_ref) >= 1) AND (length(reason_ref) <= 200))),
  constraint break_glass_sessions_reason_text_check CHECK (((length(reason_text) >= 1) AND (length(reason_text) <= 2000))),
  constraint break_glass_sessions_scope_check CHECK ((scope = ANY (ARRAY['patient_list'::text, 'patient_detail'::text, 'audit_full'::text, 'cross_org_lookup'::text, 'org_management'::text]))),
  constraint break_glass_sessions_pkey PRIMARY KEY (id)
);
alter table public.break_glass_sessions enable row level security;
alter table public.break_glass_sessions force row level security;
CREATE INDEX break_glass_sessions_lookup_idx ON public.break_glass_sessions USING btree (superadmin_user_id, organization_id, scope, expires_at DESC);
create policy break_glass_sessions_read on public.break_glass_sessions as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('audit_log.view_org'::text) AS has_permission)));
CREATE TRIGGER break_glass_sessions_append_only BEFORE DELETE OR UPDATE ON public.break_glass_sessions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER break_glass_sessions_no_truncate BEFORE TRUNCATE ON public.break_glass_sessions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();

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
create policy consent_purpose_versions_insert on public.consent_purpose_versions as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('consents.manage'::text) AS has_permission) AND (published_by_principal_id = ( SELECT app.current_principal_id() AS current_principal_id))));
create policy consent_purpose_versions_read on public.consent_purpose_versions as permissive for select to app_rls using (true);
CREATE TRIGGER consent_purpose_versions_append_only BEFORE DELETE OR UPDATE ON public.consent_purpose_versions FOR EACH ROW EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER consent_purpose_versions_context_epoch AFTER INSERT ON public.consent_purpose_versions FOR EACH STATEMENT EXECUTE FUNCTION app.bump_context_epoch();
CREATE TRIGGER consent_purpose_versions_no_truncate BEFORE TRUNCATE ON public.consent_purpose_versions FOR EACH STATEMENT EXECUTE FUNCTION app.forbid_change();
CREATE TRIGGER consent_purpose_versions_scope BEFORE INSERT ON public.consent_purpose_versions FOR EACH ROW EXECUTE FUNCTION app.consent_version_scope_rule();

create table public.consent_purposes (
  code text not null,
  scope text not null,
  name text not null,
  description text not null,
  legal_basis text not null,
  withdrawable boolean default (legal_basis = 'consent'::text),
  required boolean not null default false,
  constraint consent_purposes_code_check CHECK ((code ~ '^[a-z][a-z0-9_]*$'::text)),
  constraint consent_purposes_legal_basis_check CHECK ((legal_basis = ANY (ARRAY['contract'::text, 'legitimate_interest'::text, 'consent'::text, 'legal_obligation'::text, 'vital_interest'::text]))),
  constraint consent_purposes_required_not_consent CHECK ((NOT (required AND (legal_basis = 'consent'::text)))),
  constraint consent_purposes_scope_check CHECK ((scope = ANY (ARRAY['platform'::text, 'org'::text]))),
  constraint consent_purposes_pkey PRIMARY KEY (code)
);
alter table public.consent_purposes enable row level security;
alter table public.consent_purposes force row level security;
create policy consent_purposes_read on public.consent_purposes as permissive for select to app_rls using (true);
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
  constraint custom_field_versions_custom_field_id_fkey FOREIGN KEY (custom_field_id) REFERENCES custom_fields(id),
  constraint custom_field_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint custom_field_versions_pkey PRIMARY KEY (id),
  constraint custom_field_versions_custom_field_id_version_key UNIQUE (custom_field_id, version)
);
alter table public.custom_field_versions enable row level security;
alter table public.custom_field_versions force row level security;
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
  constraint custom_fields_pkey PRIMARY KEY (id)
);
alter table public.custom_fields enable row level security;
alter table public.custom_fields force row level security;
CREATE UNIQUE INDEX custom_fields_key ON public.custom_fields USING btree (organization_id, entity_type, key) WHERE (deleted_at IS NULL);
CREATE INDEX custom_fields_org_idx ON public.custom_fields USING btree (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX custom_fields_system_key ON public.custom_fields USING btree (organization_id, entity_type, system_key) WHERE ((deleted_at IS NULL) AND (system_key IS NOT NULL));
create policy custom_fields_insert on public.custom_fields as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('custom_fields.manage'::text) AS has_permission)));
create policy custom_fields_read on public.custom_fields as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org)));
create policy custom_fields_read_patient on public.custom_fields as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (deleted_at IS NULL) AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)));
create policy custom_fields_update on public.custom_fields as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('custom_fields.manage'::text) AS has_permission))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER custom_fields_guard BEFORE UPDATE ON public.custom_fields FOR EACH ROW EXECUTE FUNCTION app.custom_field_guard();
CREATE TRIGGER custom_fields_touch BEFORE UPDATE ON public.custom_fields FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

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
  constraint exercise_sessions_pkey PRIMARY KEY (id)
);
alter table public.exercise_sessions enable row level security;
alter table public.exercise_sessions force row level security;
CREATE INDEX exercise_sessions_open_idx ON public.exercise_sessions USING btree (started_at) WHERE (status = ANY (ARRAY['active'::text, 'ending'::text]));
CREATE INDEX exercise_sessions_org_idx ON public.exercise_sessions USING btree (organization_id, started_at DESC);
CREATE INDEX exercise_sessions_patient_idx ON public.exercise_sessions USING btree (patient_user_id, started_at DESC);
CREATE INDEX exercise_sessions_replay_idx ON public.exercise_sessions USING btree (ended_at) WHERE (replay_key IS NOT NULL);
create policy exercise_sessions_insert on public.exercise_sessions as permissive for insert to app_rls with check (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (EXISTS ( SELECT 1
   FROM patients p
  WHERE ((p.organization_id = exercise_sessions.organization_id) AND (p.user_id = exercise_sessions.patient_user_id) AND (p.deleted_at IS NULL))))));
create policy exercise_sessions_read on public.exercise_sessions as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));
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
  constraint exercises_asset_version_check CHECK ((asset_version >= 1)),
  constraint exercises_kind_check CHECK ((kind = ANY (ARRAY['reps_based'::text, 'duration_based'::text]))),
  constraint exercises_name_check CHECK (((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200))),
  constraint exercises_slug_check CHECK (((slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'::text) AND (length(slug) <= 100))),
  constraint exercises_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'published'::text, 'archived'::text]))),
  constraint exercises_catalog_render_fk FOREIGN KEY (catalog_render_id) REFERENCES exercise_renders(id) ON DELETE SET NULL,
  constraint exercises_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint exercises_pkey PRIMARY KEY (id),
  constraint exercises_slug_key UNIQUE (slug)
);
alter table public.exercises enable row level security;
alter table public.exercises force row level security;
CREATE INDEX exercises_org_idx ON public.exercises USING btree (organization_id, created_at DESC);
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
  constraint form_field_snapshots_form_id_fkey FOREIGN KEY (form_id) REFERENCES forms(id),
  constraint form_field_snapshots_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint form_field_snapshots_pkey PRIMARY KEY (id),
  constraint form_field_snapshots_form_id_key_key UNIQUE (form_id, key),
  constraint form_field_snapshots_form_id_position_key UNIQUE (form_id, "position")
);
alter table public.form_field_snapshots enable row level security;
alter table public.form_field_snapshots force row level security;
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
  constraint form_files_form_id_fkey FOREIGN KEY (form_id) REFERENCES forms(id),
  constraint form_files_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint form_files_pkey PRIMARY KEY (id),
  constraint form_files_asset_key_key UNIQUE (asset_key)
);
alter table public.form_files enable row level security;
alter table public.form_files force row level security;
CREATE INDEX form_files_form_idx ON public.form_files USING btree (form_id, created_at);
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
  constraint form_template_versions_form_template_id_fkey FOREIGN KEY (form_template_id) REFERENCES form_templates(id),
  constraint form_template_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint form_template_versions_pkey PRIMARY KEY (id),
  constraint form_template_versions_form_template_id_version_key UNIQUE (form_template_id, version)
);
alter table public.form_template_versions enable row level security;
alter table public.form_template_versions force row level security;
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
  constraint form_templates_pkey PRIMARY KEY (id)
);
alter table public.form_templates enable row level security;
alter table public.form_templates force row level security;
CREATE INDEX form_templates_org_idx ON public.form_templates USING btree (organization_id, created_at DESC, id DESC);
create policy form_templates_insert on public.form_templates as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission)));
create policy form_templates_read on public.form_templates as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('form_templates.view'::text) AS has_permission) OR ( SELECT app.has_permission('form_templates.manage'::text) AS has_permission))));
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
  constraint forms_form_template_id_fkey FOREIGN KEY (form_template_id) REFERENCES form_templates(id),
  constraint forms_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id),
  constraint forms_patient_id_fkey FOREIGN KEY (patient_id) REFERENCES patients(id),
  constraint forms_pkey PRIMARY KEY (id)
);
alter table public.forms enable row level security;
alter table public.forms force row level security;
CREATE INDEX forms_org_created_idx ON public.forms USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX forms_patient_idx ON public.forms USING btree (patient_id, created_at DESC);
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
  constraint locations_pkey PRIMARY KEY (id)
);
alter table public.locations enable row level security;
alter table public.locations force row level security;
CREATE INDEX locations_org_created_idx ON public.locations USING btree (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX locations_org_name_key ON public.locations USING btree (organization_id, lower(name));
create policy locations_delete on public.locations as permissive for delete to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
create policy locations_insert on public.locations as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('locations.manage'::text) AS has_permission)));
create policy locations_read on public.locations as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.is_staff_at_current_org() AS is_staff_at_current_org)));
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
  constraint memberships_pkey PRIMARY KEY (user_id, organization_id)
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

create table public.organization_settings (
  organization_id uuid not null,
  default_timezone text not null default 'UTC'::text,
  created_at timestamp with time zone not null default now(),
  updated_at timestamp with time zone not null default now(),
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
  constraint patients_custom_field_values_check CHECK ((jsonb_typeof(custom_field_values) = 'object'::text)),
  constraint patients_first_name_check CHECK ((length(first_name) <= 100)),
  constraint patients_last_name_check CHECK ((length(last_name) <= 100)),
  constraint patients_notes_check CHECK ((length(notes) <= 10000)),
  constraint patients_phone_check CHECK ((length(phone) <= 40)),
  constraint patients_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint patients_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE,
  constraint patients_pkey PRIMARY KEY (id),
  constraint patients_organization_id_user_id_key UNIQUE (organization_id, user_id)
);
alter table public.patients enable row level security;
alter table public.patients force row level security;
CREATE INDEX patients_org_created_idx ON public.patients USING btree (organization_id, created_at DESC, id DESC);
CREATE INDEX patients_user_idx ON public.patients USING btree (user_id);
create policy patients_insert on public.patients as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('patients.onboard'::text) AS has_permission)));
create policy patients_read_org on public.patients as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.view_org'::text) AS has_permission) OR ( SELECT app.has_permission('patients.view'::text) AS has_permission)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission))));
create policy patients_read_own on public.patients as permissive for select to app_rls using ((user_id = ( SELECT app.current_principal_id() AS current_principal_id)));
create policy patients_update_org on public.patients as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('patients.update_org'::text) AS has_permission) OR ( SELECT app.has_permission('patients.delete'::text) AS has_permission)))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
create policy patients_update_self on public.patients as permissive for update to app_rls using (((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND (deleted_at IS NULL))) with check ((user_id = ( SELECT app.current_principal_id() AS current_principal_id)));
CREATE TRIGGER patients_context_version AFTER INSERT OR DELETE OR UPDATE ON public.patients FOR EACH ROW EXECUTE FUNCTION app.bump_user_context_version('user_id');
CREATE TRIGGER patients_touch BEFORE UPDATE ON public.patients FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();
CREATE TRIGGER patients_write_guard BEFORE UPDATE ON public.patients FOR EACH ROW EXECUTE FUNCTION app.patients_write_guard();

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
create policy permissions_read on public.permissions as permissive for select to app_rls using (true);

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
  constraint platform_provider_kinds_capability_check CHECK ((capability = ANY (ARRAY['email'::text, 'storage'::text, 'auth'::text]))),
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
  constraint pose_batches_pkey PRIMARY KEY (session_id, seq)
);
alter table public.pose_batches enable row level security;
alter table public.pose_batches force row level security;
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
  constraint pose_rep_metrics_session_id_fkey FOREIGN KEY (session_id) REFERENCES exercise_sessions(id) ON DELETE CASCADE,
  constraint pose_rep_metrics_pkey PRIMARY KEY (session_id, rep_index)
);
alter table public.pose_rep_metrics enable row level security;
alter table public.pose_rep_metrics force row level security;
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
  constraint pose_session_metrics_session_id_fkey FOREIGN KEY (session_id) REFERENCES exercise_sessions(id) ON DELETE CASCADE,
  constraint pose_session_metrics_pkey PRIMARY KEY (session_id)
);
alter table public.pose_session_metrics enable row level security;
alter table public.pose_session_metrics force row level security;
CREATE INDEX pose_session_metrics_age_idx ON public.pose_session_metrics USING btree (ended_at);
create policy pose_session_metrics_read on public.pose_session_metrics as permissive for select to app_rls using (((patient_user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('telemetry.view_org'::text) AS has_permission))));

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
  constraint specialists_bio_check CHECK ((length(bio) <= 5000)),
  constraint specialists_contact_email_check CHECK ((length(contact_email) <= 320)),
  constraint specialists_contact_phone_check CHECK ((length(contact_phone) <= 40)),
  constraint specialists_custom_field_values_check CHECK ((jsonb_typeof(custom_field_values) = 'object'::text)),
  constraint specialists_display_name_check CHECK (((length(btrim(display_name)) >= 1) AND (length(btrim(display_name)) <= 200))),
  constraint specialists_title_check CHECK ((length(title) <= 200)),
  constraint specialists_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint specialists_user_id_organization_id_fkey FOREIGN KEY (user_id, organization_id) REFERENCES memberships(user_id, organization_id) ON DELETE CASCADE,
  constraint specialists_pkey PRIMARY KEY (id)
);
alter table public.specialists enable row level security;
alter table public.specialists force row level security;
CREATE UNIQUE INDEX specialists_member_key ON public.specialists USING btree (organization_id, user_id);
CREATE INDEX specialists_org_created_idx ON public.specialists USING btree (organization_id, created_at DESC, id DESC);
create policy specialists_insert on public.specialists as permissive for insert to app_rls with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('specialists.create'::text) AS has_permission)));
create policy specialists_read on public.specialists as permissive for select to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ((deleted_at IS NULL) OR ( SELECT app.has_permission('data.view_deleted'::text) AS has_permission)) AND (( SELECT app.has_permission('specialists.view'::text) AS has_permission) OR (user_id = ( SELECT app.current_principal_id() AS current_principal_id)) OR ((deleted_at IS NULL) AND (( SELECT app.current_patient_id() AS current_patient_id) IS NOT NULL)))));
create policy specialists_update on public.specialists as permissive for update to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND (( SELECT app.has_permission('specialists.update_org'::text) AS has_permission) OR ( SELECT app.has_permission('specialists.delete'::text) AS has_permission) OR ((user_id = ( SELECT app.current_principal_id() AS current_principal_id)) AND ( SELECT app.has_permission('specialists.update_self'::text) AS has_permission))))) with check ((organization_id = ( SELECT app.current_org_id() AS current_org_id)));
CREATE TRIGGER specialists_touch BEFORE UPDATE ON public.specialists FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();
CREATE TRIGGER specialists_write_guard BEFORE UPDATE ON public.specialists FOR EACH ROW EXECUTE FUNCTION app.specialists_write_guard();

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
  constraint webhook_deliveries_subscription_id_fkey FOREIGN KEY (subscription_id) REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  constraint webhook_deliveries_pkey PRIMARY KEY (id),
  constraint webhook_deliveries_subscription_id_event_id_key UNIQUE (subscription_id, event_id)
);
alter table public.webhook_deliveries enable row level security;
alter table public.webhook_deliveries force row level security;
CREATE INDEX webhook_deliveries_resend_idx ON public.webhook_deliveries USING btree (resend_requested_at) WHERE (resend_requested_at IS NOT NULL);
CREATE INDEX webhook_deliveries_sub_idx ON public.webhook_deliveries USING btree (subscription_id, created_at DESC);
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
  constraint webhook_delivery_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  constraint webhook_delivery_attempts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
  constraint webhook_delivery_attempts_subscription_id_fkey FOREIGN KEY (subscription_id) REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  constraint webhook_delivery_attempts_pkey PRIMARY KEY (id)
);
alter table public.webhook_delivery_attempts enable row level security;
alter table public.webhook_delivery_attempts force row level security;
CREATE UNIQUE INDEX webhook_delivery_attempts_key ON public.webhook_delivery_attempts USING btree (delivery_id, attempt);
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
  constraint webhook_subscriptions_pkey PRIMARY KEY (id)
);
alter table public.webhook_subscriptions enable row level security;
alter table public.webhook_subscriptions force row level security;
CREATE INDEX webhook_subscriptions_org_idx ON public.webhook_subscriptions USING btree (organization_id, created_at DESC);
create policy webhook_subscriptions_all on public.webhook_subscriptions as permissive for all to app_rls using (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission))) with check (((organization_id = ( SELECT app.current_org_id() AS current_org_id)) AND ( SELECT app.has_permission('webhooks.manage'::text) AS has_permission)));
CREATE TRIGGER webhook_subscriptions_touch BEFORE UPDATE ON public.webhook_subscriptions FOR EACH ROW EXECUTE FUNCTION app.touch_updated_at();

-- Functions (signatures; the bodies are in the migrations)
--   app.admin_permission() returns text
--   app.append_only(t regclass) returns void
--   app.audit_canonical(a audit_logs) returns text
--   app.audit_chain_flush() returns trigger security definer
--   app.audit_chain_link() returns trigger security definer
--   app.audit_hash(prev_hash text, canonical text) returns text
--   app.bump_context_epoch() returns trigger security definer
--   app.bump_own_context_version() returns trigger
--   app.bump_user_context_version() returns trigger security definer
--   app.consent_ledger_guard() returns trigger
--   app.consent_patient_user_id(patient uuid) returns uuid security definer
--   app.consent_version_scope_rule() returns trigger
--   app.consent_withdrawal_cascade() returns trigger security definer
--   app.create_organization_settings() returns trigger security definer
--   app.current_org_id() returns uuid
--   app.current_patient_id() returns uuid security definer
--   app.current_principal_id() returns uuid
--   app.custom_field_guard() returns trigger
--   app.emit_consent_event() returns trigger
--   app.emit_event(p_organization_id uuid, p_type text, p_data jsonb) returns uuid security definer
--   app.emit_membership_event() returns trigger
--   app.ensure_patient_user(address text) returns uuid security definer
--   app.erase_patient_records(target uuid, org uuid) returns jsonb security definer
--   app.erase_user(target uuid, org uuid, reason text) returns jsonb security definer
--   app.forbid_change() returns trigger
--   app.form_files_guard() returns trigger security definer
--   app.forms_signed_guard() returns trigger
--   app.gdpr_patient_user_id(patient uuid) returns uuid security definer
--   app.has_permission(code text) returns boolean
--   app.is_staff_at_current_org() returns boolean
--   app.leave_clinic(org uuid) returns jsonb security definer
--   app.lock_admin_set(org uuid) returns void
--   app.membership_email_sort() returns trigger security definer
--   app.membership_principal_rule() returns trigger security definer
--   app.onboard_patient(org uuid) returns TABLE(patient_id uuid, status text) security definer
--   app.other_admin_exists(org uuid, except_user uuid, except_role uuid) returns boolean
--   app.patient_email(p_patient_id uuid) returns text security definer
--   app.patients_write_guard() returns trigger
--   app.platform_membership_human_only() returns trigger
--   app.pose_batches_of_deleted_session() returns trigger security definer
--   app.secure_table(t regclass, privileges text) returns void
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
--   app.user_email_sort() returns trigger security definer
--   app.user_id_by_email(address text) returns uuid security definer
--   app.uuid_v7() returns uuid
--   app.withdraw_all_consents(person uuid, org uuid, everywhere boolean, by_principal uuid, reason text) returns jsonb security definer
