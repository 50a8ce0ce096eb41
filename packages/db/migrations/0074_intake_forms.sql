-- A service's intake questions (issue: guest bookings carry "the answers of an intake form if the service has
-- one"): a form template named on the service, whose latest published version a booking answers. The answers
-- and the fields they answered (a snapshot, like a form's) live on the appointment: a guest has no patient
-- record for a form to belong to, and staff read them with the appointment.
create unique index if not exists form_templates_org_id_key on form_templates (organization_id, id);
alter table services add column intake_form_template_id uuid;
alter table services add constraint services_intake_form_template_id_fkey
  foreign key (organization_id, intake_form_template_id) references form_templates (organization_id, id) on delete set null (intake_form_template_id);

alter table appointments
  add column intake_form_template_id uuid,
  add column intake_template_version integer,
  add column intake_fields jsonb not null default '[]' check (jsonb_typeof(intake_fields) = 'array'),
  add column intake_answers jsonb not null default '{}' check (jsonb_typeof(intake_answers) = 'object');

-- Erasure clears the intake answers with the other texts of the person's appointments (0068).
alter function app.erase_patient_records(uuid, uuid) rename to erase_patient_records_0068;
create function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  result jsonb := app.erase_patient_records_0068(target, org);
  cleared integer;
begin
  with c as (
    update appointments ap set intake_answers = '{}'::jsonb
    from patients p
    where ap.organization_id = p.organization_id and ap.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org) and ap.intake_answers <> '{}'::jsonb
    returning 1
  )
  select count(*) into cleared from c;
  return result || jsonb_build_object('appointment_intakes_cleared', cleared);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
revoke all on function app.erase_patient_records_0068(uuid, uuid) from public;
