-- Erasure reaches telemetry (docs/decisions.md, "Erasure reaches telemetry"): app.erase_patient_records
-- of 0027 again, now also removing the person's exercise sessions (scores, batches; the replay blobs
-- are returned for the caller to delete), media playbacks with their events and the exercise log,
-- in the same scope as the records (one clinic, or everywhere when the account is anonymised).
create or replace function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  files_removed jsonb;
  forms_erased jsonb;
  retained jsonb;
  records_cleared jsonb;
  sessions_removed jsonb;
  playbacks_removed int;
begin
  -- Files of unsigned forms (live or soft-deleted). The guard trigger refuses files of signed forms,
  -- and none are selected. asset_key is returned so the caller can delete the objects after commit.
  with d as (
    delete from form_files ff using forms f, patients p
    where ff.form_id = f.id and f.patient_id = p.id and f.status = 'pending'
      and p.user_id = target and (org is null or p.organization_id = org)
    returning ff.id, ff.organization_id, ff.form_id, ff.asset_key
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into files_removed from d;

  -- Unsigned forms: values emptied and soft-deleted (snapshots and consent rows reference the row).
  with e as (
    update forms f set "values" = '{}'::jsonb, deleted_at = coalesce(f.deleted_at, now())
    from patients p
    where f.patient_id = p.id and f.status = 'pending'
      and p.user_id = target and (org is null or p.organization_id = org)
      and (f."values" <> '{}'::jsonb or f.deleted_at is null)
    returning f.id, f.organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(e) order by e.organization_id, e.id), '[]'::jsonb) into forms_erased from e;

  -- Signed forms stay as signed (retention duty); reported so that the clinic can tell the person.
  select coalesce(jsonb_agg(jsonb_build_object('id', f.id, 'organization_id', f.organization_id) order by f.organization_id, f.id), '[]'::jsonb)
  into retained
  from forms f join patients p on p.id = f.patient_id
  where f.status = 'signed' and p.user_id = target and (org is null or p.organization_id = org);

  -- The records themselves: contact details, staff notes and custom field values always go; the name
  -- and date of birth stay only where a signed form needs them to say whose record it is.
  with c as (
    update patients p set
      phone = null, notes = null, custom_field_values = '{}'::jsonb,
      first_name = case when k.keep then p.first_name end,
      last_name = case when k.keep then p.last_name end,
      date_of_birth = case when k.keep then p.date_of_birth end
    from (select pp.id, exists (select 1 from forms f where f.patient_id = pp.id and f.status = 'signed') as keep
          from patients pp where pp.user_id = target and (org is null or pp.organization_id = org)) k
    where p.id = k.id
    returning p.id, p.organization_id, k.keep as identity_retained
  )
  select coalesce(jsonb_agg(to_jsonb(c) order by c.organization_id), '[]'::jsonb) into records_cleared from c;

  -- Telemetry: biometric and engagement data of the person in scope. Exercise sessions go with their
  -- scores (pose session and rep metrics by cascade) and raw batches (trigger), each under its
  -- exclusive session lock so that no batch in flight lands after (0054); replay keys are returned so
  -- that the caller deletes the blobs after commit. Playbacks go with their events; the exercise log
  -- (counts per exercise) too. The clinical record the law makes a clinic keep is its signed forms.
  perform pg_advisory_xact_lock(80008, hashtext(s.id::text))
  from exercise_sessions s
  where s.patient_user_id = target and (org is null or s.organization_id = org)
  order by s.id;
  with d as (
    delete from exercise_sessions s
    where s.patient_user_id = target and (org is null or s.organization_id = org)
    returning s.id, s.organization_id, s.replay_key
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into sessions_removed from d;
  with m as (
    delete from media_session_metrics m
    where m.patient_user_id = target and (org is null or m.organization_id = org)
    returning 1
  )
  select count(*) into playbacks_removed from m;
  delete from patient_exercise_log l where l.patient_user_id = target and (org is null or l.organization_id = org);

  return jsonb_build_object('form_files_removed', files_removed, 'forms_erased', forms_erased,
                            'signed_forms_retained', retained, 'patient_records_cleared', records_cleared,
                            'exercise_sessions_removed', sessions_removed, 'media_sessions_removed', playbacks_removed);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
