-- A media session id is chosen by the portal, and was unique across the whole platform: a patient
-- sending an id that another clinic's (or another person's) playback already used got 404 "No such
-- session for this caller", which told them the id exists elsewhere. A playback is now identified by
-- (organization, patient, id): anyone's id is simply their own new playback, and nothing is learnt.
alter table media_events add column organization_id uuid, add column patient_user_id uuid;
update media_events e set organization_id = m.organization_id, patient_user_id = m.patient_user_id
from media_session_metrics m where m.media_session_id = e.media_session_id;
alter table media_events alter column organization_id set not null, alter column patient_user_id set not null;
alter table media_events drop constraint media_events_media_session_id_fkey, drop constraint media_events_pkey;
alter table media_session_metrics drop constraint media_session_metrics_pkey;
alter table media_session_metrics add primary key (organization_id, patient_user_id, media_session_id);
alter table media_events add primary key (organization_id, patient_user_id, media_session_id, seq);
alter table media_events add foreign key (organization_id, patient_user_id, media_session_id)
  references media_session_metrics (organization_id, patient_user_id, media_session_id) on delete cascade;

-- Media events (already validated by the service): consent checked, each (playback, seq) counted once.
-- Returns 'ok' with how many were new, or a gate refusal.
create or replace function app.telemetry_ingest_media(
  p_user uuid, p_org uuid, p_media_session uuid, p_exercise uuid, p_video text, p_events jsonb, out status text, out accepted int)
language plpgsql security definer set search_path = pg_catalog, public as $$
begin
  accepted := 0;
  status := app.telemetry_gate(p_user, p_org, 'analytics');
  if status <> 'ok' then return; end if;
  insert into media_session_metrics (media_session_id, organization_id, patient_user_id, exercise_id, video_id)
  -- An unknown exercise id is dropped rather than failing the batch (the id is only a label here).
  values (p_media_session, p_org, p_user, (select e.id from exercises e where e.id = p_exercise), p_video)
  on conflict (organization_id, patient_user_id, media_session_id) do nothing;
  -- Serialises batches of one playback (the aggregate update below reads and adds).
  perform 1 from media_session_metrics
  where organization_id = p_org and patient_user_id = p_user and media_session_id = p_media_session for update;

  with incoming as (
    select (e ->> 'seq')::int as seq, e ->> 'kind' as kind, (e ->> 'at')::timestamptz as at, e as payload
    from jsonb_array_elements(p_events) e
  ), fresh as (
    insert into media_events (organization_id, patient_user_id, media_session_id, seq, kind, occurred_at, payload)
    select p_org, p_user, p_media_session, seq, kind, at, payload from incoming
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
  where t.organization_id = p_org and t.patient_user_id = p_user and t.media_session_id = p_media_session and agg.n > 0
  returning agg.n into accepted;
  accepted := coalesce(accepted, 0);
end $$;
