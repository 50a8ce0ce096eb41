-- Organizations, principals, roles and permissions (spec 2.3 to 2.7).

create table organizations (
  id uuid primary key default app.uuid_v7(),
  slug text not null unique check (slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  name text not null check (length(name) between 1 and 200),
  -- Stored as given (spec 2.5): front-ends render en and ro and fall back to en for anything else.
  language_code text not null default 'en' check (length(language_code) between 1 and 35),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger organizations_touch before update on organizations for each row execute function app.touch_updated_at();

-- Principals: humans sign in through the identity provider; agents and service accounts belong to one
-- organization (spec 2.4). A row created by email before its first sign-in has no external_subject yet.
create table users (
  id uuid primary key default app.uuid_v7(),
  external_subject text unique,
  email text not null check (position('@' in email) > 1),
  kind text not null default 'human' check (kind in ('human', 'agent', 'service_account')),
  home_organization_id uuid references organizations (id) on delete cascade,
  confirmed boolean not null default false,
  last_activity timestamptz,
  current_organization_id uuid references organizations (id) on delete set null,
  preferred_language text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint users_non_human_home check ((kind = 'human') = (home_organization_id is null))
);
create unique index users_email_key on users (lower(email));
create trigger users_touch before update on users for each row execute function app.touch_updated_at();

-- Platform roles (spec 2.3, 5.6): only humans; granted by direct database change, never by the API.
create table platform_memberships (
  user_id uuid not null references users (id) on delete cascade,
  role text not null check (role ~ '^[a-z][a-z0-9_]*$'),
  granted_at timestamptz not null default now(),
  primary key (user_id, role)
);

create or replace function app.platform_membership_human_only() returns trigger
language plpgsql as $$
begin
  if (select kind from users where id = new.user_id) <> 'human' then
    raise exception 'platform roles are for human principals only' using errcode = 'check_violation';
  end if;
  return new;
end $$;
create trigger platform_memberships_human before insert or update on platform_memberships
  for each row execute function app.platform_membership_human_only();

-- Permission catalog: created only by migrations (spec 2.7).
create table permissions (
  code text primary key check (code = resource || '.' || action),
  resource text not null,
  action text not null,
  description text not null
);

-- Roles: templates have no organization; each organization gets clones of the templates.
create table roles (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid references organizations (id) on delete cascade,
  code text not null check (code ~ '^[a-z][a-z0-9_]{0,62}$'),
  name text not null,
  is_system boolean not null default false,
  created_at timestamptz not null default now(),
  unique (id, organization_id)
);
create unique index roles_org_code_key on roles (organization_id, code) where organization_id is not null;
create unique index roles_template_code_key on roles (code) where organization_id is null;

create table role_permissions (
  role_id uuid not null references roles (id) on delete cascade,
  permission_code text not null references permissions (code),
  organization_id uuid references organizations (id) on delete cascade,
  primary key (role_id, permission_code)
);
create index role_permissions_org_idx on role_permissions (organization_id);

-- One role per organization: the primary key is (user, organization).
create table memberships (
  user_id uuid not null references users (id) on delete cascade,
  organization_id uuid not null references organizations (id) on delete cascade,
  role_id uuid not null,
  created_at timestamptz not null default now(),
  primary key (user_id, organization_id),
  foreign key (role_id, organization_id) references roles (id, organization_id)
);
create index memberships_org_idx on memberships (organization_id, created_at);

-- Non-human principals hold at most one membership, in their own organization (spec 2.4).
create or replace function app.membership_principal_rule() returns trigger
language plpgsql as $$
declare
  principal_kind text;
  home uuid;
begin
  select kind, home_organization_id into principal_kind, home from users where id = new.user_id;
  if principal_kind <> 'human' and new.organization_id is distinct from home then
    raise exception 'a % may only be a member of its own organization', principal_kind using errcode = 'check_violation';
  end if;
  return new;
end $$;
create trigger memberships_principal_rule before insert or update on memberships
  for each row execute function app.membership_principal_rule();

create table organization_domains (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  domain text not null check (domain ~ '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$'),
  verification_token text not null,
  verified_at timestamptz,
  created_at timestamptz not null default now()
);
-- A domain belongs to one organization at most.
create unique index organization_domains_domain_key on organization_domains (domain);
create index organization_domains_org_idx on organization_domains (organization_id);

-- A patient is a user linked to an organization (spec 1); portal access iff a live row exists.
create table patients (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  profile_shared boolean not null default false,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  unique (organization_id, user_id)
);
create index patients_user_idx on patients (user_id);

select app.secure_table('organizations');
select app.secure_table('users');
select app.secure_table('platform_memberships', 'select');
select app.secure_table('permissions', 'select');
select app.secure_table('roles');
select app.secure_table('role_permissions');
select app.secure_table('memberships');
select app.secure_table('organization_domains');
select app.secure_table('patients');

-- Policies for app_rls (app_bypass has BYPASSRLS). Caller's own rows by ownership; organization rows
-- only for the organization in scope, and then only with the permission that gates them.

create policy organizations_read on organizations for select to app_rls using (
  id = (select app.current_org_id())
  or id in (select m.organization_id from memberships m where m.user_id = (select app.current_principal_id()))
  or id in (select p.organization_id from patients p
            where p.user_id = (select app.current_principal_id()) and p.deleted_at is null)
);
create policy organizations_update on organizations for update to app_rls
  using (id = (select app.current_org_id()) and (select app.has_permission('organizations.update')))
  with check (id = (select app.current_org_id()));

create policy users_read_self on users for select to app_rls using (id = (select app.current_principal_id()));
create policy users_read_directory on users for select to app_rls using (
  ((select app.has_permission('organizations.view_directory')) or (select app.has_permission('organizations.manage_members')))
  and id in (select m.user_id from memberships m where m.organization_id = (select app.current_org_id()))
);
create policy users_update_self on users for update to app_rls
  using (id = (select app.current_principal_id())) with check (id = (select app.current_principal_id()));
-- Members added by email before their first sign-in: a human row without a subject.
create policy users_insert_invited on users for insert to app_rls
  with check ((select app.has_permission('organizations.manage_members')) and kind = 'human' and external_subject is null);
-- A user may change only these columns of its own row; identity columns belong to provisioning.
revoke update on users from app_rls;
grant update (current_organization_id, preferred_language, updated_at) on users to app_rls;

create policy platform_memberships_read_self on platform_memberships for select to app_rls
  using (user_id = (select app.current_principal_id()));

create policy permissions_read on permissions for select to app_rls using (true);

create policy roles_read on roles for select to app_rls using (
  organization_id is null
  or (organization_id = (select app.current_org_id())
      and ((select app.has_permission('organizations.view_directory')) or (select app.has_permission('organizations.manage_members'))))
);
create policy roles_write on roles for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_members')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_members')));

create policy role_permissions_read on role_permissions for select to app_rls using (
  organization_id is null
  or (organization_id = (select app.current_org_id())
      and ((select app.has_permission('organizations.view_directory')) or (select app.has_permission('organizations.manage_members'))))
);
create policy role_permissions_write on role_permissions for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_members')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_members')));

create policy memberships_read on memberships for select to app_rls using (
  user_id = (select app.current_principal_id())
  or (organization_id = (select app.current_org_id())
      and ((select app.has_permission('organizations.view_directory')) or (select app.has_permission('organizations.manage_members'))))
);
create policy memberships_write on memberships for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_members')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_members')));

create policy organization_domains_all on organization_domains for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_domains')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('organizations.manage_domains')));

create policy patients_read_own on patients for select to app_rls using (user_id = (select app.current_principal_id()));
create policy patients_read_org on patients for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('patients.view_org')) or (select app.has_permission('patients.view')))
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
);
