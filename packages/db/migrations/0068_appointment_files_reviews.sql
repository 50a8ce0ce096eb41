-- Appointment files and reviews, the specialist's own iCalendar feed secret, and erasure of both
-- (spec 4.5 Appointments; docs/decisions.md).

-- Files attached to an appointment (POST /v1/appointments/{id}/files): the bytes are in the asset store
-- under orgs/<org>/appointments/<appointment>/<file id> (the key keeps the appointment it was uploaded
-- to; the row follows a reschedule), the row says what they are. uploaded_by says from which side:
-- the patient (or its caregiver) removes only what that side added; staff who may update the
-- appointment remove any.
create table appointment_files (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null,
  appointment_id uuid not null,
  asset_key text not null check (length(asset_key) <= 300),
  filename text not null check (length(filename) between 1 and 255),
  content_type text not null check (length(content_type) between 1 and 100),
  size_bytes bigint not null check (size_bytes >= 0),
  sha256 text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  uploaded_by text not null check (uploaded_by in ('staff', 'patient')),
  uploaded_by_principal_id uuid,
  created_at timestamptz not null default now(),
  primary key (organization_id, id),
  unique (organization_id, asset_key),
  -- A deleted appointment (one that never took place) takes its rows; the orphan sweep takes the objects.
  foreign key (organization_id, appointment_id) references appointments (organization_id, id) on delete cascade
);
create index appointment_files_appointment_idx on appointment_files (organization_id, appointment_id, created_at);
select app.secure_table('appointment_files', 'select, insert, delete');
-- Read with the appointment: a file is visible to whoever sees its appointment (the subquery runs under
-- the appointments policies of the caller).
create policy appointment_files_read on appointment_files for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from appointments a
              where a.organization_id = appointment_files.organization_id and a.id = appointment_files.appointment_id)
);
-- Added by staff who may update the appointment (update_org, or update_own for its specialist), or by its
-- patient (or caregiver), never to a cancelled or rescheduled one.
create policy appointment_files_insert on appointment_files for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and uploaded_by_principal_id = (select app.current_principal_id())
  and exists (
    select 1 from appointments a
    where a.organization_id = appointment_files.organization_id and a.id = appointment_files.appointment_id
      and a.status not in ('cancelled', 'rescheduled')
      and case appointment_files.uploaded_by
            when 'staff' then (select app.has_permission('appointments.update_org'))
                              or ((select app.has_permission('appointments.update_own')) and a.specialist_id = (select app.own_specialist_id()))
            else a.patient_id is not null and a.patient_id = (select app.current_patient_id())
          end)
);
create policy appointment_files_delete on appointment_files for delete to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (
    select 1 from appointments a
    where a.organization_id = appointment_files.organization_id and a.id = appointment_files.appointment_id
      and ((select app.has_permission('appointments.update_org'))
           or ((select app.has_permission('appointments.update_own')) and a.specialist_id = (select app.own_specialist_id()))
           or (appointment_files.uploaded_by = 'patient' and a.patient_id is not null
               and a.patient_id = (select app.current_patient_id()))))
);

-- A reschedule makes a new appointment and keeps the old one as history: the files go on with the visit.
create or replace function app.appointment_files_follow() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
begin
  update appointment_files set appointment_id = new.rescheduled_to
  where organization_id = new.organization_id and appointment_id = new.id;
  return null;
end $$;
revoke all on function app.appointment_files_follow() from public;
create trigger appointments_files_follow after update of rescheduled_to on appointments for each row
  when (new.rescheduled_to is not null and old.rescheduled_to is distinct from new.rescheduled_to)
  execute function app.appointment_files_follow();

-- Reviews (POST /v1/appointments/{id}/reviews): the appointment's patient (or caregiver), once, after
-- the visit is done. Never changed by the application roles; erasure removes them.
create table appointment_reviews (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  appointment_id uuid not null,
  patient_id uuid not null,
  rating smallint not null check (rating between 1 and 5),
  comment text check (length(comment) between 1 and 2000),
  author_principal_id uuid,
  created_at timestamptz not null default now(),
  primary key (organization_id, id),
  -- Once per appointment: a concurrent second review is refused here (409 review_exists).
  unique (organization_id, appointment_id),
  foreign key (organization_id, appointment_id) references appointments (organization_id, id) on delete cascade,
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete restrict
);
create index appointment_reviews_patient_idx on appointment_reviews (organization_id, patient_id);
select app.secure_table('appointment_reviews', 'select, insert');
create policy appointment_reviews_read on appointment_reviews for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from appointments a
              where a.organization_id = appointment_reviews.organization_id and a.id = appointment_reviews.appointment_id)
);
create policy appointment_reviews_insert on appointment_reviews for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and author_principal_id = (select app.current_principal_id())
  and patient_id = (select app.current_patient_id())
  and exists (select 1 from appointments a
              where a.organization_id = appointment_reviews.organization_id and a.id = appointment_reviews.appointment_id
                and a.patient_id = appointment_reviews.patient_id and a.status = 'done')
);

