-- Custom fields with versions (spec 2.10, 3.1, 4.8). The row of custom_fields is the
-- current state (published, or a draft edited in place); every publication is an append-only
-- snapshot in custom_field_versions, and forms and records read the latest snapshot, never the draft.

insert into permissions (code, resource, action, description) values
  ('custom_fields.manage', 'custom_fields', 'manage', 'Create, edit, publish, roll back and delete custom field definitions');

create table custom_fields (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  entity_type text not null check (entity_type in ('patient', 'specialist', 'form')),
  key text not null check (key ~ '^[a-z][a-z0-9_]{0,62}$'),
  label text not null check (length(btrim(label)) between 1 and 200),
  field_type text not null check (field_type in ('text', 'long_text', 'number', 'date', 'boolean', 'select', 'multi_select')),
  options jsonb not null default '[]'::jsonb check (jsonb_typeof(options) = 'array'),
  -- Private fields are for staff only: stripped from every answer to a patient (spec 5.8).
  private boolean not null default false,
  -- Set for system fields; never changes across versions (trigger below).
  system_key text check (system_key ~ '^[a-z][a-z0-9_.]{0,62}$'),
  version int not null default 1 check (version >= 1),
  published boolean not null default true,
  published_at timestamptz not null default now(),
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger custom_fields_touch before update on custom_fields for each row execute function app.touch_updated_at();
-- The current key is unique among the live fields of one entity type: values are addressed by key.
create unique index custom_fields_key on custom_fields (organization_id, entity_type, key) where deleted_at is null;
create unique index custom_fields_system_key on custom_fields (organization_id, entity_type, system_key) where deleted_at is null and system_key is not null;
create index custom_fields_org_idx on custom_fields (organization_id, created_at desc, id desc);

create or replace function app.custom_field_guard() returns trigger
language plpgsql as $$
begin
  if new.system_key is distinct from old.system_key then
    raise exception 'custom_fields.system_key never changes' using errcode = 'check_violation';
  end if;
  if new.organization_id <> old.organization_id or new.entity_type <> old.entity_type or new.created_at <> old.created_at then
    raise exception 'custom_fields: organization, entity type and creation time never change' using errcode = 'check_violation';
  end if;
  if old.deleted_at is not null then
    raise exception 'custom_fields: a deleted field is not edited' using errcode = 'check_violation';
  end if;
  return new;
end $$;
create trigger custom_fields_guard before update on custom_fields for each row execute function app.custom_field_guard();

select app.secure_table('custom_fields', 'select, insert, update');
-- Definitions are read by any staff member (they render patient and specialist records); patients
-- see only the snapshots inside their forms.
create policy custom_fields_read on custom_fields for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.is_staff_at_current_org())
);
create policy custom_fields_insert on custom_fields for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('custom_fields.manage')));
create policy custom_fields_update on custom_fields for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('custom_fields.manage')))
  with check (organization_id = (select app.current_org_id()));

-- Spec 2.10: (custom_field_id, version, fields_snapshot, published_at), never updated or deleted.
create table custom_field_versions (
  id uuid primary key default app.uuid_v7(),
  -- No cascades: the history outlives edits and deletions of what it describes.
  organization_id uuid not null references organizations (id),
  custom_field_id uuid not null references custom_fields (id),
  version int not null check (version >= 1),
  fields_snapshot jsonb not null check (jsonb_typeof(fields_snapshot) = 'object'),
  published_at timestamptz not null default now(),
  published_by_principal_id uuid,
  unique (custom_field_id, version)
);
select app.append_only('custom_field_versions');
create policy custom_field_versions_read on custom_field_versions for select to app_rls using (
  organization_id = (select app.current_org_id()) and (select app.is_staff_at_current_org())
);
create policy custom_field_versions_insert on custom_field_versions for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('custom_fields.manage')));
