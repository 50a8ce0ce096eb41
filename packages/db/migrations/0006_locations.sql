-- Locations of an organization (spec 4.5, Planned): readable by any staff member of the organization,
-- written only with locations.manage (spec 2.7). DELETE removes the row: a soft delete would need
-- managers without data.view_deleted to see deleted rows (an UPDATE's new row must pass the SELECT
-- policies), and nothing references locations yet. The audit entry keeps the deleted row; tables that
-- will point at locations (appointments, calendars) decide then between `on delete restrict` and an
-- archive flag.

-- Staff = a membership row at the organization in scope (spec 5.7); not a permission, so the request
-- settings do not carry it. Runs as the caller: memberships_read lets everyone read their own rows.
-- Wrapped as (select app.is_staff_at_current_org()) in policies, it runs once per statement.
create or replace function app.is_staff_at_current_org() returns boolean
language sql stable as $$
  select exists (
    select 1 from public.memberships m
    where m.organization_id = app.current_org_id() and m.user_id = app.current_principal_id()
  )
$$;
grant execute on function app.is_staff_at_current_org() to app_rls, app_bypass;

create table locations (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  address_line1 text check (length(address_line1) <= 200),
  address_line2 text check (length(address_line2) <= 200),
  city text check (length(city) <= 100),
  region text check (length(region) <= 100),
  postal_code text check (length(postal_code) <= 20),
  -- ISO 3166-1 alpha-2, upper case; whether the code is assigned is checked by the service.
  country text check (country ~ '^[A-Z]{2}$'),
  -- IANA time zone name (for example Europe/Bucharest), checked by the service against the runtime's zone data.
  timezone text not null check (length(timezone) between 1 and 64),
  phone text check (length(phone) <= 40),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger locations_touch before update on locations for each row execute function app.touch_updated_at();
create index locations_org_created_idx on locations (organization_id, created_at desc, id desc);
-- Two locations of one organization never share a name (case-insensitive): pickers show names only.
create unique index locations_org_name_key on locations (organization_id, lower(name));

select app.secure_table('locations');

create policy locations_read on locations for select to app_rls using (
  organization_id = (select app.current_org_id())
  and (select app.is_staff_at_current_org())
);
create policy locations_insert on locations for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')));
create policy locations_update on locations for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')));
create policy locations_delete on locations for delete to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('locations.manage')));
