-- Treatment plans (spec 3.5, 9.6, 2.7): the versioned lifecycle of custom fields and form
-- templates (draft -> publish -> versions -> rollback), a plan being phases of days of exercise items.
-- A library plan is the clinic's template; a patient plan is one patient's (cloned from a library plan or
-- written for them). Only drafts change; publishing archives the draft as the next version, which
-- enrollments pin (migration 0082). Where the organization requires it, a second clinician approves a
-- draft before it can be published: the database refuses the version otherwise.

-- Telerehab per organization (docs/telerehab.md, the regulatory boundary): whether the clinic serves the
-- clinical decision-support outputs (form scores, progress, analytics), having accepted the intended-use
-- statement, and whether plans need a second clinician's approval. No row: disabled, no approval.
create table telerehab_settings (
  organization_id uuid primary key references organizations (id) on delete cascade,
  enabled boolean not null default false,
  require_plan_approval boolean not null default false,
  intended_use_version text,
  intended_use_accepted_at timestamptz,
  intended_use_accepted_by uuid,
  updated_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The outputs are served only after someone accepted the statement they are served under.
  check (not enabled or intended_use_accepted_at is not null),
  check ((intended_use_accepted_at is null) = (intended_use_version is null))
);
create trigger telerehab_settings_touch before update on telerehab_settings for each row execute function app.touch_updated_at();
select app.secure_table('telerehab_settings', 'select, insert, update');
-- Everyone with access to the organization reads them (whether scores are served decides what a patient's
-- portal shows); organizations.update changes them.
create policy telerehab_settings_read on telerehab_settings for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.is_staff_at_current_org()) or (select app.current_patient_id()) is not null)
);
create policy telerehab_settings_write on telerehab_settings for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.update')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.update')));

create table treatment_plans (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  kind text not null check (kind in ('library', 'patient')),
  patient_id uuid,
  -- The content, as a version snapshots it (name, description, phases, required_consents, self_report).
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  description text check (length(description) <= 5000),
  phases jsonb not null check (jsonb_typeof(phases) = 'array' and jsonb_array_length(phases) between 1 and 52),
  required_consents text[] not null default '{}' check (cardinality(required_consents) <= 10),
  self_report jsonb not null default '{"pain": false, "effort": false}' check (jsonb_typeof(self_report) = 'object'),
  -- The versioned lifecycle (platform/versioned): version is the last published number (0: never published).
  version integer not null default 0 check (version >= 0),
  published boolean not null default false,
  published_at timestamptz,
  -- Who last changed the content (set by the trigger below), and the second clinician who approved it.
  draft_author_principal_id uuid,
  approved_by_principal_id uuid,
  approved_at timestamptz,
  -- Where the content came from: duplicate (same organization), clone (library -> patient), promote (patient -> library).
  source_plan_id uuid,
  source_version integer,
  source_kind text check (source_kind in ('duplicate', 'clone', 'promote')),
  created_by_principal_id uuid not null,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade,
  foreign key (organization_id, source_plan_id) references treatment_plans (organization_id, id) on delete set null (source_plan_id),
  check ((kind = 'patient') = (patient_id is not null)),
  check (not published or (version >= 1 and published_at is not null)),
  check ((approved_by_principal_id is null) = (approved_at is null)),
  -- The second clinician is another person than the one whose draft it is.
  constraint treatment_plans_second_clinician check (approved_by_principal_id is null or approved_by_principal_id <> draft_author_principal_id),
  check ((source_plan_id is null and source_version is null) or source_kind is not null)
);
create index treatment_plans_org_idx on treatment_plans (organization_id, created_at desc) where deleted_at is null;
create index treatment_plans_patient_idx on treatment_plans (organization_id, patient_id) where patient_id is not null;

