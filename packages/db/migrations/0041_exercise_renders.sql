-- Render cache of the exercise composer (spec 2.12 and 4.12). One row per baked video:
-- keyed by exercise, recipe hash (`_imported` for a pre-baked upload), language and asset version, so
-- a bump of exercises.asset_version (spec 9.6) turns every older row into a miss without touching it.
create table exercise_renders (
  id uuid primary key default app.uuid_v7(),
  exercise_id uuid not null references exercises (id) on delete cascade,
  -- Copied from the exercise (null: platform library), so the table can be distributed by organization.
  organization_id uuid,
  recipe_hash text not null check (recipe_hash = '_imported' or recipe_hash ~ '^[0-9a-f]{64}$'),
  language text not null check (language ~ '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$'),
  asset_version int not null check (asset_version >= 1),
  -- The canonical recipe the hash was taken over; an imported video has none.
  recipe jsonb,
  -- rendering: an instance holds the claim and bakes; processing: uploaded, the provider is
  -- transcoding; ready: playable (seen ready at the provider); failed: the next request retries.
  status text not null check (status in ('rendering', 'processing', 'ready', 'failed')),
  stream_video_id text,
  playback_hls_url text,
  duration_seconds double precision,
  error text,
  -- The claim of the instance rendering the row (several composer instances may run): a random token
  -- and a heartbeat; a claim whose heartbeat stopped can be taken over.
  claim_token uuid,
  heartbeat_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((recipe_hash = '_imported') = (recipe is null)),
  check (status not in ('processing', 'ready') or (stream_video_id is not null and playback_hls_url is not null)),
  unique (exercise_id, recipe_hash, language, asset_version)
);
create trigger exercise_renders_touch before update on exercise_renders for each row execute function app.touch_updated_at();
-- The status sweep reads rows still waiting for the provider.
create index exercise_renders_processing_idx on exercise_renders (updated_at) where status = 'processing';

-- Request roles only read (the composer alone writes); a caller sees the renders of the exercises
-- it can see, because the subquery runs under the exercises policies.
select app.secure_table('exercise_renders', 'select');
create policy exercise_renders_read on exercise_renders for select to app_rls
  using (exists (select 1 from exercises e where e.id = exercise_id));

alter table exercises
  add constraint exercises_catalog_render_fk foreign key (catalog_render_id) references exercise_renders (id) on delete set null;

-- The composer's own role: login-less, switched into with set_config('role', 'app_composer', true)
-- in each of its transactions, like app_rls. It reads exercises and reads and writes renders,
-- nothing else; it serves every organization, so its policies are open on exactly those two tables.
do $$ begin
  create role app_composer nologin;
exception when duplicate_object or unique_violation then null;
end $$;
do $$ begin
  if not (select rolsuper from pg_roles where rolname = current_user) then
    execute format('grant app_composer to %I', current_user);
  end if;
end $$;
grant usage on schema app, public to app_composer;
grant select on exercises to app_composer;
grant select, insert, update on exercise_renders to app_composer;
create policy exercises_composer_read on exercises for select to app_composer using (true);
create policy exercise_renders_composer on exercise_renders for all to app_composer using (true) with check (true);
-- A render that becomes playable is a domain event (exercise.render_ready) for internal consumers.
grant execute on function app.emit_event(uuid, text, jsonb) to app_composer;
