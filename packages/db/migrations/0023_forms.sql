-- Form instances (spec 2.10, 3.5). A form belongs to one patient record, is made from the
-- latest published template version, and snapshots every field it shows (form_field_snapshots,
-- append-only). States: pending, signed. A signed form never changes again, for any role (trigger),
-- and is never deleted; an unsigned one is soft-deleted with forms.delete_unsigned.

create table forms (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id),
  patient_id uuid not null references patients (id),
  form_template_id uuid not null references form_templates (id),
  template_version int not null check (template_version >= 1),
  title text not null,
  status text not null default 'pending' check (status in ('pending', 'signed')),
  -- Values keyed by the snapshot's key (unique within a form).
  "values" jsonb not null default '{}'::jsonb check (jsonb_typeof("values") = 'object'),
  created_by_principal_id uuid not null,
  signed_at timestamptz,
  signed_by_principal_id uuid,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint forms_signed_complete check ((status = 'signed') = (signed_at is not null and signed_by_principal_id is not null)),
  constraint forms_signed_not_deleted check (not (status = 'signed' and deleted_at is not null))
);
create trigger forms_touch before update on forms for each row execute function app.touch_updated_at();
create index forms_org_created_idx on forms (organization_id, created_at desc, id desc);
create index forms_patient_idx on forms (patient_id, created_at desc);

-- Signed means immutable: any update or delete of a signed row raises, whoever runs it (the owner
-- included), so no code path and no crafted statement can change a signature's content.
create or replace function app.forms_signed_guard() returns trigger
language plpgsql as $$
begin
  if old.status = 'signed' then
    raise exception 'form % is signed and can no longer change', old.id using errcode = 'insufficient_privilege';
  end if;
  if tg_op = 'DELETE' then return old; end if;
  if (new.id, new.organization_id, new.patient_id, new.form_template_id, new.template_version, new.title, new.created_by_principal_id, new.created_at)
     is distinct from
     (old.id, old.organization_id, old.patient_id, old.form_template_id, old.template_version, old.title, old.created_by_principal_id, old.created_at) then
    raise exception 'forms: only values, signature and deletion change' using errcode = 'insufficient_privilege';
  end if;
  if old.deleted_at is not null then
    raise exception 'form % is deleted', old.id using errcode = 'insufficient_privilege';
  end if;
  -- Requests: filling needs forms.fill_org or ownership, deleting forms.delete_unsigned, signing
  -- forms.sign or ownership. Superadmins (app_bypass) pass as they pass every permission check.
  if current_user = 'app_rls' then
    if new.deleted_at is not null and not app.has_permission('forms.delete_unsigned') then
      raise exception 'forms: deleting needs forms.delete_unsigned' using errcode = 'insufficient_privilege';
    end if;
    if (new."values" is distinct from old."values" or new.status <> old.status)
       and not (app.has_permission('forms.fill_org') or (new.status <> old.status and app.has_permission('forms.sign'))
                or old.patient_id = app.current_patient_id()) then
      raise exception 'forms: filling or signing needs forms.fill_org, forms.sign or ownership' using errcode = 'insufficient_privilege';
    end if;
  end if;
  return new;
end $$;
create trigger forms_signed_guard before update or delete on forms for each row execute function app.forms_signed_guard();
create trigger forms_no_truncate before truncate on forms for each statement execute function app.forbid_change();

select app.secure_table('forms', 'select, insert, update');
-- Staff with forms.view_org at the organization in scope; a patient its own forms (ownership).
create policy forms_read on forms for select to app_rls using (
  organization_id = (select app.current_org_id())
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
  and ((select app.has_permission('forms.view_org')) or patient_id = (select app.current_patient_id()))
);
create policy forms_insert on forms for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('forms.create'))
  and created_by_principal_id = (select app.current_principal_id()) and status = 'pending'
);
create policy forms_update on forms for update to app_rls
  using (organization_id = (select app.current_org_id())
         and ((select app.has_permission('forms.fill_org')) or (select app.has_permission('forms.sign'))
              or (select app.has_permission('forms.delete_unsigned')) or patient_id = (select app.current_patient_id())))
  with check (organization_id = (select app.current_org_id()));

-- Spec 2.10: the field definition as the form was created, immutable even when the field is later
-- edited or deleted.
create table form_field_snapshots (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id),
  form_id uuid not null references forms (id),
  position int not null check (position >= 0),
  custom_field_id uuid not null,
  version int not null check (version >= 1),
  key text not null,
  label text not null,
  field_type text not null,
  options jsonb not null,
  private boolean not null,
  required boolean not null,
  unique (form_id, position),
  unique (form_id, key)
);
select app.append_only('form_field_snapshots');
create policy form_field_snapshots_read on form_field_snapshots for select to app_rls using (
  organization_id = (select app.current_org_id()) and form_id in (select f.id from forms f)
);
create policy form_field_snapshots_insert on form_field_snapshots for insert to app_rls with check (
  organization_id = (select app.current_org_id()) and (select app.has_permission('forms.create'))
);

-- Files attached to a form; the bytes live in the asset store under asset_key.
create table form_files (
  id uuid primary key default app.uuid_v7(),
  organization_id uuid not null references organizations (id),
  form_id uuid not null references forms (id),
  asset_key text not null unique,
  filename text not null check (length(filename) between 1 and 255),
  content_type text not null,
  size_bytes bigint not null check (size_bytes >= 0),
  sha256 text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  uploaded_by_principal_id uuid not null,
  created_at timestamptz not null default now()
);
create index form_files_form_idx on form_files (form_id, created_at);

-- Files of a signed form are part of what was signed: none added, none removed. Definer, so the
-- form's state is read whatever the caller may see.
create or replace function app.form_files_guard() returns trigger
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  fid uuid := case when tg_op = 'DELETE' then old.form_id else new.form_id end;
  st text;
begin
  if tg_op = 'UPDATE' then
    raise exception 'form_files rows never change' using errcode = 'insufficient_privilege';
  end if;
  select status into st from public.forms where id = fid;
  if st = 'signed' then
    raise exception 'form % is signed: its files can no longer change', fid using errcode = 'insufficient_privilege';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end $$;
create trigger form_files_guard before insert or update or delete on form_files for each row execute function app.form_files_guard();

select app.secure_table('form_files', 'select, insert, delete');
create policy form_files_read on form_files for select to app_rls using (
  organization_id = (select app.current_org_id()) and form_id in (select f.id from forms f)
);
create policy form_files_insert on form_files for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and uploaded_by_principal_id = (select app.current_principal_id())
  and form_id in (select f.id from forms f where f.deleted_at is null
                  and ((select app.has_permission('forms.fill_org')) or f.patient_id = (select app.current_patient_id())))
);
create policy form_files_delete on form_files for delete to app_rls using (
  organization_id = (select app.current_org_id())
  and form_id in (select f.id from forms f where f.deleted_at is null
                  and ((select app.has_permission('forms.fill_org')) or f.patient_id = (select app.current_patient_id())))
);
