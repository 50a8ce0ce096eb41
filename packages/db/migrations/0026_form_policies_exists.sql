-- Snapshot and file policies of 0023 as correlated EXISTS probes. Written as
-- "form_id in (select f.id from forms f)" they were an uncorrelated subquery that PostgreSQL answers
-- by hashing every form the caller can see, on every statement that reads one snapshot: bench/forms.ts
-- measured GET /v1/forms/{id} falling from 567 to 284 req/s once the organization held 10,000 other
-- forms. As EXISTS on the forms primary key (OFFSET 0 keeps the planner from hashing it anyway, as
-- in 0005) the cost follows the rows read. The forms policy still applies inside the probe.

drop policy form_field_snapshots_read on form_field_snapshots;
create policy form_field_snapshots_read on form_field_snapshots for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from forms f where f.id = form_field_snapshots.form_id offset 0)
);

drop policy form_files_read on form_files;
create policy form_files_read on form_files for select to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from forms f where f.id = form_files.form_id offset 0)
);

drop policy form_files_insert on form_files;
create policy form_files_insert on form_files for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and uploaded_by_principal_id = (select app.current_principal_id())
  and exists (select 1 from forms f where f.id = form_files.form_id and f.deleted_at is null
              and ((select app.has_permission('forms.fill_org')) or f.patient_id = (select app.current_patient_id())) offset 0)
);

drop policy form_files_delete on form_files;
create policy form_files_delete on form_files for delete to app_rls using (
  organization_id = (select app.current_org_id())
  and exists (select 1 from forms f where f.id = form_files.form_id and f.deleted_at is null
              and ((select app.has_permission('forms.fill_org')) or f.patient_id = (select app.current_patient_id())) offset 0)
);
