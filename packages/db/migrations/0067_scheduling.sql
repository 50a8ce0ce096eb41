-- Scheduling and appointments (spec 4.5 Scheduling, Appointments; 3.5; architecture section 7).
--
-- A calendar is a bookable resource: a specialist's (one each, made with the specialist), a room's or a
-- device's (at a location). Its availability is the rules and exceptions of migration 0060: a specialist's
-- calendar reads the specialist's, a room or device has its own (calendar_id on the same tables).
-- Whatever occupies a calendar for a time is a claim: an appointment (with its buffers) or a live hold.
-- No two active claims of one calendar overlap: an exclusion constraint decides it, not a read before the
-- write, so concurrent bookings of one slot give one appointment and 409 for the others.
create extension if not exists btree_gist;

-- A service's booking grid: slots start at multiples of this many minutes after local midnight (null:
-- every 15 minutes).
alter table services add column slot_interval_minutes integer check (slot_interval_minutes between 5 and 240);

create table calendars (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  kind text not null check (kind in ('specialist', 'room', 'device')),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 2000),
  specialist_id uuid,
  location_id uuid,
  -- A feed URL's secret (GET /v1/calendars/{id}/feed.ics?token=): its SHA-256 only; null means no feed.
  feed_token_hash text check (feed_token_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete cascade,
  foreign key (organization_id, location_id) references locations (organization_id, id) on delete restrict,
  check ((kind = 'specialist') = (specialist_id is not null)),
  check (kind = 'specialist' or location_id is not null)
);
create unique index calendars_specialist_key on calendars (organization_id, specialist_id) where specialist_id is not null;
create unique index calendars_feed_key on calendars (feed_token_hash) where feed_token_hash is not null;
create trigger calendars_touch before update on calendars for each row execute function app.touch_updated_at();
select app.secure_table('calendars');
-- Staff read the calendars (the front desk books on them); rooms and devices are managed with
-- locations.manage; a specialist's calendar comes and goes with the specialist.
create policy calendars_read on calendars for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('appointments.view_org')) or (select app.has_permission('appointments.create'))
       or (select app.has_permission('appointments.view_own')) or (select app.has_permission('locations.manage'))
       or (select app.current_patient_id()) is not null)
);
create policy calendars_write on calendars for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')));

-- One calendar per specialist, made with it (and for the specialists that exist).
create or replace function app.specialist_calendar() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
begin
  insert into calendars (organization_id, kind, name, specialist_id)
  values (new.organization_id, 'specialist', left(btrim(new.display_name), 200), new.id)
  on conflict do nothing;
  return null;
end $$;
revoke all on function app.specialist_calendar() from public;
create trigger specialists_calendar after insert on specialists for each row execute function app.specialist_calendar();
insert into calendars (organization_id, kind, name, specialist_id)
select s.organization_id, 'specialist', left(btrim(s.display_name), 200), s.id from specialists s
on conflict do nothing;

-- Availability of rooms and devices: the rules and exceptions of 0060 with calendar_id instead of a specialist.
alter table availability_rules alter column specialist_id drop not null, add column calendar_id uuid;
alter table availability_rules add constraint availability_rules_owner check (num_nonnulls(specialist_id, calendar_id) = 1),
  add constraint availability_rules_calendar_fkey foreign key (organization_id, calendar_id) references calendars (organization_id, id) on delete cascade;
create index availability_rules_calendar_idx on availability_rules (organization_id, calendar_id, weekday) where calendar_id is not null;
alter table availability_exceptions alter column specialist_id drop not null, add column calendar_id uuid;
alter table availability_exceptions add constraint availability_exceptions_owner check (num_nonnulls(specialist_id, calendar_id) = 1),
  add constraint availability_exceptions_calendar_fkey foreign key (organization_id, calendar_id) references calendars (organization_id, id) on delete cascade;
