-- Spec 5 rule 6: superadmins hold no organization memberships. Adding a member runs as the clinic's
-- admin (app_rls), who may not read other people's platform roles; this answers the one question the
-- member routes need, whether a user is a superadmin, and nothing else.
create or replace function app.is_superadmin(target uuid) returns boolean
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
  select exists (select 1 from public.platform_memberships pm where pm.user_id = target and pm.role = 'superadmin')
$$;
revoke all on function app.is_superadmin(uuid) from public;
grant execute on function app.is_superadmin(uuid) to app_rls, app_bypass;
