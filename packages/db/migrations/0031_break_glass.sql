-- Break-glass sessions (spec 3.4, 4.7): a superadmin's time-boxed elevation to one organization and
-- one scope. History, so append-only; a session ends by expiring. No foreign keys, as for audit_logs:
-- the record outlives the organization and the user it names.
create table break_glass_sessions (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null,
  superadmin_user_id uuid not null,
  scope text not null check (scope in ('patient_list', 'patient_detail', 'audit_full', 'cross_org_lookup', 'org_management')),
  reason_category text not null
    check (reason_category in ('support_ticket', 'security_incident', 'dsar_routing', 'fraud_investigation', 'platform_engineering')),
  reason_text text not null check (length(reason_text) between 1 and 2000),
  reason_ref text check (length(reason_ref) between 1 and 200),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  -- spec 8: at most 4 hours.
  check (expires_at > created_at and expires_at <= created_at + interval '4 hours')
);
-- The gate's lookup: this superadmin's latest session for the organization and scope.
create index break_glass_sessions_lookup_idx on break_glass_sessions (superadmin_user_id, organization_id, scope, expires_at desc);
select app.append_only('break_glass_sessions');
-- Superadmins (app_bypass) read and write past RLS. A clinic's auditors see the sessions opened on
-- their organization; nobody else on app_rls can create one (no insert policy).
create policy break_glass_sessions_read on break_glass_sessions for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.has_permission('audit_log.view_org'))
);