create policy availability_rules_calendar_read on availability_rules for select to app_rls using (
  calendar_id is not null and organization_id = (select app.current_org_id())
  and ((select app.has_permission('appointments.view_org')) or (select app.has_permission('appointments.create'))
       or (select app.has_permission('locations.manage')))
);
create policy availability_rules_calendar_write on availability_rules for all to app_rls
  using (calendar_id is not null and organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')))
  with check (calendar_id is not null and organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')));
create policy availability_exceptions_calendar_read on availability_exceptions for select to app_rls using (
  calendar_id is not null and organization_id = (select app.current_org_id())
  and ((select app.has_permission('appointments.view_org')) or (select app.has_permission('appointments.create'))
       or (select app.has_permission('locations.manage')))
);
create policy availability_exceptions_calendar_write on availability_exceptions for all to app_rls
  using (calendar_id is not null and organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')))
  with check (calendar_id is not null and organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')));

-- A patient books at the organization's locations: it reads them, as the public booking page does.
create policy locations_read_patient on locations for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.current_patient_id()) is not null
);

-- Appointments. Status moves (docs/scheduling.md): scheduled -> confirmed -> checked_in -> in_progress ->
-- done; scheduled|confirmed -> cancelled | rescheduled | no_show; checked_in -> no_show is not a move.
-- A rescheduled appointment stays as history and names the one that replaced it.
create table appointments (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  service_id uuid not null,
  specialist_id uuid,
  location_id uuid,
  patient_id uuid,
  starts_at timestamptz not null,
  ends_at timestamptz not null,
  -- Snapshots of the service at booking: a later change of the service does not move booked time.
  buffer_before_minutes integer not null default 0 check (buffer_before_minutes between 0 and 240),
  buffer_after_minutes integer not null default 0 check (buffer_after_minutes between 0 and 240),
  cancellation_window_minutes integer not null default 0 check (cancellation_window_minutes >= 0),
  mode text not null check (mode in ('in_person', 'video', 'phone')),
  status text not null default 'scheduled'
    check (status in ('scheduled', 'confirmed', 'checked_in', 'in_progress', 'done', 'cancelled', 'no_show', 'rescheduled')),
  source text not null check (source in ('staff', 'patient', 'guest')),
  -- A guest booking (POST /v1/public/bookings) before it is tied to a patient record.
  guest_name text check (length(guest_name) <= 200),
  guest_email text check (length(guest_email) <= 320),
  guest_phone text check (length(guest_phone) <= 40),
  -- What a guest accepted when booking ([{purpose_code, purpose_version}]): the ledger needs a person, and a
  -- guest becomes one when staff tie the booking to a patient record.
  guest_consents jsonb not null default '[]' check (jsonb_typeof(guest_consents) = 'array'),
  notes text check (length(notes) <= 5000),
  patient_note text check (length(patient_note) <= 2000),
  rescheduled_from uuid,
  rescheduled_to uuid,
  cancelled_at timestamptz,
  cancelled_by_principal_id uuid,
  cancellation_reason text check (length(cancellation_reason) <= 500),
  status_changed_at timestamptz not null default now(),
  created_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, service_id) references services (organization_id, id) on delete restrict,
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete restrict,
  foreign key (organization_id, location_id) references locations (organization_id, id) on delete restrict,
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete restrict,
  check (ends_at > starts_at),
  check (patient_id is not null or guest_email is not null)
);
create index appointments_org_start_idx on appointments (organization_id, starts_at, id);
create index appointments_org_patient_idx on appointments (organization_id, patient_id, starts_at) where patient_id is not null;
create index appointments_org_specialist_idx on appointments (organization_id, specialist_id, starts_at) where specialist_id is not null;
create trigger appointments_touch before update on appointments for each row execute function app.touch_updated_at();
select app.secure_table('appointments', 'select, insert, update, delete');

-- Staff with appointments.view_org see the clinic's; a specialist with view_own its own; a patient (or
-- its caregiver) its own.
create or replace function app.own_specialist_id() returns uuid
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select s.id from public.specialists s
  where s.organization_id = app.current_org_id() and s.user_id = app.current_principal_id() and s.deleted_at is null
$$;
revoke all on function app.own_specialist_id() from public;
grant execute on function app.own_specialist_id() to app_rls, app_bypass;
create policy appointments_read on appointments for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('appointments.view_org'))
       or ((select app.has_permission('appointments.view_own')) and specialist_id = (select app.own_specialist_id()))
       or (patient_id is not null and patient_id = (select app.current_patient_id())))
);
create policy appointments_insert on appointments for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('appointments.create'))
       or (patient_id is not null and patient_id = (select app.current_patient_id()) and source = 'patient'))
);
create policy appointments_update on appointments for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('appointments.update_org')) or (select app.has_permission('appointments.cancel_org'))
              or (((select app.has_permission('appointments.update_own')) or (select app.has_permission('appointments.cancel_own')))
                  and specialist_id = (select app.own_specialist_id()))
              or (patient_id is not null and patient_id = (select app.current_patient_id()))))
  with check (organization_id = (select app.current_org_id()));

