-- Pose ingest, faster (docs/telemetry.md "Benchmark"). Same rules as 0050, cheaper shape:
--
-- 1. app.telemetry_ingest_pose checks ownership, GDPR restriction, the patients row and biometric consent
--    in ONE select that also locks the session row, inlined here rather than through app.telemetry_gate.
--    A non-inlinable SQL function (SECURITY DEFINER with SET is never inlined) is planned again on every
--    call before PostgreSQL 18; PL/pgSQL keeps its plans per connection. Nothing is cached across calls:
--    every batch still reads consent_ledger, so a withdrawal stops the very next batch on every instance.
-- 2. The session row lock stays FOR KEY SHARE: it is the lock the foreign key check of the insert takes
--    anyway (measured: the explicit lock costs nothing beside it), and it is what makes
--    app.telemetry_begin_end (FOR UPDATE) wait for batches in flight, so no acknowledged batch is missed
--    by the end of the session (apps/telemetry/test/concurrency.test.ts).
-- 3. Raw batches are gzip: never worth a pglz attempt, so the column is stored out of line uncompressed.
-- 4. app.telemetry_gate (still used to end a session and for media events) becomes PL/pgSQL for the
--    same plan caching.

create or replace function app.telemetry_ingest_pose(
  p_session uuid, p_user uuid, p_org uuid, p_seq int, p_frames int, p_t_first bigint, p_t_last bigint, p_payload bytea)
returns text language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  v_status text;
  v_owner uuid;
  v_org uuid;
  v_restricted boolean;
  v_patient boolean;
  v_consent boolean;
begin
  select s.status, s.patient_user_id, s.organization_id,
    exists (select 1 from gdpr_restrictions r where r.user_id = p_user and r.lifted_at is null
              and (r.organization_id is null or r.organization_id = p_org)),
    exists (select 1 from patients p where p.organization_id = p_org and p.user_id = p_user and p.deleted_at is null),
    exists (select 1 from consent_ledger c where c.patient_profile_id = p_user and c.organization_id = p_org
              and c.purpose_code = 'biometric' and c.withdrawn_at is null)
  into v_status, v_owner, v_org, v_restricted, v_patient, v_consent
  from exercise_sessions s where s.id = p_session
  for key share of s;
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

create or replace function app.telemetry_gate(p_user uuid, p_org uuid, p_purpose text)
returns text language plpgsql stable security definer set search_path = pg_catalog, public as $$
begin
  return case
    when exists (select 1 from gdpr_restrictions r where r.user_id = p_user and r.lifted_at is null
                   and (r.organization_id is null or r.organization_id = p_org)) then 'restricted'
    when not exists (select 1 from patients p where p.organization_id = p_org and p.user_id = p_user and p.deleted_at is null) then 'not_patient'
    when not exists (select 1 from consent_ledger c where c.patient_profile_id = p_user and c.organization_id = p_org
                       and c.purpose_code = p_purpose and c.withdrawn_at is null) then 'consent_required'
    else 'ok' end;
end $$;

alter table pose_batches alter column payload set storage external;
