-- Per-organization rate limits set by the operator (spec 8: "per-tenant, per-endpoint limits for
-- authenticated routes, configurable per organization by the operator"). One row per
-- organization that does not use the platform's RATELIMIT_TENANT_LIMIT: its budget per route and window.
-- Operator data, like the provider rows: only superadmins (app_bypass) and the pipeline's own connection
-- read it; a clinic cannot raise its own limit.
create table organization_rate_limits (
  organization_id uuid primary key references organizations (id) on delete cascade,
  route_limit integer not null check (route_limit between 1 and 1000000),
  -- Why the operator set it (a plan, an incident): shown back, never used.
  reason text check (length(reason) <= 500),
  updated_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger organization_rate_limits_touch before update on organization_rate_limits
  for each row execute function app.touch_updated_at();
select app.secure_table('organization_rate_limits', 'select, insert, update, delete');
revoke all on organization_rate_limits from app_rls;
