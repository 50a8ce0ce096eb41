-- Messages (docs/automations.md): templates per language and the log of every email and SMS the
-- platform sends, with what became of it (sent, refused recipient, bounce). Sends are made by the worker
-- (automation runs); the API reads. The permission codes of automations and messages come here too.

insert into permissions (code, resource, action, description) values
  ('automations.view_org', 'automations', 'view_org', 'Read automation rules, message templates and the execution trail'),
  ('automations.manage', 'automations', 'manage', 'Create, change, pause and delete automation rules and message templates; quiet hours'),
  ('messages.view_org', 'messages', 'view_org', 'Read the log of messages sent to the organization''s patients and guests');

-- Default grants: the administrator everything (nobody grants what they lack, platform/grants.ts), the front
-- desk reads the trail and the messages it answers questions about, clinicians see which segments they are in.
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values
  ('admin', 'automations.view_org'), ('admin', 'automations.manage'), ('admin', 'messages.view_org'),
  ('admin', 'segments.view_org'), ('admin', 'segments.manage'), ('admin', 'segments.view_own_membership'),
  ('customer_support', 'automations.view_org'), ('customer_support', 'messages.view_org'),
  ('customer_support', 'segments.view_org'), ('customer_support', 'segments.view_own_membership'),
  ('specialist', 'segments.view_own_membership')
) as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;

-- SMS behind the provider mechanism of spec 2.11: one more whitelisted capability/provider pair (an HTTP API
-- in the shape of Twilio's Messages resource), with its platform row, inactive until given credentials.
alter table platform_provider_kinds drop constraint platform_provider_kinds_capability_check;
alter table platform_provider_kinds add constraint platform_provider_kinds_capability_check
  check (capability in ('email', 'storage', 'auth', 'sms'));
insert into platform_provider_kinds (capability, provider) values ('sms', 'twilio');
insert into platform_service_providers (capability, provider) values ('sms', 'twilio');

-- A template: one channel, one purpose (marketing sends need the patient's marketing consent at send time),
-- and its text per language: { "<bcp47>": { "subject": ..., "text": ..., "html": ... } } (subject and html
-- for email only). Placeholders are {{name}} from a fixed list (docs/automations.md), filled with escaping.
create table message_templates (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200 and name = btrim(name)),
  channel text not null check (channel in ('email', 'sms')),
  purpose text not null default 'transactional' check (purpose in ('transactional', 'marketing')),
  content jsonb not null check (jsonb_typeof(content) = 'object' and content <> '{}'::jsonb),
  attach_ics boolean not null default true,
  created_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  unique (organization_id, name)
);
create index message_templates_org_created_idx on message_templates (organization_id, created_at desc, id desc);
create trigger message_templates_touch before update on message_templates for each row execute function app.touch_updated_at();
select app.secure_table('message_templates');
create policy message_templates_read on message_templates for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('automations.view_org')) or (select app.has_permission('automations.manage')))
);
create policy message_templates_write on message_templates for all to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')));

-- The message log. A row is written before the send (status sending, with the attempt), so a worker that
-- dies mid-send leaves a trace its successor sees; the outcome follows in the transaction that records the
-- automation's execution. At most one message per (run, action): the idempotency key of a send.
create table messages (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  channel text not null check (channel in ('email', 'sms')),
  purpose text not null check (purpose in ('transactional', 'marketing')),
  template_id uuid,
  patient_id uuid,
  appointment_id uuid,
  run_id uuid,
  action_index integer check (action_index >= 0),
  -- Who it went to and what it said: cleared by an erasure (the row stays, so counts and the trail hold).
  to_address text check (length(to_address) <= 320),
  language text check (length(language) <= 35),
  subject text check (length(subject) <= 998),
  body_text text check (length(body_text) <= 20000),
  status text not null default 'sending'
    check (status in ('sending', 'retrying', 'sent', 'refused', 'bounced', 'failed', 'erased')),
  -- outbox (the embedded default's folder), ses (SMTP of the email provider row), twilio (the SMS row)
  provider text check (length(provider) <= 40),
  provider_message_id text check (length(provider_message_id) <= 300),
  error text check (length(error) <= 1000),
  attempts integer not null default 0 check (attempts >= 0),
  -- While a worker holds the send: another one seeing the row before this leaves it alone.
  claimed_until timestamptz,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  bounced_at timestamptz,
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  foreign key (organization_id, template_id) references message_templates (organization_id, id) on delete set null (template_id),
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete set null (patient_id),
  foreign key (organization_id, appointment_id) references appointments (organization_id, id) on delete set null (appointment_id)
);
create unique index messages_run_action_key on messages (organization_id, run_id, action_index) where run_id is not null;
create index messages_org_created_idx on messages (organization_id, created_at desc, id desc);
create index messages_org_patient_idx on messages (organization_id, patient_id) where patient_id is not null;
create index messages_provider_id_idx on messages (provider, provider_message_id) where provider_message_id is not null;
create trigger messages_touch before update on messages for each row execute function app.touch_updated_at();
-- Written by the worker (as the owner), and by the API for a template's test send (no run, no patient: an
-- address the operator typed); staff with messages.view_org read them, a patient its own.
select app.secure_table('messages', 'select, insert, update');
create policy messages_test_send on messages for all to app_rls
  using (organization_id = (select app.current_org_id()) and run_id is null and patient_id is null
         and (select app.has_permission('automations.manage')))
  with check (organization_id = (select app.current_org_id()) and run_id is null and patient_id is null
              and (select app.has_permission('automations.manage')));
create policy messages_read on messages for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('messages.view_org'))
       or (patient_id is not null and patient_id = (select app.current_patient_id())))
);
