-- Telemetry (spec 4.11, 6.2, 8): movement definitions of exercises, exercise sessions, raw pose
-- batches, media session metrics, and the aggregates the core API writes when a session ends (pose
-- session metrics, pose rep metrics, the patient exercise log).
--
-- The telemetry service shares this database with its OWN role, app_telemetry. It holds no table
-- privilege at all: everything it does goes through the SECURITY DEFINER functions at the end of this
-- file, each one statement, each checking consent and session ownership itself. So a compromised
-- telemetry service can only do what these functions allow, and a consent withdrawal is seen by the
-- very next call on every instance (nothing is cached).

do $$ begin
  create role app_telemetry nologin;
exception when duplicate_object or unique_violation then null;
end $$;
do $$ begin
  if not (select rolsuper from pg_roles where rolname = current_user) then
    execute format('grant app_telemetry to %I', current_user);
  end if;
end $$;
grant usage on schema app to app_telemetry;

-- Exercises: admins of a clinic manage its library (spec 2.7 exercises.manage_org); staff who review
-- patients' sessions read telemetry (telemetry.view_org): admins and specialists (clinicians).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r join (values ('admin', 'exercises.manage_org'), ('admin', 'telemetry.view_org'), ('specialist', 'telemetry.view_org')) as g (role_code, code)
  on g.role_code = r.code
where r.is_system
on conflict do nothing;

