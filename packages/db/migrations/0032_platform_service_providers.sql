-- Platform service providers (spec 2.11, 3.3, 4.10): one row per whitelisted capability/provider pair
-- for the platform, plus optional per-organization overrides. Credentials are sealed with AES-256-GCM
-- (platform/secrets.ts); the key id is kept beside the ciphertext so a master-key rotation can find
-- what to re-encrypt. Operator data: only superadmins (app_bypass) reach it.
create table platform_provider_kinds (
  capability text primary key check (capability in ('email', 'storage', 'auth')),
  -- one provider per capability (spec 2.11)
  provider text not null,
  unique (capability, provider)
);
insert into platform_provider_kinds (capability, provider) values ('email', 'ses'), ('storage', 's3'), ('auth', 'clerk');

create table platform_service_providers (
  id uuid primary key default app.uuid_v7(),
  capability text not null,
  provider text not null,
  -- null: the platform row; otherwise an override for one organization.
  organization_id uuid references organizations (id) on delete cascade,
  credentials_sealed text,
  credentials_key_id text,
  config jsonb not null default '{}'::jsonb check (jsonb_typeof(config) = 'object'),
  status text not null default 'inactive' check (status in ('active', 'error', 'inactive')),
  last_error text,
  last_error_at timestamptz,
  last_health_check_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (capability, provider) references platform_provider_kinds (capability, provider),
  check ((credentials_sealed is null) = (credentials_key_id is null)),
  -- a row without credentials cannot be in use
  check (status = 'inactive' or credentials_sealed is not null)
);
create unique index platform_service_providers_scope_key
  on platform_service_providers (capability, (coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid)));

select app.secure_table('platform_provider_kinds', 'select');
select app.secure_table('platform_service_providers', 'select, insert, update');
revoke all on platform_provider_kinds, platform_service_providers from app_rls;

-- The platform rows exist from the start, inactive until an operator gives them credentials.
insert into platform_service_providers (capability, provider) select capability, provider from platform_provider_kinds;
