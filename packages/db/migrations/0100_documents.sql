-- Documents (spec 4.5 Documents, 9.6, 2.7): versioned PDF templates, the organization's letterhead,
-- and documents rendered from forms and appointments into archival PDF kept in the asset store
-- (docs/documents.md).

-- PDF templates: the draft -> publish -> versions -> rollback lifecycle of form templates
-- (platform/versioned). `content` is the layout (kind, page, letterhead flag, footer, blocks); the API
-- validates its placeholders against the data model of its kind before saving it.
create table pdf_templates (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  name text not null check (length(btrim(name)) between 1 and 200),
  description text check (length(description) <= 2000),
  kind text not null check (kind in ('form', 'visit_summary', 'prescription', 'report', 'receipt')),
  content jsonb not null check (jsonb_typeof(content) = 'object'),
  -- The last published version; 0 for a template created as a draft and never published (no document
  -- can be made from it: 409 template_not_published).
  version int not null default 1 check (version >= 0),
  published boolean not null default true,
  published_at timestamptz not null default now(),
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id, id),
  check (version > 0 or not published)
);
create trigger pdf_templates_touch before update on pdf_templates for each row execute function app.touch_updated_at();
create index pdf_templates_org_idx on pdf_templates (organization_id, created_at desc, id desc);
select app.secure_table('pdf_templates', 'select, insert, update');
-- Readers without pdf_templates.manage see a template as its latest published version (the API overlays
-- the snapshot on a draft); renderers need the row to know the template is live.
create policy pdf_templates_read on pdf_templates for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('pdf_templates.manage')) or (select app.has_permission('pdf_templates.view_published'))
       or (select app.has_permission('pdf_templates.render')) or (select app.has_permission('documents.create')))
);
create policy pdf_templates_insert on pdf_templates for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('pdf_templates.manage')));
create policy pdf_templates_update on pdf_templates for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('pdf_templates.manage')))
  with check (organization_id = (select app.current_org_id()));

create table pdf_template_versions (
  organization_id uuid not null references organizations (id) on delete cascade,
  pdf_template_id uuid not null,
  version int not null check (version >= 1),
  -- { name, description, kind, content }
  snapshot jsonb not null check (jsonb_typeof(snapshot) = 'object'),
  published_at timestamptz not null default now(),
  published_by_principal_id uuid,
  primary key (organization_id, pdf_template_id, version),
  foreign key (organization_id, pdf_template_id) references pdf_templates (organization_id, id) on delete cascade
);
select app.append_only('pdf_template_versions');
-- Whoever renders reads the published versions documents are made from.
create policy pdf_template_versions_read on pdf_template_versions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('pdf_templates.manage')) or (select app.has_permission('pdf_templates.view_published'))
       or (select app.has_permission('pdf_templates.render')) or (select app.has_permission('documents.create')))
);
create policy pdf_template_versions_insert on pdf_template_versions for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('pdf_templates.manage')));

-- The organization's letterhead, printed at the top of templates that ask for it: name, address lines,
-- registration numbers and a logo in the asset store (orgs/<org>/letterhead/<org>/<file id>).
create table document_letterheads (
  organization_id uuid not null references organizations (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 200),
  address_lines text[] not null default '{}' check (cardinality(address_lines) <= 4),
  registration_numbers text[] not null default '{}' check (cardinality(registration_numbers) <= 6),
  logo_asset_key text check (length(logo_asset_key) <= 300),
  logo_content_type text check (logo_content_type in ('image/png', 'image/jpeg')),
  logo_sha256 text check (logo_sha256 ~ '^[0-9a-f]{64}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (organization_id),
  constraint document_letterheads_logo_complete check ((logo_asset_key is null) = (logo_content_type is null) and (logo_asset_key is null) = (logo_sha256 is null))
);
create trigger document_letterheads_touch before update on document_letterheads for each row execute function app.touch_updated_at();
select app.secure_table('document_letterheads', 'select, insert, update');
create policy document_letterheads_read on document_letterheads for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('pdf_templates.manage')) or (select app.has_permission('pdf_templates.view_published'))
       or (select app.has_permission('pdf_templates.render')) or (select app.has_permission('documents.create')))
);
create policy document_letterheads_write on document_letterheads for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('pdf_templates.manage')));
create policy document_letterheads_update on document_letterheads for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('pdf_templates.manage')))
  with check (organization_id = (select app.current_org_id()));

