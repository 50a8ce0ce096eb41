-- Versions that tell an instance whether its cached request context is still true (architecture
-- section 6: the full context statement costs about six primary-key reads; checking a version costs
-- one). users.context_version moves whenever something in that user's context changes; the epoch
-- moves on changes that can touch anyone's context (roles, role permissions, consent versions and
-- purposes, organizations). Every instance checks both on every request, so a change is seen by the
-- very next request on every instance.

alter table users add column context_version bigint not null default 0;

create table app_meta.context_epoch (
  singleton boolean primary key default true check (singleton),
  epoch bigint not null default 0
);
insert into app_meta.context_epoch default values;

-- A change to the user's own row, except the columns that are not part of its context.
create or replace function app.bump_own_context_version() returns trigger
language plpgsql as $$
begin
  if (to_jsonb(new) - 'last_activity' - 'updated_at' - 'context_version')
     is distinct from (to_jsonb(old) - 'last_activity' - 'updated_at' - 'context_version') then
    new.context_version := old.context_version + 1;
  end if;
  return new;
end $$;
create trigger users_context_version before update on users
  for each row execute function app.bump_own_context_version();

-- Rows that belong to one user's context: the column naming the user is the trigger's argument.
-- Security definer: it runs for app_rls writes too, which may not update other users' rows.
create or replace function app.bump_user_context_version() returns trigger
language plpgsql security definer set search_path = public as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    update users set context_version = context_version + 1 where id = (to_jsonb(old) ->> tg_argv[0])::uuid;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    update users set context_version = context_version + 1 where id = (to_jsonb(new) ->> tg_argv[0])::uuid;
  end if;
  return null;
end $$;

create trigger memberships_context_version after insert or update or delete on memberships
  for each row execute function app.bump_user_context_version('user_id');
create trigger patients_context_version after insert or update or delete on patients
  for each row execute function app.bump_user_context_version('user_id');
create trigger platform_memberships_context_version after insert or update or delete on platform_memberships
  for each row execute function app.bump_user_context_version('user_id');
create trigger consent_ledger_context_version after insert or update on consent_ledger
  for each row execute function app.bump_user_context_version('patient_profile_id');

create or replace function app.bump_context_epoch() returns trigger
language plpgsql security definer set search_path = public as $$
begin
  update app_meta.context_epoch set epoch = epoch + 1;
  return null;
end $$;

create trigger roles_context_epoch after insert or update or delete on roles
  for each statement execute function app.bump_context_epoch();
create trigger role_permissions_context_epoch after insert or update or delete on role_permissions
  for each statement execute function app.bump_context_epoch();
create trigger organizations_context_epoch after insert or delete on organizations
  for each statement execute function app.bump_context_epoch();
create trigger consent_purposes_context_epoch after insert or update or delete on consent_purposes
  for each statement execute function app.bump_context_epoch();
create trigger consent_purpose_versions_context_epoch after insert on consent_purpose_versions
  for each statement execute function app.bump_context_epoch();

revoke all on function app.bump_user_context_version() from public;
revoke all on function app.bump_context_epoch() from public;
