-- Organization settings (spec 4.5 GET /v1/organizations/{id}/settings; fields "not shown" in the spec).
-- One row per organization, created with it, so a read never has to invent defaults. Only what is not
-- already a field of the organization lives here: the language stays organizations.language_code (one
-- source of truth; the settings read joins it in). default_timezone is the zone of an organization
-- without locations (or before its first one); locations carry their own.
create table organization_settings (
  organization_id uuid primary key references organizations (id) on delete cascade,
  -- IANA time zone name; checked against the runtime's zone data by the service that writes it.
  default_timezone text not null default 'UTC' check (length(default_timezone) between 1 and 64),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger organization_settings_touch before update on organization_settings
  for each row execute function app.touch_updated_at();

-- Rows are inserted only by the trigger below and removed only by the cascade: the application roles
-- may read and update, nothing else.
select app.secure_table('organization_settings', 'select, update');

-- Spec 2.7: organizations.view_directory gates the row-level read of organization settings.
create policy organization_settings_read on organization_settings for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.view_directory'))
);
-- organizations.update_settings is a Planned code (no default grant yet): superadmins, or a role an
-- administrator has been given it, may write.
create policy organization_settings_update on organization_settings for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.update_settings')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.update_settings')));

-- Every new organization gets its row in the same statement as the organization, so POST
-- /v1/organizations stays atomic. Runs as the owner: the inserting request (app_bypass today) needs
-- no insert right on the settings table.
create or replace function app.create_organization_settings() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
begin
  insert into organization_settings (organization_id) values (new.id) on conflict do nothing;
  return null;
end $$;
create trigger organizations_settings_row after insert on organizations
  for each row execute function app.create_organization_settings();

-- Organizations created before this migration.
insert into organization_settings (organization_id) select id from organizations on conflict do nothing;