-- Forms predate the rule that foreign keys carry the organization: give them the key documents name.
create unique index if not exists forms_org_id_key on forms (organization_id, id);

-- A document: a PDF made from a published template version and a form or an appointment. `render_key`
-- is the SHA-256 of what it is made from (source, its content digest, template id and version): the same
-- inputs give the same document, whoever asks and however often (a unique constraint settles races).
-- Rendering runs inline for short documents and on the worker for long ones (status and progress).
create table documents (
  organization_id uuid not null references organizations (id) on delete cascade,
  id uuid not null default app.uuid_v7(),
  kind text not null check (kind in ('form', 'visit_summary', 'prescription', 'report', 'receipt')),
  source text not null check (source in ('form', 'appointment')),
  form_id uuid,
  appointment_id uuid,
  patient_id uuid not null,
  pdf_template_id uuid not null,
  template_version int not null check (template_version >= 1),
  title text not null check (length(btrim(title)) between 1 and 200),
  -- What staff wrote for an appointment document ({ body, items }); null for a form's.
  input jsonb check (input is null or jsonb_typeof(input) = 'object'),
  -- SHA-256 of the canonical JSON of the source as rendered (for a form: its snapshot, docs/documents.md).
  source_sha256 text not null check (source_sha256 ~ '^[0-9a-f]{64}$'),
  render_key text not null check (render_key ~ '^[0-9a-f]{64}$'),
  status text not null default 'queued' check (status in ('queued', 'rendering', 'ready', 'failed')),
  progress smallint not null default 0 check (progress between 0 and 100),
  error text check (length(error) <= 500),
  asset_key text check (length(asset_key) <= 300),
  size_bytes bigint check (size_bytes >= 0),
  sha256 text check (sha256 ~ '^[0-9a-f]{64}$'),
  page_count int check (page_count >= 1),
  published_at timestamptz,
  published_by_principal_id uuid,
  created_by_principal_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  rendered_at timestamptz,
  primary key (organization_id, id),
  unique (organization_id, render_key),
  unique (organization_id, asset_key),
  constraint documents_source_shape check (
    (source = 'form' and form_id is not null and appointment_id is null and kind = 'form')
    or (source = 'appointment' and appointment_id is not null and form_id is null and kind <> 'form')),
  constraint documents_ready_check check ((status = 'ready') = (asset_key is not null and sha256 is not null and page_count is not null)),
  constraint documents_published_ready check (published_at is null or status = 'ready'),
  foreign key (organization_id, form_id) references forms (organization_id, id),
  foreign key (organization_id, appointment_id) references appointments (organization_id, id) on delete cascade,
  foreign key (organization_id, patient_id) references patients (organization_id, id) on delete restrict,
  foreign key (organization_id, pdf_template_id) references pdf_templates (organization_id, id)
);
create trigger documents_touch before update on documents for each row execute function app.touch_updated_at();
create index documents_form_idx on documents (organization_id, form_id, created_at desc) where form_id is not null;
create index documents_appointment_idx on documents (organization_id, appointment_id, created_at desc) where appointment_id is not null;
create index documents_patient_idx on documents (organization_id, patient_id, created_at desc);
create index documents_pending_idx on documents (organization_id, created_at) where status in ('queued', 'rendering');
select app.secure_table('documents', 'select, insert, update');
-- Staff with documents.view_org read the clinic's documents; a patient (or its caregiver) only its own,
-- and only once published to it (documents.view_own_published is that rule: patients act by ownership).
create policy documents_read on documents for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('documents.view_org'))
       or (published_at is not null and patient_id = (select app.current_patient_id())))
);
create policy documents_insert on documents for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and created_by_principal_id = (select app.current_principal_id())
  and case source when 'form' then (select app.has_permission('pdf_templates.render'))
                  else (select app.has_permission('documents.create')) end
);
-- Rendering progress is written by the request that renders inline (its creator) and by the worker (owner);
-- publishing needs documents.publish.
create policy documents_update on documents for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('documents.publish')) or created_by_principal_id = (select app.current_principal_id())))
  with check (organization_id = (select app.current_org_id()));

