-- data.view_deleted on every soft-deleted table (issue 29, defect 14). patients, specialists and forms
-- already hide a row whose deleted_at is set from a reader without data.view_deleted; automation rules,
-- custom fields, form templates, PDF templates and treatment plans showed deleted rows to every reader and
-- relied on the application's `deleted_at is null`. Their read policies now carry the same rule.
--
-- The soft delete is an UPDATE whose new row must pass these SELECT policies when the statement reads
-- the table (a WHERE on its columns, RETURNING), so a caller without data.view_deleted could not mark
-- a row deleted that way. The application marks rows with UPDATE ... WHERE CURRENT OF a FOR UPDATE
-- cursor (apps/core-api/src/platform/deleted.ts), which reads no column of the new row: the UPDATE
-- policies and the tables' triggers still decide who may delete.

drop policy automation_rules_read on automation_rules;
create policy automation_rules_read on automation_rules for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('automations.view_org')) or (select app.has_permission('automations.manage')))
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
);
-- The FOR ALL policy also answered SELECT (permissive policies are or-ed), which would show managers
-- deleted rules; it becomes the two commands the application role holds (secure_table of 0091).
drop policy automation_rules_write on automation_rules;
create policy automation_rules_insert on automation_rules for insert to app_rls
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')));
create policy automation_rules_update on automation_rules for update to app_rls
  using (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')))
  with check (organization_id = (select app.current_org_id()) and (select app.has_permission('automations.manage')));

drop policy custom_fields_read on custom_fields;
create policy custom_fields_read on custom_fields for select to app_rls using (
  organization_id = (select app.current_org_id())
  and (select app.is_staff_at_current_org())
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
);

drop policy form_templates_read on form_templates;
create policy form_templates_read on form_templates for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('form_templates.view')) or (select app.has_permission('form_templates.manage')))
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
);

drop policy pdf_templates_read on pdf_templates;
create policy pdf_templates_read on pdf_templates for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('pdf_templates.manage')) or (select app.has_permission('pdf_templates.view_published'))
       or (select app.has_permission('pdf_templates.render')) or (select app.has_permission('documents.create')))
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
);

drop policy treatment_plans_read on treatment_plans;
create policy treatment_plans_read on treatment_plans for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.view_org')) or (select app.has_permission('treatment_plans.manage'))
       or (select app.has_permission('treatment_plans.approve')) or (select app.has_permission('treatment_plans.assign'))
       or (select app.has_permission('treatment_plans.promote_to_org')) or (select app.has_permission('treatment_plans.delete')))
  and (deleted_at is null or (select app.has_permission('data.view_deleted')))
);

-- A plan's versions and exercise index were readable by whoever reads the plan (an EXISTS on
-- treatment_plans under its policy). Enrollments in a deleted plan keep following their version, so
-- the versions (and the index) keep the plan's read rule without its deleted_at condition: the same
-- permission codes, written out.
drop policy treatment_plan_versions_read on treatment_plan_versions;
create policy treatment_plan_versions_read on treatment_plan_versions for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.view_org')) or (select app.has_permission('treatment_plans.manage'))
       or (select app.has_permission('treatment_plans.approve')) or (select app.has_permission('treatment_plans.assign'))
       or (select app.has_permission('treatment_plans.promote_to_org')) or (select app.has_permission('treatment_plans.delete')))
);
drop policy treatment_plan_exercises_read on treatment_plan_exercises;
create policy treatment_plan_exercises_read on treatment_plan_exercises for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('treatment_plans.view_org')) or (select app.has_permission('treatment_plans.manage'))
       or (select app.has_permission('treatment_plans.approve')) or (select app.has_permission('treatment_plans.assign'))
       or (select app.has_permission('treatment_plans.promote_to_org')) or (select app.has_permission('treatment_plans.delete')))
);
