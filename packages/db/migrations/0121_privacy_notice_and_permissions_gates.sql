-- Permission codes gate what their names say (spec 2.7, 4.2).

-- organizations.manage_privacy_notice gates publishing the clinic's privacy notice; the clinic's other
-- purposes stay with consents.manage. Every role that could publish the notice until now (it held
-- consents.manage) keeps that right.
insert into role_permissions (role_id, permission_code, organization_id)
select rp.role_id, 'organizations.manage_privacy_notice', rp.organization_id
from role_permissions rp where rp.permission_code = 'consents.manage'
on conflict do nothing;
update permissions set description = 'Publish the clinic''s privacy notice (org_privacy_notice)'
where code = 'organizations.manage_privacy_notice';

drop policy consent_purpose_versions_insert on consent_purpose_versions;
create policy consent_purpose_versions_insert on consent_purpose_versions for insert to app_rls with check (
  organization_id = (select app.current_org_id())
  and case when purpose_code = 'org_privacy_notice'
        then (select app.has_permission('organizations.manage_privacy_notice'))
        else (select app.has_permission('consents.manage')) end
  and published_by_principal_id = (select app.current_principal_id())
);

-- The permission catalog is a directory table like roles and role_permissions: read with
-- organizations.view_directory (or organizations.manage_members, which edits role permissions).
drop policy permissions_read on permissions;
create policy permissions_read on permissions for select to app_rls using (
  (select app.has_permission('organizations.view_directory')) or (select app.has_permission('organizations.manage_members'))
);
