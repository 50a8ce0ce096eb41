-- Ids inside request bodies must name rows of the caller's organization (platform/references.ts). One statement
-- per request answers which of the body's ids do not: entry i is (p_targets[i], p_ids[i]), a target being a table
-- with organization_id, or `table.column` when the id is not the table's `id`, with `?shared` when the platform's rows
-- (organization_id null, as in the exercise library) are the organization's to use too. SECURITY DEFINER so that a row the
-- caller's policies hide still counts as the organization's (whether the caller may use it is the service's rule);
-- it tells the caller only whether an id is a row of its own organization. Targets come from the application's
-- route declarations, never from the request; a target without organization_id is a programming error.
create or replace function app.unresolved_references(p_org uuid, p_targets text[], p_ids uuid[])
returns setof int language plpgsql stable security definer set search_path = pg_catalog, public as $$
declare
  target text;
  tbl text;
  col text;
  shared boolean;
  found uuid[];
begin
  for target in select distinct x from unnest(p_targets) as x loop
    shared := target like '%?shared';
    tbl := split_part(split_part(target, '?', 1), '.', 1);
    col := coalesce(nullif(split_part(split_part(target, '?', 1), '.', 2), ''), 'id');
    if not exists (
      select 1 from pg_attribute a
      where a.attrelid = to_regclass(format('public.%I', tbl)) and a.attname = 'organization_id' and not a.attisdropped
    ) then
      raise exception 'app.unresolved_references: % is not a tenant table', tbl;
    end if;
    execute format(
      'select coalesce(array_agg(%I), ''{}'') from public.%I where (organization_id = $1 or ($3 and organization_id is null)) and %I = any ($2)',
      col, tbl, col)
      into found
      using p_org, array(select u.i from unnest(p_targets, p_ids) as u (t, i) where u.t = target), shared;
    return query
      select u.n::int from unnest(p_targets, p_ids) with ordinality as u (t, i, n) where u.t = target and not (u.i = any (found));
  end loop;
end $$;
revoke all on function app.unresolved_references(uuid, text[], uuid[]) from public;
grant execute on function app.unresolved_references(uuid, text[], uuid[]) to app_rls, app_bypass;
