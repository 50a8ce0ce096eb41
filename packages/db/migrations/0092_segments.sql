-- Segments (spec 4.5, 2.7 segments.*; docs/automations.md): a named JSON criteria tree over the
-- organization's patients, compiled to parameterised SQL that runs under the caller's row policies. An
-- evaluation materialises the members as one complete set: its rows are written under a new evaluation id
-- and the segment switches to it when the last chunk is in, so readers never see half an evaluation.
create table segments (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 2000),
  criteria jsonb not null check (jsonb_typeof(criteria) = 'object'),
  -- The evaluation whose members GET /members lists, when it finished, and how many it found.
  current_evaluation_id uuid,
  evaluated_at timestamptz,
  member_count integer,
  created_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  unique (organization_id, name)
);
create index segments_org_created_idx on segments (organization_id, created_at desc, id desc);
create trigger segments_touch before update on segments for each row execute function app.touch_updated_at();
select app.secure_table('segments');
-- The definitions (criteria, names) are the clinic's: staff with segments.view_org or manage. Whoever may see
-- only its own membership reads segment_members, not this.
create policy segments_read on segments for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('segments.view_org')) or (select app.has_permission('segments.manage')))
);
create policy segments_write on segments for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('segments.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('segments.manage')));

-- One evaluation of a segment: a background job for large clinics, with its progress.
create table segment_evaluations (
  organization_id uuid not null,
  id uuid not null default app.uuid_v7(),
  segment_id uuid not null,
  status text not null default 'running' check (status in ('running', 'done', 'failed')),
  -- Patients of the organization when it started, and how many of them it has looked at.
  total integer not null default 0,
  processed integer not null default 0,
  member_count integer not null default 0,
  error text check (length(error) <= 1000),
  -- Whose row policies the evaluation runs under (the caller of POST /evaluate), as the request had them.
  requested_by_principal_id uuid not null,
  requested_permissions text[] not null default '{}',
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  primary key (organization_id, id),
  foreign key (organization_id, segment_id) references segments (organization_id, id) on delete cascade
);
create index segment_evaluations_segment_idx on segment_evaluations (organization_id, segment_id, started_at desc);
select app.secure_table('segment_evaluations', 'select, insert, update, delete');
create policy segment_evaluations_read on segment_evaluations for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('segments.view_org')) or (select app.has_permission('segments.manage')))
);
create policy segment_evaluations_write on segment_evaluations for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('segments.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('segments.manage')));

create table segment_members (
  organization_id uuid not null,
  segment_id uuid not null,
  evaluation_id uuid not null,
  patient_id uuid not null,
  primary key (organization_id, segment_id, evaluation_id, patient_id),
  foreign key (organization_id, evaluation_id) references segment_evaluations (organization_id, id) on delete cascade,
  foreign key (organization_id, segment_id) references segments (organization_id, id) on delete cascade,
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade
);
create index segment_members_patient_idx on segment_members (organization_id, patient_id);
select app.secure_table('segment_members', 'select, insert, delete');
-- Staff with segments.view_org read every member; anyone else only their own membership: a patient (or its
-- caregiver) by row ownership, a staff member who is also a patient here with segments.view_own_membership.
create policy segment_members_read on segment_members for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('segments.view_org')) or (select app.has_permission('segments.manage'))
       or patient_id = (select app.current_patient_id()))
);
create policy segment_members_write on segment_members for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('segments.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('segments.manage')));

-- The evaluation whose members a caller lists: a patient (or a staff member with only
-- segments.view_own_membership) cannot read the segment row, so this answers for it, at the organization in
-- scope only, and says nothing but an id.
create or replace function app.segment_current_evaluation(org uuid, seg uuid) returns uuid
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select s.current_evaluation_id from public.segments s where s.organization_id = org and s.id = seg and s.organization_id = app.current_org_id()
$$;
revoke all on function app.segment_current_evaluation(uuid, uuid) from public;
grant execute on function app.segment_current_evaluation(uuid, uuid) to app_rls, app_bypass;