-- A change of content makes the changer the draft's author and drops any approval: an approval is of the
-- exact content approved, whatever path (PATCH, rollback) changed it, and whatever races it.
create or replace function app.treatment_plan_content_change() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    new.draft_author_principal_id := coalesce(new.draft_author_principal_id, app.current_principal_id());
    new.approved_by_principal_id := null;
    new.approved_at := null;
  elsif (new.name, new.description, new.phases, new.required_consents, new.self_report)
        is distinct from (old.name, old.description, old.phases, old.required_consents, old.self_report) then
    new.draft_author_principal_id := app.current_principal_id();
    new.approved_by_principal_id := null;
    new.approved_at := null;
  end if;
  return new;
end $$;
create trigger treatment_plans_content before insert or update on treatment_plans
  for each row execute function app.treatment_plan_content_change();
create trigger treatment_plans_touch before update on treatment_plans for each row execute function app.touch_updated_at();

select app.secure_table('treatment_plans', 'select, insert, update');
-- Staff holding a treatment_plans code read the clinic's plans; writes need the code of the operation
-- (checked again by the service): manage (create, edit, publish, duplicate, clone), approve, delete
-- (soft), promote_to_org (a library plan from a patient's).
create policy treatment_plans_read on treatment_plans for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.view_org')) or (select app.has_permission('treatment_plans.manage'))
       or (select app.has_permission('treatment_plans.approve')) or (select app.has_permission('treatment_plans.assign'))
       or (select app.has_permission('treatment_plans.promote_to_org')) or (select app.has_permission('treatment_plans.delete')))
);
create policy treatment_plans_insert on treatment_plans for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.manage')) or (kind = 'library' and (select app.has_permission('treatment_plans.promote_to_org'))))
);
create policy treatment_plans_update on treatment_plans for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('treatment_plans.manage')) or (select app.has_permission('treatment_plans.approve'))
              or (select app.has_permission('treatment_plans.delete'))))
  with check (organization_id = (select app.current_org_id()));

-- The published versions: append-only snapshots (the content at publishing, with who approved it). Only an
-- erasure (migration 0084) removes a patient plan's versions, with its plan.
create table treatment_plan_versions (
  organization_id uuid not null,
  treatment_plan_id uuid not null,
  version integer not null check (version >= 1),
  snapshot jsonb not null check (jsonb_typeof(snapshot) = 'object'),
  published_at timestamptz not null,
  published_by_principal_id uuid not null,
  approved_by_principal_id uuid,
  created_at timestamptz not null default now(),
  primary key (organization_id, treatment_plan_id, version),
  foreign key (organization_id, treatment_plan_id) references treatment_plans (organization_id, id) on delete cascade
);

-- A version is the plan as it is at publishing: the approval comes from the plan row, and an organization
-- that requires a second clinician gets no version of an unapproved draft (raised as approval_required).
create or replace function app.treatment_plan_version_approval() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  approver uuid;
begin
  select p.approved_by_principal_id into approver from treatment_plans p
  where p.organization_id = new.organization_id and p.id = new.treatment_plan_id;
  new.approved_by_principal_id := approver;
  if approver is null and exists (select 1 from telerehab_settings s
                                  where s.organization_id = new.organization_id and s.require_plan_approval) then
    raise exception 'approval_required: a second clinician must approve this draft before it is published'
      using errcode = 'check_violation', constraint = 'treatment_plan_versions_approval_required';
  end if;
  return new;
end $$;
revoke all on function app.treatment_plan_version_approval() from public;
create trigger treatment_plan_versions_approval before insert on treatment_plan_versions
  for each row execute function app.treatment_plan_version_approval();

-- Append-only, apart from the erasure of a patient's plan (app.erasing set by the erasure function only;
-- the application roles have no delete right at all).
create or replace function app.treatment_plan_versions_guard() returns trigger
language plpgsql as $$
begin
  if tg_op = 'DELETE' and current_setting('app.erasing', true) = 'on' then
    return old;
  end if;
  raise exception 'treatment_plan_versions is append-only: % is not allowed', lower(tg_op) using errcode = 'insufficient_privilege';
