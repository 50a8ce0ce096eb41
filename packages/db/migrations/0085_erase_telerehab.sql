-- Erasure reaches telerehab (docs/decisions.md, "Telerehab"; docs/telerehab.md, GDPR). The
-- home exercise programme rests on consent (biometric_capture, the plans' treatment_specific_* purposes), like
-- the telemetry it scores (migration 0059), so erasure removes it in the same scope (one clinic, or everywhere
-- when the account is anonymised):
-- - plan sessions, with their results (reps, form score, range of motion) and self-reports;
-- - enrollments with their pauses; a live one (active or paused) is announced as enrollment.cancelled;
-- - the plans written for the person (kind 'patient') with their versions (the versions' append-only guard
--   lets this function alone delete them, through app.erasing). A library plan promoted from one keeps its
--   content and loses only the link to its source.
-- Library plans, exercises and the audit trail (ids only) stay. The clinical record a clinic keeps is its
-- signed forms, which erasure already retains.
alter function app.erase_patient_records(uuid, uuid) rename to erase_patient_records_0085;
create function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  sessions_removed integer;
  enrollments_removed jsonb;
  plans_removed jsonb;
  e record;
begin
  -- Live enrollments end first, announced as a cancellation would be (receivers must not keep them running).
  for e in
    select x.organization_id, x.id, x.patient_id, x.treatment_plan_id
    from treatment_enrollments x join patients p on p.organization_id = x.organization_id and p.id = x.patient_id
    where p.user_id = target and (org is null or p.organization_id = org) and x.status in ('active', 'paused')
    order by x.organization_id, x.id
    for update of x
  loop
    perform app.emit_event(e.organization_id, 'enrollment.cancelled',
                           jsonb_build_object('id', e.id, 'patient_id', e.patient_id, 'treatment_plan_id', e.treatment_plan_id));
  end loop;

  with d as (
    delete from plan_sessions s using patients p
    where s.organization_id = p.organization_id and s.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org)
    returning 1
  )
  select count(*) into sessions_removed from d;

  -- Pauses go with their enrollment (on delete cascade).
  with d as (
    delete from treatment_enrollments x using patients p
    where x.organization_id = p.organization_id and x.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org)
    returning x.id, x.organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into enrollments_removed from d;

  perform set_config('app.erasing', 'on', true);
  with d as (
    delete from treatment_plans tp using patients p
    where tp.organization_id = p.organization_id and tp.patient_id = p.id and tp.kind = 'patient'
      and p.user_id = target and (org is null or p.organization_id = org)
    returning tp.id, tp.organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into plans_removed from d;
  perform set_config('app.erasing', 'off', true);

  return app.erase_patient_records_0085(target, org)
    || jsonb_build_object('plan_sessions_removed', sessions_removed, 'treatment_enrollments_removed', enrollments_removed,
                          'treatment_plans_removed', plans_removed);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
revoke all on function app.erase_patient_records_0085(uuid, uuid) from public;