-- A specialist sets or clears the feed secret of its own calendar (calendars_write needs locations.manage,
-- and would let it rename the calendar too): only that column, only its own calendar. Returns whether a
-- secret was set before (a rotation), or null when the calendar is not the caller's own.
create or replace function app.set_own_calendar_feed(cal uuid, hash text) returns boolean
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  had boolean;
begin
  select c.feed_token_hash is not null into had from calendars c
  where c.organization_id = app.current_org_id() and c.id = cal and c.kind = 'specialist'
    and c.specialist_id is not null and c.specialist_id = app.own_specialist_id()
  for update;
  if not found then
    return null;
  end if;
  update calendars set feed_token_hash = hash where organization_id = app.current_org_id() and id = cal;
  return had;
end $$;
revoke all on function app.set_own_calendar_feed(uuid, text) from public;
grant execute on function app.set_own_calendar_feed(uuid, text) to app_rls, app_bypass;

-- Erasure reaches appointments (docs/decisions.md): the function of 0061 runs first (forms, records,
-- telemetry, profile), then, for the person's patient records in scope:
-- - appointment files go (rows here; the objects after commit or by the appointments.orphan_files sweep)
--   and reviews go: neither is the clinical record a clinic must keep, which is its signed forms;
-- - bookings still ahead (scheduled, confirmed) are cancelled and their time freed, with their events;
-- - every appointment keeps only the clinic's schedule (when, which service and specialist, the status):
--   the patient's note, staff notes, the cancellation reason and any guest contact data go.
-- Guest bookings never tied to a patient record are not the person's (their email was never verified).
alter function app.erase_patient_records(uuid, uuid) rename to erase_patient_records_0061;
create function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  result jsonb := app.erase_patient_records_0061(target, org);
  files_removed jsonb;
  reviews_removed integer;
  cancelled jsonb := '[]'::jsonb;
  cleared integer;
  a record;
begin
  with d as (
    delete from appointment_files f using appointments ap, patients p
    where f.organization_id = ap.organization_id and f.appointment_id = ap.id
      and ap.organization_id = p.organization_id and ap.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org)
    returning f.id, f.organization_id, f.appointment_id, f.asset_key
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into files_removed from d;

  with d as (
    delete from appointment_reviews r using patients p
    where r.organization_id = p.organization_id and r.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org)
    returning 1
  )
  select count(*) into reviews_removed from d;

  for a in
    select ap.organization_id, ap.id, ap.status from appointments ap join patients p on p.organization_id = ap.organization_id and p.id = ap.patient_id
    where p.user_id = target and (org is null or p.organization_id = org) and ap.status in ('scheduled', 'confirmed')
    order by ap.organization_id, ap.id
    for update of ap
  loop
    update appointments set status = 'cancelled', status_changed_at = now(), cancelled_at = now()
    where organization_id = a.organization_id and id = a.id;
    update calendar_claims set active = false where organization_id = a.organization_id and appointment_id = a.id and active;
    perform app.emit_event(a.organization_id, 'appointment.cancelled', jsonb_build_object('id', a.id, 'from', a.status, 'to', 'cancelled'));
    cancelled := cancelled || jsonb_build_object('id', a.id, 'organization_id', a.organization_id);
  end loop;

  with c as (
    update appointments ap set patient_note = null, notes = null, cancellation_reason = null,
      guest_name = null, guest_email = null, guest_phone = null, guest_consents = '[]'::jsonb
    from patients p
    where ap.organization_id = p.organization_id and ap.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org)
      and (ap.patient_note is not null or ap.notes is not null or ap.cancellation_reason is not null
           or ap.guest_name is not null or ap.guest_email is not null or ap.guest_phone is not null or ap.guest_consents <> '[]'::jsonb)
    returning 1
  )
  select count(*) into cleared from c;

  return result || jsonb_build_object('appointment_files_removed', files_removed, 'appointment_reviews_removed', reviews_removed,
                                      'appointments_cancelled', cancelled, 'appointments_cleared', cleared);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
revoke all on function app.erase_patient_records_0061(uuid, uuid) from public;