-- ---------------------------------------------------------------------------------------------
-- Movement definition per exercise (docs/telemetry.md): which joint angles are tracked, which one
-- drives rep detection, the resting and target angles and the expected tempo. JSON checked by the API.
create table exercise_movements (
  exercise_id uuid primary key references exercises (id) on delete cascade,
  -- A copy of the exercise's organization (null: platform library), so policies need no join.
  organization_id uuid references organizations (id) on delete cascade,
  definition jsonb not null check (jsonb_typeof(definition) = 'object'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger exercise_movements_touch before update on exercise_movements for each row execute function app.touch_updated_at();
select app.secure_table('exercise_movements', 'select, insert, update');
-- Readable with the exercise (the subquery is subject to exercises_read).
create policy exercise_movements_read on exercise_movements for select to app_rls
  using (exists (select 1 from exercises e where e.id = exercise_id));
create policy exercise_movements_insert on exercise_movements for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')));
create policy exercise_movements_update on exercise_movements for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')));

-- ---------------------------------------------------------------------------------------------
-- Exercise sessions. active -> ending (POST /v1/sessions/{id}/end or the silence sweep took it; no more
-- batches) -> completed (ended by the patient) or incomplete (silent 10 minutes, spec 8).
create table exercise_sessions (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  patient_user_id uuid not null references users (id) on delete cascade,
  exercise_id uuid not null references exercises (id),
  -- The definition in force when the session started: the score measures what the patient was asked.
  movement jsonb not null,
  status text not null default 'active' check (status in ('active', 'ending', 'completed', 'incomplete')),
  end_reason text check (end_reason in ('session_end', 'silence', 'consent_withdrawn')),
  started_at timestamptz not null default now(),
  ended_at timestamptz,
  batches_received int not null default 0,
  frames_received int not null default 0,
  -- What scoring produced (docs/telemetry.md), kept with the session; the core's metrics tables hold the same.
  result jsonb,
  replay_key text,
  replay_deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger exercise_sessions_touch before update on exercise_sessions for each row execute function app.touch_updated_at();
create index exercise_sessions_patient_idx on exercise_sessions (patient_user_id, started_at desc);
create index exercise_sessions_org_idx on exercise_sessions (organization_id, started_at desc);
create index exercise_sessions_open_idx on exercise_sessions (started_at) where status in ('active', 'ending');
create index exercise_sessions_replay_idx on exercise_sessions (ended_at) where replay_key is not null;

select app.secure_table('exercise_sessions', 'select, insert');
-- The patient (ownership, spec 5.8) or staff holding telemetry.view_org at the organization in scope.
create policy exercise_sessions_read on exercise_sessions for select to app_rls using (
  patient_user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and (select app.has_permission('telemetry.view_org')))
);
-- A patient starts sessions for itself only, at an organization where it has a live patients row.
create policy exercise_sessions_insert on exercise_sessions for insert to app_rls with check (
  patient_user_id = (select app.current_principal_id())
  and organization_id = (select app.current_org_id())
  and exists (select 1 from patients p where p.organization_id = exercise_sessions.organization_id
                and p.user_id = exercise_sessions.patient_user_id and p.deleted_at is null)
);

-- Raw pose batches (docs/telemetry.md), exactly as received (gzip). Deleted when the session is finalized
-- (the replay blob then holds them). No application role reads or writes them directly.
create table pose_batches (
  session_id uuid not null references exercise_sessions (id) on delete cascade,
  seq int not null check (seq >= 0),
  organization_id uuid not null,
  frame_count int not null check (frame_count between 1 and 1000),
  t_first_ms bigint not null,
  t_last_ms bigint not null,
  payload bytea not null,
  received_at timestamptz not null default now(),
  primary key (session_id, seq)
);
select app.secure_table('pose_batches', 'select');
revoke select on pose_batches from app_rls;
create policy pose_batches_bypass on pose_batches for select to app_bypass using (true);

-- ---------------------------------------------------------------------------------------------
-- Media engagement (spec 4.11): one metrics row per playback (media session id chosen by the portal),
-- and its events, kept so that a retried batch is not counted twice.
create table media_session_metrics (
  media_session_id uuid primary key,
  organization_id uuid not null references organizations (id) on delete cascade,
  patient_user_id uuid not null references users (id) on delete cascade,
  exercise_id uuid references exercises (id) on delete set null,
  video_id text,
  started_at timestamptz,
  load_time_ms int,
  connection jsonb,
  heartbeats int not null default 0,
  bitrate_kbps_sum bigint not null default 0,
  last_bitrate_kbps int,
  last_quality text,
  quality_changes int not null default 0,
  buffering_events int not null default 0,
  buffering_ms bigint not null default 0,
  dropped_frames bigint not null default 0,
  max_position_s numeric,
  milestones int[] not null default '{}',
  completion_status text check (completion_status in ('completed', 'abandoned', 'error')),
  watched_percent numeric,
  final_stats jsonb,
  ended_at timestamptz,
  last_event_at timestamptz not null default now(),
  created_at timestamptz not null default now()
);
create index media_session_metrics_org_idx on media_session_metrics (organization_id, created_at desc);
create index media_session_metrics_age_idx on media_session_metrics (created_at);
select app.secure_table('media_session_metrics', 'select');
create policy media_session_metrics_read on media_session_metrics for select to app_rls using (
  patient_user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and (select app.has_permission('telemetry.view_org')))
);

create table media_events (
  media_session_id uuid not null references media_session_metrics (media_session_id) on delete cascade,
  seq int not null check (seq >= 0),
  kind text not null,
  occurred_at timestamptz not null,
  payload jsonb not null,
  received_at timestamptz not null default now(),
  primary key (media_session_id, seq)
);
select app.secure_table('media_events', 'select');
revoke select on media_events from app_rls;
create policy media_events_bypass on media_events for select to app_bypass using (true);

-- ---------------------------------------------------------------------------------------------
-- Aggregates written by the core API's consumer of exercise_session.ended (worker, owner role).
create table pose_session_metrics (
  session_id uuid primary key references exercise_sessions (id) on delete cascade,
  organization_id uuid not null,
  patient_user_id uuid not null,
  exercise_id uuid not null,
  status text not null,
  rep_count int not null,
  form_score int check (form_score between 0 and 100),
  rom jsonb not null,
  algorithm_version text not null,
  duration_s numeric not null,
  frames int not null,
  valid_frames int not null,
  ended_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index pose_session_metrics_age_idx on pose_session_metrics (ended_at);
create table pose_rep_metrics (
  session_id uuid not null references exercise_sessions (id) on delete cascade,
  rep_index int not null,
  organization_id uuid not null,
  patient_user_id uuid not null,
  start_ms bigint not null,
  end_ms bigint not null,
  range_deg numeric not null,
  peak_deg numeric not null,
  tempo_s numeric not null,
  score int not null check (score between 0 and 100),
  primary key (session_id, rep_index)
);
-- The patient's exercise log: one row per (organization, patient, exercise).
create table patient_exercise_log (
  organization_id uuid not null references organizations (id) on delete cascade,
  patient_user_id uuid not null references users (id) on delete cascade,
  exercise_id uuid not null references exercises (id) on delete cascade,
  sessions int not null default 0,
  completed_sessions int not null default 0,
  total_reps int not null default 0,
  last_session_id uuid,
  last_session_at timestamptz,
  last_form_score int,
  best_form_score int,
  updated_at timestamptz not null default now(),
  primary key (organization_id, patient_user_id, exercise_id)
);
select app.secure_table('pose_session_metrics', 'select');
select app.secure_table('pose_rep_metrics', 'select');
select app.secure_table('patient_exercise_log', 'select');
create policy pose_session_metrics_read on pose_session_metrics for select to app_rls using (
  patient_user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and (select app.has_permission('telemetry.view_org')))
);
create policy pose_rep_metrics_read on pose_rep_metrics for select to app_rls using (
  patient_user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and (select app.has_permission('telemetry.view_org')))
);
create policy patient_exercise_log_read on patient_exercise_log for select to app_rls using (
  patient_user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id()) and (select app.has_permission('telemetry.view_org')))
);

