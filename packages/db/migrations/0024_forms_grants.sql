-- Default grants for custom fields, templates and forms (docs/decisions.md, "Custom fields and forms"), to the system
-- templates and to every existing organization's clone of them. Patient-side access is by ownership
-- and needs no code (spec 2.7).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values
  ('admin', 'custom_fields.manage'),
  ('admin', 'form_templates.view'),
  ('admin', 'form_templates.manage'),
  ('admin', 'forms.view_org'),
  ('admin', 'forms.create'),
  ('admin', 'forms.fill_org'),
  ('admin', 'forms.sign'),
  ('admin', 'forms.delete_unsigned'),
  ('admin', 'patients.view_org'),
  ('admin', 'patients.onboard'),
  ('admin', 'patients.update_org'),
  ('admin', 'patients.delete'),
  ('admin', 'specialists.view'),
  ('admin', 'specialists.create'),
  ('admin', 'specialists.update_org'),
  ('admin', 'specialists.update_self'),
  ('admin', 'specialists.delete'),
  -- A clinician: reads and edits the clinic's patients, issues, fills and signs forms, keeps its own profile.
  ('specialist', 'form_templates.view'),
  ('specialist', 'forms.view_org'),
  ('specialist', 'forms.create'),
  ('specialist', 'forms.fill_org'),
  ('specialist', 'forms.sign'),
  ('specialist', 'patients.view_org'),
  ('specialist', 'patients.update_org'),
  ('specialist', 'specialists.view'),
  ('specialist', 'specialists.update_self'),
  -- Front desk: registers patients and keeps their contact details; it does not create,
  -- read or sign forms (health data).
  ('customer_support', 'form_templates.view'),
  ('customer_support', 'patients.view_org'),
  ('customer_support', 'patients.onboard'),
  ('customer_support', 'patients.update_org'),
  ('customer_support', 'specialists.view')
) as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;