-- appointments.delete removes a booking that never took place (the service refuses the others).
create policy appointments_delete on appointments for delete to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.has_permission('appointments.delete'))
);

-- Holds (POST /v1/public/holds): a slot set aside for a while for whoever holds its secret.
create table holds (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  service_id uuid not null,
  specialist_id uuid not null,
  location_id uuid,
  starts_at timestamptz not null,
  ends_at timestamptz not null,
  secret_hash text not null check (secret_hash ~ '^[0-9a-f]{64}$'),
  status text not null default 'live' check (status in ('live', 'released', 'converted', 'expired')),
  expires_at timestamptz not null,
  appointment_id uuid,
  created_ip inet,
  created_at timestamptz not null default now(),
  ended_at timestamptz,
  primary key (organization_id, id),
  foreign key (organization_id, service_id) references services (organization_id, id) on delete cascade,
  foreign key (organization_id, specialist_id) references specialists (organization_id, id) on delete cascade,
  check (ends_at > starts_at and expires_at > created_at)
);
create index holds_live_idx on holds (expires_at) where status = 'live';
-- Holds are made and ended only by the public routes (narrow queries on app_bypass) and the sweep; staff
-- read them (what is set aside on a calendar).
select app.secure_table('holds', 'select, insert, update');
create policy holds_read on holds for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('appointments.view_org')) or (select app.has_permission('appointments.create')))
);

-- What occupies a calendar: [start - buffer before, end + buffer after) of an appointment, or a live
-- hold's slot until it expires. An inactive claim (cancelled, moved, expired, released) frees the time.
create table calendar_claims (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  calendar_id uuid not null,
  during tstzrange not null check (not isempty(during)),
  appointment_id uuid,
  hold_id uuid,
  -- A hold's: the claim no longer counts after it, even before the sweep marks it inactive.
  expires_at timestamptz,
  active boolean not null default true,
  created_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, calendar_id) references calendars (organization_id, id) on delete cascade,
  foreign key (organization_id, appointment_id) references appointments (organization_id, id) on delete cascade,
  foreign key (organization_id, hold_id) references holds (organization_id, id) on delete cascade,
  check (num_nonnulls(appointment_id, hold_id) = 1),
  constraint calendar_claims_no_overlap exclude using gist (organization_id with =, calendar_id with =, during with &&) where (active)
);
create index calendar_claims_appointment_idx on calendar_claims (organization_id, appointment_id) where appointment_id is not null;
create index calendar_claims_hold_idx on calendar_claims (organization_id, hold_id) where hold_id is not null;
select app.secure_table('calendar_claims', 'select, insert, update');
create policy calendar_claims_read on calendar_claims for select to app_rls using (organization_id = (select app.current_org_id()));
create policy calendar_claims_write on calendar_claims for all to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('appointments.create')) or (select app.has_permission('appointments.update_org'))
              or (select app.has_permission('appointments.cancel_org')) or (select app.has_permission('appointments.update_own'))
              or (select app.has_permission('appointments.cancel_own')) or (select app.current_patient_id()) is not null))
  with check (organization_id = (select app.current_org_id()));

-- Default grants (spec 2.7): the front desk books and manages the clinic's appointments, a specialist
-- sees, books and manages its own and joins video visits, the administrator everything.
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values
  ('admin', 'appointments.view_org'), ('admin', 'appointments.create'), ('admin', 'appointments.update_org'),
  ('admin', 'appointments.cancel_org'), ('admin', 'appointments.delete'), ('admin', 'appointments.join'),
  ('customer_support', 'appointments.view_org'), ('customer_support', 'appointments.create'),
  ('customer_support', 'appointments.update_org'), ('customer_support', 'appointments.cancel_org'),
  ('specialist', 'appointments.view_own'), ('specialist', 'appointments.create'), ('specialist', 'appointments.update_own'),
  ('specialist', 'appointments.cancel_own'), ('specialist', 'appointments.join')
) as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;
