-- Transactional outbox: a domain event is a row written by the same transaction as the
-- change that causes it, so it exists if and only if the change committed. The worker reads
-- undispatched rows, hands them to their consumers (webhook deliveries, internal handlers) through
-- the durable job system, and stamps dispatched_at. Events are history: nothing deletes them but the
-- retention sweep, which runs as the owner.
create table domain_events (
  id uuid primary key default app.uuid_v7(),
  -- null: a platform event (no organization to deliver to, internal consumers only).
  organization_id uuid,
  type text not null check (type ~ '^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$'),
  data jsonb not null check (jsonb_typeof(data) = 'object'),
  -- Who caused it (null for the system: sweeps, the worker itself).
  principal_id uuid,
  occurred_at timestamptz not null default now(),
  dispatched_at timestamptz
);
-- The dispatcher's queue: undispatched events in commit-ish order (ids are UUIDv7, time ordered).
create index domain_events_pending_idx on domain_events (id) where dispatched_at is null;
create index domain_events_org_idx on domain_events (organization_id, occurred_at desc);

-- Request transactions insert only through app.emit_event (below); they never read or change events.
select app.secure_table('domain_events', 'select');
revoke select on domain_events from app_rls;
create policy domain_events_bypass on domain_events for select to app_bypass using (true);

-- Emits an event from any transaction: request roles (app_rls, app_bypass) and the companion
-- services' roles call it; SECURITY DEFINER because they hold no privilege on the table. The
-- organization is the caller's to name: callers are the application's own code, and the row says
-- which principal emitted it.
create or replace function app.emit_event(p_organization_id uuid, p_type text, p_data jsonb)
returns uuid language sql security definer set search_path = pg_catalog, public as $$
  insert into public.domain_events (organization_id, type, data, principal_id)
  values (p_organization_id, p_type, coalesce(p_data, '{}'::jsonb), app.current_principal_id())
  returning id
$$;
revoke all on function app.emit_event(uuid, text, jsonb) from public;
grant execute on function app.emit_event(uuid, text, jsonb) to app_rls, app_bypass;
