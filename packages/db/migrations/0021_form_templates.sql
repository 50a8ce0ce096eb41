-- Form templates (spec 4.5, 9.6): the same publish / versions / rollback lifecycle as
-- custom fields. A template lists custom fields of entity type `form`; a form instance is made from
-- the latest published template version and snapshots each field's latest published version.

create table form_templates (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 200),
  description text check (length(description) <= 2000),
  -- [{ custom_field_id, required }] in display order.
  fields jsonb not null check (jsonb_typeof(fields) = 'array'),
  version int not null default 1 check (version >= 1),
  published boolean not null default true,
  published_at timestamptz not null default now(),
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create trigger form_templates_touch before update on form_templates for each row execute function app.touch_updated_at();
create index form_templates_org_idx on form_templates (organization_id, created_at desc, id desc);

select app.secure_table('form_templates', 'select, insert, update');
create policy form_templates_read on form_templates for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('form_templates.view')) or (select app.has_permission('form_templates.manage')))
);
create policy form_templates_insert on form_templates for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('form_templates.manage')));
create policy form_templates_update on form_templates for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('form_templates.manage')))
  with check (organization_id = (select app.current_org_id()));

create table form_template_versions (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id),
  form_template_id uuid not null references form_templates (id),
  version int not null check (version >= 1),
  -- { name, description, fields }
  snapshot jsonb not null check (jsonb_typeof(snapshot) = 'object'),
  published_at timestamptz not null default now(),
  published_by_principal_id uuid,
  unique (form_template_id, version)
);
select app.append_only('form_template_versions');
-- Whoever may create forms reads the published versions they are made from.
create policy form_template_versions_read on form_template_versions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('form_templates.view')) or (select app.has_permission('form_templates.manage'))
       or (select app.has_permission('forms.create')))
);
create policy form_template_versions_insert on form_template_versions for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('form_templates.manage')));