-- ---------------------------------------------------------------------------------------------
-- The telemetry service's functions. Owner rights, pinned search_path, executable by app_telemetry only.

-- 'ok', 'restricted' (GDPR art. 18 restriction, platform-wide or at the clinic), 'not_patient' (no live
-- patients row there) or 'consent_required' (no active grant of the purpose at the organization).
create or replace function app.telemetry_gate(p_user uuid, p_org uuid, p_purpose text)
returns text language sql stable security definer set search_path = pg_catalog, public as $$
  select case
    when exists (select 1 from gdpr_restrictions r where r.user_id = p_user and r.lifted_at is null
                   and (r.organization_id is null or r.organization_id = p_org)) then 'restricted'
    when not exists (select 1 from patients p where p.organization_id = p_org and p.user_id = p_user and p.deleted_at is null) then 'not_patient'
    when not exists (select 1 from consent_ledger c where c.patient_profile_id = p_user and c.organization_id = p_org
                       and c.purpose_code = p_purpose and c.withdrawn_at is null) then 'consent_required'
    else 'ok' end
$$;

-- The platform user of an identity-provider subject (media events carry the user's own bearer token).
create or replace function app.telemetry_user_by_subject(p_subject text)
returns uuid language sql stable security definer set search_path = pg_catalog, public as $$
  select id from users where external_subject = p_subject
$$;

-- One pose batch: ownership, consent and session state checked, stored once per (session, seq).
-- Returns 'stored', 'duplicate', 'session_not_found', 'session_closed' or a telemetry_gate refusal.
-- FOR KEY SHARE: concurrent batches do not block each other, but ending the session (FOR UPDATE)
-- waits for batches in flight, so none lands after the session stopped taking them.
create or replace function app.telemetry_ingest_pose(
  p_session uuid, p_user uuid, p_org uuid, p_seq int, p_frames int, p_t_first bigint, p_t_last bigint, p_payload bytea)
returns text language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  s record;
  g text;
begin
  select organization_id, patient_user_id, status into s from exercise_sessions where id = p_session for key share;
  if not found or s.patient_user_id <> p_user or s.organization_id <> p_org then return 'session_not_found'; end if;
  g := app.telemetry_gate(p_user, p_org, 'biometric');
  if g <> 'ok' then return g; end if;
  if s.status <> 'active' then return 'session_closed'; end if;
  insert into pose_batches (session_id, seq, organization_id, frame_count, t_first_ms, t_last_ms, payload)
  values (p_session, p_seq, p_org, p_frames, p_t_first, p_t_last, p_payload)
  on conflict do nothing;
  return case when found then 'stored' else 'duplicate' end;
end $$;

-- Media events (already validated by the service): consent checked, each (media session, seq) counted once.
-- Returns 'ok' (with how many were new), 'session_not_found' (another person's media session) or a gate refusal.
create or replace function app.telemetry_ingest_media(
  p_user uuid, p_org uuid, p_media_session uuid, p_exercise uuid, p_video text, p_events jsonb, out status text, out accepted int)
language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  m record;
begin
  accepted := 0;
  status := app.telemetry_gate(p_user, p_org, 'analytics');
  if status <> 'ok' then return; end if;
  insert into media_session_metrics (media_session_id, organization_id, patient_user_id, exercise_id, video_id)
  -- An unknown exercise id is dropped rather than failing the batch (the id is only a label here).
  values (p_media_session, p_org, p_user, (select e.id from exercises e where e.id = p_exercise), p_video)
  on conflict (media_session_id) do nothing;
  select organization_id, patient_user_id into m from media_session_metrics where media_session_id = p_media_session for update;
  if m.organization_id <> p_org or m.patient_user_id <> p_user then status := 'session_not_found'; return; end if;

  with incoming as (
    select (e ->> 'seq')::int as seq, e ->> 'kind' as kind, (e ->> 'at')::timestamptz as at, e as payload
    from jsonb_array_elements(p_events) e
  ), fresh as (
    insert into media_events (media_session_id, seq, kind, occurred_at, payload)
    select p_media_session, seq, kind, at, payload from incoming
    on conflict do nothing
    returning kind, occurred_at, payload
  ), agg as (
    select
      count(*) as n,
      count(*) filter (where kind = 'heartbeat') as heartbeats,
      coalesce(sum((payload ->> 'bitrate_kbps')::bigint) filter (where kind = 'heartbeat'), 0) as bitrate_sum,
      (array_agg((payload ->> 'bitrate_kbps')::int order by occurred_at desc) filter (where kind = 'heartbeat'))[1] as last_bitrate,
      (array_agg(coalesce(payload ->> 'quality', payload ->> 'to')) filter (where kind in ('heartbeat', 'quality_change')))[1] as last_quality,
      count(*) filter (where kind = 'quality_change') as quality_changes,
      count(*) filter (where kind = 'buffering_start') as buffering_events,
      coalesce(sum((payload ->> 'duration_ms')::bigint) filter (where kind = 'buffering_end'), 0) as buffering_ms,
      coalesce(sum((payload ->> 'dropped_frames')::bigint) filter (where kind = 'heartbeat'), 0) as dropped,
      max((payload ->> 'position_s')::numeric) as max_position,
      array_agg(distinct (payload ->> 'percent')::int) filter (where kind = 'milestone') as milestones,
      (array_agg(payload order by occurred_at) filter (where kind = 'session_start'))[1] as start_event,
      (array_agg(payload order by occurred_at desc) filter (where kind = 'session_end'))[1] as end_event,
      max(occurred_at) as last_at
    from fresh
  )
  update media_session_metrics t set
    heartbeats = t.heartbeats + agg.heartbeats,
    bitrate_kbps_sum = t.bitrate_kbps_sum + agg.bitrate_sum,
    last_bitrate_kbps = coalesce(agg.last_bitrate, t.last_bitrate_kbps),
    last_quality = coalesce(agg.last_quality, t.last_quality),
    quality_changes = t.quality_changes + agg.quality_changes,
    buffering_events = t.buffering_events + agg.buffering_events,
    buffering_ms = t.buffering_ms + agg.buffering_ms,
    dropped_frames = t.dropped_frames + agg.dropped,
    max_position_s = greatest(t.max_position_s, agg.max_position),
    milestones = (select coalesce(array_agg(distinct x order by x), '{}') from unnest(t.milestones || coalesce(agg.milestones, '{}')) x),
    started_at = coalesce(t.started_at, (agg.start_event ->> 'at')::timestamptz),
    load_time_ms = coalesce(t.load_time_ms, (agg.start_event ->> 'load_time_ms')::int),
    connection = coalesce(t.connection, agg.start_event -> 'connection'),
    completion_status = coalesce(agg.end_event ->> 'completion_status', t.completion_status),
    watched_percent = coalesce((agg.end_event ->> 'watched_percent')::numeric, t.watched_percent),
    final_stats = coalesce(agg.end_event, t.final_stats),
    ended_at = coalesce((agg.end_event ->> 'at')::timestamptz, t.ended_at),
    last_event_at = greatest(t.last_event_at, coalesce(agg.last_at, t.last_event_at))
  from agg
  where t.media_session_id = p_media_session and agg.n > 0
  returning agg.n into accepted;
  accepted := coalesce(accepted, 0);
end $$;

-- What ending needs to know about a session: its owner, state and definition.
create or replace function app.telemetry_session(p_session uuid)
returns table (organization_id uuid, patient_user_id uuid, exercise_id uuid, status text, movement jsonb, started_at timestamptz, result jsonb, replay_key text)
language sql stable security definer set search_path = pg_catalog, public as $$
  select organization_id, patient_user_id, exercise_id, status, movement, started_at, result, replay_key from exercise_sessions where id = p_session
$$;

-- Stops a session taking batches (active -> ending). With p_user set (the patient ending it), ownership
-- and consent are checked: scoring is processing of biometric data. Returns the status after the call
-- or a refusal. Waits for batches in flight (FOR UPDATE against their FOR KEY SHARE).
create or replace function app.telemetry_begin_end(p_session uuid, p_user uuid, p_org uuid)
returns text language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  s record;
  g text;
begin
  select organization_id, patient_user_id, status into s from exercise_sessions where id = p_session for update;
  if not found or (p_user is not null and (s.patient_user_id <> p_user or s.organization_id <> p_org)) then return 'session_not_found'; end if;
  if s.status in ('completed', 'incomplete') then return s.status; end if;
  if p_user is not null then
    g := app.telemetry_gate(p_user, p_org, 'biometric');
    if g <> 'ok' then return g; end if;
  end if;
  update exercise_sessions set status = 'ending' where id = p_session and status = 'active';
  return 'ending';
end $$;

-- The stored batches of a session being ended, in sequence order.
create or replace function app.telemetry_session_batches(p_session uuid)
returns table (seq int, frame_count int, payload bytea)
language sql stable security definer set search_path = pg_catalog, public as $$
  select b.seq, b.frame_count, b.payload from pose_batches b
  join exercise_sessions s on s.id = b.session_id and s.status = 'ending'
  where b.session_id = p_session order by b.seq
$$;

-- Finishes an ending session in ONE transaction: its result and replay key, the raw batches dropped
-- (the replay blob holds them), and the internal event the core API consumes (spec 4.11, 6.2).
-- false when it was already finished (ending twice is idempotent).
create or replace function app.telemetry_finish(
  p_session uuid, p_status text, p_reason text, p_result jsonb, p_replay_key text, p_batches int, p_frames int)
returns boolean language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  s record;
begin
  update exercise_sessions set status = p_status, end_reason = p_reason, ended_at = now(), result = p_result,
    replay_key = p_replay_key, batches_received = p_batches, frames_received = p_frames
  where id = p_session and status = 'ending'
  returning organization_id, patient_user_id, exercise_id, started_at, ended_at into s;
  if not found then return false; end if;
  delete from pose_batches where session_id = p_session;
  perform app.emit_event(s.organization_id, 'exercise_session.ended', jsonb_build_object(
    'session_id', p_session, 'organization_id', s.organization_id, 'patient_user_id', s.patient_user_id,
    'exercise_id', s.exercise_id, 'status', p_status, 'end_reason', p_reason,
    'started_at', s.started_at, 'ended_at', s.ended_at, 'result', p_result));
  return true;
end $$;

do $$
declare f text;
begin
  foreach f in array array[
    'app.telemetry_gate(uuid, uuid, text)', 'app.telemetry_user_by_subject(text)',
    'app.telemetry_ingest_pose(uuid, uuid, uuid, int, int, bigint, bigint, bytea)',
    'app.telemetry_ingest_media(uuid, uuid, uuid, uuid, text, jsonb)', 'app.telemetry_session(uuid)',
    'app.telemetry_begin_end(uuid, uuid, uuid)', 'app.telemetry_session_batches(uuid)',
    'app.telemetry_finish(uuid, text, text, jsonb, text, int, int)'] loop
    execute format('revoke all on function %s from public, app_rls, app_bypass', f);
    execute format('grant execute on function %s to app_telemetry', f);
  end loop;
end $$;
