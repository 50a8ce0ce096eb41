-- What an appointment's calendar entry (.ics feeds, downloads and the messages' attachments) says in its title: the
-- clinic's name only (the default), with the service, or the service and the specialist. Calendar providers and
-- everyone a calendar is shared with read the title; a service's name can be health data.
alter table organization_settings
  add column calendar_title text not null default 'clinic' check (calendar_title in ('clinic', 'clinic_and_service', 'full'));

-- The clinic's choice and name for a title, whoever builds the entry (a patient's download, a feed's token, the
-- worker): SECURITY DEFINER, since the settings row is readable by directory holders only.
create or replace function app.calendar_heading(org uuid) returns text[]
language sql stable security definer set search_path = pg_catalog, public as $$
  select array[coalesce(s.calendar_title, 'clinic'), o.name]
  from organizations o left join organization_settings s on s.organization_id = o.id
  where o.id = org
$$;
revoke all on function app.calendar_heading(uuid) from public;
grant execute on function app.calendar_heading(uuid) to app_rls, app_bypass;

-- The title is part of what PATCH /v1/organizations/{id} changes (organizations.update); the settings row's own update
-- policy asks for organizations.update_settings (no default grant), so the change goes through this function, which
-- asks what the route asks. Returns the value it replaced, null when the caller may not change it.
create or replace function app.set_calendar_title(org uuid, title text) returns text
language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  previous text;
begin
  -- current_user is this function's owner here; the request's role is the `role` setting (SET ROLE).
  if not (current_setting('role') = 'app_bypass'
          or (org = app.current_org_id() and app.has_permission('organizations.update'))) then
    return null;
  end if;
  select calendar_title into previous from organization_settings where organization_id = org for update;
  update organization_settings set calendar_title = title where organization_id = org;
  return previous;
end $$;
revoke all on function app.set_calendar_title(uuid, text) from public;
grant execute on function app.set_calendar_title(uuid, text) to app_rls, app_bypass;
