-- Patient impersonation (POST /v1/patients/{id}/impersonate, permission patients.impersonate): a staff
-- member, giving a reason, gets a short-lived token that acts as the patient in the portal. The token is
-- opaque (`imp_` and 32 random bytes); only its SHA-256 is kept, so the table cannot be used to act.
-- A session ends at its expiry, when ended early, or when its staff member no longer holds the code.
-- The target of foreign keys that carry the organization (architecture section 7).
create unique index if not exists patients_org_id_key on patients (organization_id, id);

create table impersonation_sessions (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  patient_id uuid not null,
  patient_user_id uuid not null,
  staff_user_id uuid not null references users (id) on delete cascade,
  reason text not null check (length(btrim(reason)) between 3 and 500),
  token_hash text not null unique check (token_hash ~ '^[0-9a-f]{64}$'),
  started_at timestamptz not null default now(),
  expires_at timestamptz not null,
  ended_at timestamptz,
  ended_by_user_id uuid,
  primary key (organization_id, id),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete cascade,
  check (expires_at > started_at)
);
create index impersonation_sessions_staff_idx on impersonation_sessions (organization_id, staff_user_id, started_at desc);
select app.secure_table('impersonation_sessions', 'select, insert, update');
-- Staff holding the code start sessions in their organization, for themselves; they and the clinic's
-- auditors read them; a session is ended (only ended_at, ended_by_user_id) by its staff member.
create policy impersonation_sessions_insert on impersonation_sessions for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('patients.impersonate'))
  and staff_user_id = (select app.current_principal_id())
);
create policy impersonation_sessions_read on impersonation_sessions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and (staff_user_id = (select app.current_principal_id()) or (select app.has_permission('audit_log.view_org')))
);
create policy impersonation_sessions_end on impersonation_sessions for update to app_rls
  using (organization_id = (select app.current_org_id()) and staff_user_id = (select app.current_principal_id()))
  with check (organization_id = (select app.current_org_id()) and staff_user_id = (select app.current_principal_id()));
revoke update on impersonation_sessions from app_rls, app_bypass;
grant update (ended_at, ended_by_user_id) on impersonation_sessions to app_rls, app_bypass;

-- The access log names what an impersonated request did: its method and route pattern.
alter table patient_access_log
  add column method text check (method ~ '^[A-Z]{3,7}$'),
  add column route text check (length(route) <= 200);

-- Default grants: the administrator and the front desk (who help patients through the portal).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, 'patients.impersonate', r.organization_id
from roles r where r.is_system and r.code in ('admin', 'customer_support')
on conflict do nothing;
update permissions set description = 'Act as a patient in the portal for a while, with a reason (POST /v1/patients/{id}/impersonate)'
where code = 'patients.impersonate';
