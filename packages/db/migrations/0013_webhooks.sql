-- Webhook subscriptions, deliveries and their attempt log (spec 2.9, 4.9, 6.1).
insert into permissions (code, resource, action, description) values
  ('webhooks.manage', 'webhooks', 'manage', 'Manage webhook subscriptions, read their delivery log, send test deliveries')
on conflict do nothing;
-- The admin template and every existing admin clone (spec 4.9: "all need admin rights").
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, 'webhooks.manage', r.organization_id from roles r where r.code = 'admin' and r.is_system
on conflict do nothing;

create table webhook_subscriptions (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  url text not null check (url ~ '^https://' and length(url) <= 2048),
  description text check (length(description) <= 500),
  -- Event types from the catalog (docs/events.md); '*' means every type, including future ones.
  event_types text[] not null check (cardinality(event_types) between 1 and 100),
  status text not null default 'active' check (status in ('active', 'disabled')),
  disabled_reason text check (disabled_reason in ('manual', 'gone', 'failing')),
  disabled_at timestamptz,
  -- Sealed with platform/secrets.ts; the plaintext is shown once, in the create (or rotate) response.
  secret_sealed text not null,
  -- During a rotation's overlap window deliveries are signed with both secrets.
  previous_secret_sealed text,
  previous_secret_expires_at timestamptz,
  -- Start of the current run of failed attempts (null after a success): long runs disable the subscription.
  failing_since timestamptz,
  created_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger webhook_subscriptions_touch before update on webhook_subscriptions for each row execute function app.touch_updated_at();
create index webhook_subscriptions_org_idx on webhook_subscriptions (organization_id, created_at desc);

-- One delivery per (subscription, event): the dispatcher's insert is idempotent on that pair.
create table webhook_deliveries (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  subscription_id uuid not null references webhook_subscriptions (id) on delete cascade,
  event_id uuid not null,
  event_type text not null,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts int not null default 0 check (attempts >= 0),
  next_attempt_at timestamptz,
  last_status_code int,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (subscription_id, event_id)
);
create trigger webhook_deliveries_touch before update on webhook_deliveries for each row execute function app.touch_updated_at();
create index webhook_deliveries_sub_idx on webhook_deliveries (subscription_id, created_at desc);

-- The delivery log: one row per attempt (spec 6.1 leaves its fields to us; docs/events.md names them).
create table webhook_delivery_attempts (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  subscription_id uuid not null references webhook_subscriptions (id) on delete cascade,
  delivery_id uuid not null references webhook_deliveries (id) on delete cascade,
  attempt int not null check (attempt >= 1),
  -- 'test' attempts come from POST .../test and are never retried.
  trigger text not null default 'event' check (trigger in ('event', 'test', 'resend')),
  status_code int,
  latency_ms int not null,
  error text,
  response_body text check (length(response_body) <= 2048),
  next_attempt_at timestamptz,
  created_at timestamptz not null default now()
);
create unique index webhook_delivery_attempts_key on webhook_delivery_attempts (delivery_id, attempt);
create index webhook_delivery_attempts_sub_idx on webhook_delivery_attempts (subscription_id, created_at desc, id desc);

select app.secure_table('webhook_subscriptions');
select app.secure_table('webhook_deliveries');
select app.secure_table('webhook_delivery_attempts');

-- Requests see and change only their organization's rows, with webhooks.manage. Deliveries and attempts
-- are written by the worker (owner) and by the test/resend routes.
create policy webhook_subscriptions_all on webhook_subscriptions for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('webhooks.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('webhooks.manage')));
create policy webhook_deliveries_all on webhook_deliveries for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('webhooks.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('webhooks.manage')));
create policy webhook_delivery_attempts_all on webhook_delivery_attempts for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('webhooks.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('webhooks.manage')));

-- Manual re-send (POST .../deliveries/{id}/resend) only flags the delivery in the request's transaction;
-- the worker's dispatcher turns the flag into a durable job, so the API needs no job-system connection.
alter table webhook_deliveries add column resend_requested_at timestamptz;
create index webhook_deliveries_resend_idx on webhook_deliveries (resend_requested_at) where resend_requested_at is not null;