end $$;
create trigger treatment_plan_versions_append_only before update or delete on treatment_plan_versions
  for each row execute function app.treatment_plan_versions_guard();
create trigger treatment_plan_versions_no_truncate before truncate on treatment_plan_versions
  for each statement execute function app.forbid_change();
select app.secure_table('treatment_plan_versions', 'select, insert');
create policy treatment_plan_versions_read on treatment_plan_versions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from treatment_plans p where p.organization_id = treatment_plan_versions.organization_id
                and p.id = treatment_plan_versions.treatment_plan_id)
);
create policy treatment_plan_versions_insert on treatment_plan_versions for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('treatment_plans.manage'))
  and published_by_principal_id = (select app.current_principal_id())
);

-- Which exercises a plan names, in its content or any of its versions (kept by the trigger below): the
-- foreign key is what refuses deleting an exercise a plan uses (409 exercise_in_use), races included.
create table treatment_plan_exercises (
  organization_id uuid not null,
  treatment_plan_id uuid not null,
  exercise_id uuid not null references exercises (id) on delete restrict,
  primary key (organization_id, treatment_plan_id, exercise_id),
  foreign key (organization_id, treatment_plan_id) references treatment_plans (organization_id, id) on delete cascade
);
create index treatment_plan_exercises_exercise_idx on treatment_plan_exercises (exercise_id);
select app.secure_table('treatment_plan_exercises', 'select');
create policy treatment_plan_exercises_read on treatment_plan_exercises for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from treatment_plans p where p.organization_id = treatment_plan_exercises.organization_id
                and p.id = treatment_plan_exercises.treatment_plan_id)
);
create or replace function app.treatment_plan_exercises_sync() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
begin
  insert into treatment_plan_exercises (organization_id, treatment_plan_id, exercise_id)
  select distinct new.organization_id, new.id, (x #>> '{}')::uuid
  from jsonb_path_query(new.phases, '$[*].days[*].items[*].exercise_id') x
  on conflict do nothing;
  return null;
end $$;
revoke all on function app.treatment_plan_exercises_sync() from public;
create trigger treatment_plans_exercises after insert or update of phases on treatment_plans
  for each row execute function app.treatment_plan_exercises_sync();

-- Consent purposes that plans require (spec 2.8 treatment_specific_*): the platform seeds one, and an
-- organization may create its own (migration 0082 opens that to consents.manage): a purpose with an
-- organization belongs to it alone, rests on consent and is never a precondition of the service.
alter table consent_purposes add column organization_id uuid references organizations (id);
alter table consent_purposes add constraint consent_purposes_org_owned check (
  organization_id is null
  or (code ~ '^treatment_specific_[a-z0-9_]+$' and scope = 'org' and legal_basis = 'consent' and not required)
);
insert into consent_purposes (code, scope, name, description, legal_basis, required) values
  ('treatment_specific_home_exercise', 'org', 'Home exercise programme',
   'Video-guided home exercises of a treatment plan, with repetitions, movement quality and range of motion measured from the camera.',
   'consent', false)
on conflict (code) do nothing;

-- Default grants (spec 2.7): an administrator holds every staff code of plans; a clinician writes, assigns
-- and approves plans (the second clinician); the front desk none. view_own and execute_own_session stay
-- ungranted: patients act on their own plans by ownership.
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values
  ('admin', 'treatment_plans.view_org'), ('admin', 'treatment_plans.manage'), ('admin', 'treatment_plans.delete'),
  ('admin', 'treatment_plans.assign'), ('admin', 'treatment_plans.approve'), ('admin', 'treatment_plans.promote_to_org'),
  ('specialist', 'treatment_plans.view_org'), ('specialist', 'treatment_plans.manage'), ('specialist', 'treatment_plans.assign'),
  ('specialist', 'treatment_plans.approve')
) as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;
