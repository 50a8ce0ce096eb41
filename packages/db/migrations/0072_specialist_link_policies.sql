-- The policies of a specialist's working details (specialties, locations, availability rules and exceptions;
-- 0060) with the same rules, evaluated once per statement instead of once per row. They called
-- app.may_read_specialist() and app.may_edit_specialist() with the row's columns; SQL functions whose body
-- holds a subquery are never inlined, so each row read ran both functions (the "for all" write policy
-- applies to reads too), with their permission checks: GET /v1/specialists read its page's links at 2.2 ms
-- against 0.45 ms without policies (bench/directory.ts). Here the settings and permissions are (select ...)
-- init plans, and "the caller's own specialist profile" is an uncorrelated subquery, hashed once: a staff
-- member has at most one profile per organization. The functions stay for whoever else calls them.
do $$
declare
  t text;
begin
  foreach t in array array['specialist_specialties', 'specialist_locations', 'availability_rules', 'availability_exceptions'] loop
    execute format('drop policy %1$s_read on %1$s', t);
    execute format('drop policy %1$s_write on %1$s', t);
    -- may_read_specialist: staff with specialists.view, the organization's patients (the directory), the specialist itself.
    execute format($p$create policy %1$s_read on %1$s for select to app_rls using (
      organization_id = (select app.current_org_id())
      and ((select app.has_permission('specialists.view')) or (select app.current_patient_id()) is not null
           or specialist_id in (select s.id from specialists s
                                where s.organization_id = (select app.current_org_id()) and s.user_id = (select app.current_principal_id()))))$p$, t);
    -- may_edit_specialist: specialists.update_org, or specialists.update_self on one's own profile.
    execute format($p$create policy %1$s_write on %1$s for all to app_rls
      using (organization_id = (select app.current_org_id())
             and ((select app.has_permission('specialists.update_org'))
                  or ((select app.has_permission('specialists.update_self'))
                      and specialist_id in (select s.id from specialists s
                                            where s.organization_id = (select app.current_org_id()) and s.user_id = (select app.current_principal_id())))))
      with check (organization_id = (select app.current_org_id())
             and ((select app.has_permission('specialists.update_org'))
                  or ((select app.has_permission('specialists.update_self'))
                      and specialist_id in (select s.id from specialists s
                                            where s.organization_id = (select app.current_org_id()) and s.user_id = (select app.current_principal_id())))))$p$, t);
  end loop;
end $$;
