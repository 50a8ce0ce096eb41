-- The last-admin rule in one place: an organization always keeps a member who can manage members
-- (organizations.manage_members). Member removal, demotion and role edits (TypeScript, members and
-- roles modules) and account erasure (app.erase_user) all take the same lock and ask the same question.

-- The permission that makes a member an administrator for this rule.
create or replace function app.admin_permission() returns text
language sql immutable as $$ select 'organizations.manage_members' $$;
grant execute on function app.admin_permission() to app_rls, app_bypass;

-- Serialises every change that can take away an organization's last admin: two admins demoting each
-- other at the same moment must not both see the other as "the remaining admin". A transaction-scoped
-- advisory lock, because row locks need UPDATE rights that a custom role with manage_members may lack.
create or replace function app.lock_admin_set(org uuid) returns void
language sql volatile as $$ select pg_advisory_xact_lock(7275003, hashtext(org::text)) $$;
grant execute on function app.lock_admin_set(uuid) to app_rls, app_bypass;

-- Does a member other than except_user (and not through except_role) hold the admin permission?
-- Runs with the caller's rights, so it sees what the caller's row policies let it see.
create or replace function app.other_admin_exists(org uuid, except_user uuid, except_role uuid) returns boolean
language sql stable as $$
  select exists (
    select 1 from memberships m
    join role_permissions rp on rp.role_id = m.role_id and rp.permission_code = app.admin_permission()
    where m.organization_id = org
      and (except_user is null or m.user_id <> except_user)
      and (except_role is null or m.role_id <> except_role)
  )
$$;
grant execute on function app.other_admin_exists(uuid, uuid, uuid) to app_rls, app_bypass;

-- app.erase_user as in 0027, its last-admin check now through the functions above.
create or replace function app.erase_user(target uuid, org uuid, reason text)
returns jsonb
language plpgsql security definer set search_path = public, pg_catalog, pg_temp as $$
declare
  me uuid := app.current_principal_id();
  bypass boolean := current_setting('role', true) = 'app_bypass';
  withdrawn jsonb := '[]'::jsonb;
  patients_deleted jsonb;
  memberships_removed jsonb := '[]'::jsonb;
  specialists_removed jsonb := '[]'::jsonb;
  records jsonb;
  anonymise boolean;
  m record;
begin
  if me is null or target is null then
    raise exception 'no principal' using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from users u where u.id = target) then
    raise exception 'subject_not_found' using errcode = 'P0001';
  end if;
  if org is null then
    if not (target = me or bypass) then
      raise exception 'erase_not_allowed' using errcode = 'insufficient_privilege';
    end if;
    if (select kind from users where id = target) <> 'human' then
      raise exception 'not_human' using errcode = 'P0001';
    end if;
  else
    if not (bypass or (org = app.current_org_id() and app.has_permission('gdpr.erase_data'))) then
      raise exception 'erase_not_allowed' using errcode = 'insufficient_privilege';
    end if;
    if not exists (select 1 from patients p where p.organization_id = org and p.user_id = target) then
      raise exception 'subject_not_found' using errcode = 'P0001';
    end if;
    withdrawn := app.withdraw_all_consents(target, org, false, me, reason);
  end if;

  anonymise := org is null or not (
    exists (select 1 from memberships mm where mm.user_id = target)
    or exists (select 1 from patients p where p.user_id = target and p.deleted_at is null and p.organization_id <> org)
    or exists (select 1 from platform_memberships pm where pm.user_id = target));

  if anonymise then
    -- Never leave an organization without someone who can manage members (members module rule).
    for m in
      select mm.organization_id from memberships mm
      where mm.user_id = target
        and exists (select 1 from role_permissions rp where rp.role_id = mm.role_id and rp.permission_code = app.admin_permission())
      order by mm.organization_id
    loop
      perform app.lock_admin_set(m.organization_id);
      if not app.other_admin_exists(m.organization_id, target, null) then
        raise exception 'last_admin:%', m.organization_id using errcode = 'P0001';
      end if;
    end loop;
    withdrawn := withdrawn || app.withdraw_all_consents(target, null, true, me, reason);
    with s as (delete from specialists s where s.user_id = target returning s.id, s.organization_id)
    select coalesce(jsonb_agg(to_jsonb(s) order by s.organization_id), '[]'::jsonb) into specialists_removed from s;
    with d as (delete from memberships mm where mm.user_id = target returning mm.organization_id, mm.role_id)
    select coalesce(jsonb_agg(to_jsonb(d) order by d.organization_id), '[]'::jsonb) into memberships_removed from d;
    delete from platform_memberships where user_id = target;
    update users set email = 'deleted-' || id || '@invalid', external_subject = null, preferred_language = null,
                     current_organization_id = null, confirmed = false
    where id = target;
  end if;

  with p as (
    update patients set deleted_at = now(), profile_shared = false
    where user_id = target and deleted_at is null and (anonymise or organization_id = org)
    returning id, organization_id
  )
  select coalesce(jsonb_agg(to_jsonb(p) order by p.organization_id), '[]'::jsonb) into patients_deleted from p;

  records := app.erase_patient_records(target, case when anonymise then null else org end);

  return jsonb_build_object('anonymised', anonymise, 'withdrawn', withdrawn,
                            'patients_deleted', patients_deleted, 'memberships_removed', memberships_removed,
                            'specialists_removed', specialists_removed) || records;
end $$;
revoke all on function app.erase_user(uuid, uuid, text) from public;
grant execute on function app.erase_user(uuid, uuid, text) to app_rls, app_bypass;
