-- Pose ingest against the end of a session without a row lock (docs/telemetry.md "Ending").
--
-- Until now every batch locked its session row FOR KEY SHARE (0050, 0052; the foreign key check of the
-- insert took the same lock), so that ending (FOR UPDATE) waited for batches in flight. Every such lock
-- writes the row's header and a WAL record, and concurrent batches of one session queue on that row
-- (measured: ingest ratio 0.68 with one session against 0.79 with sixteen). The same guarantee now comes
-- from a transaction-scoped advisory lock per session, taken in two modes:
--   * a batch takes it SHARED before it reads the session and inserts (batches never wait for each
--     other), and reads the session in a later statement, so with a snapshot taken after the lock;
--   * ending (and deleting a session) takes it EXCLUSIVE: it waits until every batch in flight has
--     committed or rolled back, and batches arriving meanwhile wait for it, then see `ending` (409).
-- So a batch answered 2xx is committed before ending reads the batches, and none lands after.
-- The foreign key from pose_batches to exercise_sessions goes (its check is the row lock); the only
-- writer is app.telemetry_ingest_pose, which checks the session under the lock, and a trigger removes
-- the batches of a deleted session (the cascade the key gave), under the exclusive lock too.

-- Key: (80008, hashtext(session id)); 80008 is the telemetry lock class. A hash collision between two
-- sessions only makes an end wait for the other session's batch in flight.

create or replace function app.telemetry_ingest_pose(
  p_session uuid, p_user uuid, p_org uuid, p_seq int, p_frames int, p_t_first bigint, p_t_last bigint, p_payload bytea)
returns text language plpgsql security definer set search_path = pg_catalog, public set plan_cache_mode = force_generic_plan as $$
declare
  v_status text;
  v_owner uuid;
  v_org uuid;
  v_restricted boolean;
  v_patient boolean;
  v_consent boolean;
begin
  -- Its own statement: the select below then takes its snapshot after the lock, so it sees an end
  -- committed while this batch waited.
  perform pg_advisory_xact_lock_shared(80008, hashtext(p_session::text));
  select s.status, s.patient_user_id, s.organization_id,
    exists (select 1 from gdpr_restrictions r where r.user_id = p_user and r.lifted_at is null
              and (r.organization_id is null or r.organization_id = p_org)),
    exists (select 1 from patients p where p.organization_id = p_org and p.user_id = p_user and p.deleted_at is null),
    exists (select 1 from consent_ledger c where c.patient_profile_id = p_user and c.organization_id = p_org
              and c.purpose_code = 'biometric' and c.withdrawn_at is null)
  into v_status, v_owner, v_org, v_restricted, v_patient, v_consent
  from exercise_sessions s where s.id = p_session;
  -- The order of refusals is app.telemetry_gate's (0050): restriction, patient row, consent, then state.
  if not found or v_owner <> p_user or v_org <> p_org then return 'session_not_found'; end if;
  if v_restricted then return 'restricted'; end if;
  if not v_patient then return 'not_patient'; end if;
  if not v_consent then return 'consent_required'; end if;
  if v_status <> 'active' then return 'session_closed'; end if;
  insert into pose_batches (session_id, seq, organization_id, frame_count, t_first_ms, t_last_ms, payload)
  values (p_session, p_seq, p_org, p_frames, p_t_first, p_t_last, p_payload)
  on conflict do nothing;
  return case when found then 'stored' else 'duplicate' end;
end $$;

create or replace function app.telemetry_begin_end(p_session uuid, p_user uuid, p_org uuid)
returns text language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  s record;
  g text;
begin
  -- Waits for every batch in flight (they hold the lock shared); later batches wait for this transaction.
  perform pg_advisory_xact_lock(80008, hashtext(p_session::text));
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

alter table pose_batches drop constraint if exists pose_batches_session_id_fkey;

-- The cascade the foreign key gave: a deleted session (organization or person erased, retention) takes
-- its raw batches along, after batches in flight have committed.
create or replace function app.pose_batches_of_deleted_session()
returns trigger language plpgsql security definer set search_path = pg_catalog, public as $$
begin
  perform pg_advisory_xact_lock(80008, hashtext(old.id::text));
  delete from pose_batches where session_id = old.id;
  return old;
end $$;
revoke all on function app.pose_batches_of_deleted_session() from public;
create trigger exercise_sessions_drop_batches after delete on exercise_sessions
  for each row execute function app.pose_batches_of_deleted_session();
