-- Exercise library (spec 2.12, 3.5), shared by the telemetry issue (exercise sessions) and the composer
-- issue (render cache): whichever builds on it extends it in its own migration. An exercise with no
-- organization belongs to the platform library, readable by every signed-in caller once published;
-- an organization's own exercises are written with exercises.manage_org. The slug names the asset
-- folder of the composer (spec 4.12: `{exercise_slug}/` in the asset store), so it is unique platform-wide.
create table exercises (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid references organizations (id) on delete cascade,
  slug text not null unique check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and length(slug) <= 100),
  name text not null check (length(btrim(name)) between 1 and 200),
  kind text not null check (kind in ('reps_based', 'duration_based')),
  status text not null default 'draft' check (status in ('draft', 'published', 'archived')),
  -- Bumped by direct update when primitives change (spec 9.6): cached renders of older versions miss.
  asset_version int not null default 1 check (asset_version >= 1),
  -- The render shown in the catalog; points into the composer's render cache (its migration adds the FK).
  catalog_render_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger exercises_touch before update on exercises for each row execute function app.touch_updated_at();
create index exercises_org_idx on exercises (organization_id, created_at desc);

select app.secure_table('exercises');

-- Platform exercises: published ones for everyone signed in; an organization's: its staff, and its
-- patients once published.
create policy exercises_read on exercises for select to app_rls using (
  (organization_id is null and status = 'published')
  or (organization_id = (select app.current_org_id())
      and (status = 'published' or (select app.is_staff_at_current_org())))
);
create policy exercises_insert on exercises for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')));
create policy exercises_update on exercises for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')));
create policy exercises_delete on exercises for delete to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('exercises.manage_org')));
