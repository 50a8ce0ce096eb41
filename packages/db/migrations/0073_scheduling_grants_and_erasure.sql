-- Two fixes of migration 0067 that the permission matrix found. 0069, the number set aside for
-- them, went to the hold stream's migration meanwhile.
--
-- 1. The administrator holds every appointments.* code (spec 2.7). 0067 gave it view_org, update_org and
--    cancel_org but not view_own, update_own and cancel_own, which the specialist role has; nobody gives a
--    role with codes they do not hold (platform/grants.ts), so a clinic's admin could no longer add a
--    specialist (POST /v1/organizations/{id}/members answered 403).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, g.code, r.organization_id
from roles r
join (values ('admin', 'appointments.view_own'), ('admin', 'appointments.update_own'), ('admin', 'appointments.cancel_own'))
  as g (role_code, code) on g.role_code = r.code
where r.is_system
on conflict do nothing;

-- 2. A person who erases their account (DELETE /v1/me, app.erase_user) takes their specialist profiles with
--    them; an appointment of such a specialist refused the delete (on delete restrict: a foreign key
--    violation, answered 500). The appointment stays in the clinic's record without its specialist, as
--    specialist_id was already allowed to be; the specialist's calendar and its claims go with the profile.
alter table appointments drop constraint appointments_organization_id_specialist_id_fkey,
  add constraint appointments_organization_id_specialist_id_fkey foreign key (organization_id, specialist_id)
    references specialists (organization_id, id) on delete set null (specialist_id);

-- 3. The same erasure failed for any specialist with availability (0060): deleting the profile cascades to
--    its location links, whose delete the rules and exceptions at that location restrict before their own
--    cascade from the profile reaches them (a foreign key violation, answered 500). The profile's
--    availability goes first, so the cascade finds nothing left at its locations. Unlinking a location that
--    still has rules stays refused (409), as before.
create or replace function app.specialist_availability_goes_first() returns trigger
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
begin
  delete from availability_exceptions where organization_id = old.organization_id and specialist_id = old.id;
  delete from availability_rules where organization_id = old.organization_id and specialist_id = old.id;
  return old;
end $$;
revoke all on function app.specialist_availability_goes_first() from public;
create trigger specialists_availability_first before delete on specialists
  for each row execute function app.specialist_availability_goes_first();
