-- Audit log (spec 6.2): one row per authenticated action, append-only at the database level.
create table audit_logs (
  id uuid primary key default app.uuid_v7(),
  -- null means platform scope (for example a user provisioned without an organization)
  organization_id uuid,
  actor_user_id uuid,
  action text not null check (action ~ '^[a-z][a-z0-9_.]*$'),
  entity_type text not null,
  entity_id uuid,
  -- for example 'break_glass' (with break_glass_id) or 'template_propagate'
  action_context text,
  break_glass_id uuid,
  data jsonb not null default '{}'::jsonb,
  ip inet,
  created_at timestamptz not null default now()
);
create index audit_logs_org_created_idx on audit_logs (organization_id, created_at desc);

-- No foreign keys on purpose: the trail outlives what it describes (users are anonymised, never
-- deleted; see docs/decisions.md), and a cascading set null would rewrite history.
select app.append_only('audit_logs');

create policy audit_logs_read on audit_logs for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.has_permission('audit_log.view_org'))
);
-- Anyone may record its own actions; never someone else's.
create policy audit_logs_insert on audit_logs for insert to app_rls
  with check (actor_user_id is not distinct from (select app.current_principal_id()));