-- A document never changes what it was made from, and a published one stays as it was issued.
create or replace function app.documents_guard() returns trigger
language plpgsql as $$
begin
  if (new.organization_id, new.id, new.kind, new.source, new.form_id, new.appointment_id, new.patient_id, new.pdf_template_id,
      new.template_version, new.input, new.source_sha256, new.render_key, new.created_by_principal_id, new.created_at)
     is distinct from
     (old.organization_id, old.id, old.kind, old.source, old.form_id, old.appointment_id, old.patient_id, old.pdf_template_id,
      old.template_version, old.input, old.source_sha256, old.render_key, old.created_by_principal_id, old.created_at) then
    raise exception 'documents: what a document is made from never changes' using errcode = 'insufficient_privilege';
  end if;
  if old.status = 'ready' and (new.asset_key, new.sha256, new.size_bytes, new.page_count, new.status)
       is distinct from (old.asset_key, old.sha256, old.size_bytes, old.page_count, old.status) then
    raise exception 'documents: a rendered document is final' using errcode = 'insufficient_privilege';
  end if;
  if old.published_at is not null and new.published_at is distinct from old.published_at then
    raise exception 'documents: a published document stays published' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
create trigger documents_guard before update on documents for each row execute function app.documents_guard();

-- Default grants (docs/decisions.md, "Documents"), to the system templates and every organization's clone:
-- the administrator holds every code (it designs templates, the letterhead, and removes documents);
-- a clinician renders, writes, publishes and reads the clinic's documents and reads templates; the front
-- desk reads published templates only (documents hold health data). documents.update_* stay ungranted
-- (a document is final once rendered), and documents.view_own_published is the patient's ownership rule.
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values
  ('admin', 'pdf_templates.view_published'), ('admin', 'pdf_templates.manage'), ('admin', 'pdf_templates.render'),
  ('admin', 'documents.view_org'), ('admin', 'documents.create'), ('admin', 'documents.publish'), ('admin', 'documents.delete'),
  ('specialist', 'pdf_templates.view_published'), ('specialist', 'pdf_templates.render'),
  ('specialist', 'documents.view_org'), ('specialist', 'documents.create'), ('specialist', 'documents.publish'),
  ('customer_support', 'pdf_templates.view_published')
) as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;

-- Erasure (docs/decisions.md, "Documents"): the retention of signed forms applies to what was issued from
-- them. Kept: documents of signed forms and documents published to the patient (a visit summary or a
-- prescription handed over is part of the clinical record). Removed: documents of unsigned forms and
-- unpublished appointment documents (rows here, objects after commit or by the documents.orphan_files sweep).
alter function app.erase_patient_records(uuid, uuid) rename to erase_patient_records_0100;
create function app.erase_patient_records(target uuid, org uuid)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  removed jsonb;
  kept jsonb;
begin
  with d as (
    delete from documents doc using patients p
    where doc.organization_id = p.organization_id and doc.patient_id = p.id
      and p.user_id = target and (org is null or p.organization_id = org)
      and not (doc.published_at is not null
               or exists (select 1 from forms f where f.organization_id = doc.organization_id and f.id = doc.form_id and f.status = 'signed'))
    returning doc.id, doc.organization_id, doc.asset_key
  )
  select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id, d.id), '[]'::jsonb) into removed from d;
  select coalesce(jsonb_agg(jsonb_build_object('id', doc.id, 'organization_id', doc.organization_id) order by doc.organization_id, doc.id), '[]'::jsonb)
    into kept
  from documents doc join patients p on doc.organization_id = p.organization_id and doc.patient_id = p.id
  where p.user_id = target and (org is null or p.organization_id = org);
  -- Forms are emptied by the wrapped function: the documents of unsigned forms must be gone before.
  return app.erase_patient_records_0100(target, org) || jsonb_build_object('documents_removed', removed, 'documents_retained', kept);
end $$;
revoke all on function app.erase_patient_records(uuid, uuid) from public;
revoke all on function app.erase_patient_records_0100(uuid, uuid) from public;
