-- Database roles of architecture section 2. Roles are cluster-wide: several databases (tests, tenants of
-- a shared server) run this file concurrently, so creation tolerates a role that already exists.
do $$ begin
  create role app_rls nologin;
exception when duplicate_object or unique_violation then null;
end $$;
do $$ begin
  create role app_bypass nologin bypassrls;
exception when duplicate_object or unique_violation then null;
end $$;

-- A non-superuser owner must be able to switch into both roles with set_config('role', ...).
do $$ begin
  if not (select rolsuper from pg_roles where rolname = current_user) then
    execute format('grant app_rls, app_bypass to %I', current_user);
  end if;
end $$;

create schema if not exists app;
grant usage on schema app to app_rls, app_bypass;
grant usage on schema public to app_rls, app_bypass;

-- UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, random rest. Works on PostgreSQL 15 and PGlite,
-- which have no uuidv7() of their own; gen_random_uuid() supplies the random bits and the variant.
create or replace function app.uuid_v7() returns uuid
language sql volatile parallel safe as $$
  select encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
              from 1 for 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

-- Request settings, read by policies. Wrapped as (select app.x()) in policies so that they are
-- evaluated once per statement.
create or replace function app.current_principal_id() returns uuid
language sql stable as $$ select nullif(current_setting('app.principal_id', true), '')::uuid $$;

create or replace function app.current_org_id() returns uuid
language sql stable as $$
  select coalesce(nullif(current_setting('app.org_id', true), ''), '00000000-0000-0000-0000-000000000000')::uuid
$$;

create or replace function app.has_permission(code text) returns boolean
language sql stable as $$
  select code = any(string_to_array(coalesce(current_setting('app.permissions', true), ''), ','))
$$;

grant execute on all functions in schema app to app_rls, app_bypass;

-- Every table of the schema goes through this: row-level security enabled and forced (the owner is
-- subject to it too), and the application roles get only the privileges named.
create or replace function app.secure_table(t regclass, privileges text default 'select, insert, update, delete')
returns void language plpgsql as $$
begin
  execute format('alter table %s enable row level security', t);
  execute format('alter table %s force row level security', t);
  execute format('revoke all on %s from public', t);
  execute format('grant %s on %s to app_rls, app_bypass', privileges, t);
end $$;

create or replace function app.forbid_change() returns trigger
language plpgsql as $$
begin
  raise exception '% is append-only: % is not allowed', tg_table_name, lower(tg_op)
    using errcode = 'insufficient_privilege';
end $$;

-- Append-only at the database level: the application roles may only read and insert, and a trigger
-- stops updates and deletes from any role, owner included.
create or replace function app.append_only(t regclass) returns void language plpgsql as $$
begin
  perform app.secure_table(t, 'select, insert');
  execute format('create trigger %I before update or delete on %s for each row execute function app.forbid_change()',
                 replace(t::text, '.', '_') || '_append_only', t);
  execute format('create trigger %I before truncate on %s for each statement execute function app.forbid_change()',
                 replace(t::text, '.', '_') || '_no_truncate', t);
end $$;

create or replace function app.touch_updated_at() returns trigger
language plpgsql as $$ begin new.updated_at = now(); return new; end $$;
