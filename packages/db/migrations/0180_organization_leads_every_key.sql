-- Issue 31, point 1: a schema that distributes by organization (docs/scaling.md).
--
-- Citus distributes a table by a column only when every primary key, unique constraint, unique index and
-- exclusion constraint includes that column, and foreign keys between distributed tables include it on both
-- sides. This migration brings every tenant table to that shape, generically from the catalog rather than with
-- 60 hand edits, so that it also covers tables added by migrations numbered before it:
--
--   tenant table = a table of schema public whose organization_id is NOT NULL, except organization_domains
--                  (a domain belongs to one organization platform-wide: its unique (domain) is a global rule,
--                  so it stays a global routing table; docs/decisions.md).
--   Tables whose organization_id is nullable hold platform rows beside clinic rows (roles, exercises, audit_logs,
--   ...): they are not tenant tables here and are left unchanged (their home: docs/scaling.md).
--
-- For each tenant table, in table and constraint name order:
--   1. a primary key, unique constraint or exclusion constraint whose first column is not organization_id is
--      recreated with organization_id first (same name; organization_id moved to the front if it was already
--      in it); an exclusion constraint gains `organization_id with =` first;
--   2. a unique index (not owned by a constraint) whose first column is not organization_id is recreated with
--      organization_id first (same name, same predicate);
--   3. a unique index or constraint that becomes a copy of the new primary key (the former `(organization_id,
--      id)` keys that composite foreign keys pointed at) is dropped;
--   4. where the old key did not contain organization_id, a plain index on the old columns keeps lookups that
--      do not name the organization (platform sweeps, token lookups) index scans: `<name>_lookup`;
--   5. every foreign key between two tenant tables becomes (organization_id, x_id) -> (organization_id, id)
--      with the same actions; ON DELETE SET NULL names its columns (`set null (x_id)`) so organization_id is
--      never nulled. Foreign keys to organizations and to global tables (users, permissions, exercises, ...)
--      are left as they are.
-- Existing rows are kept (the new keys are implied by the old ones plus the NOT NULL organization_id).
-- Anything this does not know how to rewrite raises an error instead of being skipped.
-- The application's ON CONFLICT targets that named an old key name the new one (same commit).

create function app_meta.column_list(rel oid, attnums int2[]) returns text
language sql stable as $$
  select string_agg(quote_ident(a.attname), ', ' order by k.ord)
  from unnest(attnums) with ordinality as k(attnum, ord)
  join pg_attribute a on a.attrelid = rel and a.attnum = k.attnum
$$;

create function app_meta.fk_action(action "char", setcols text) returns text
language sql immutable as $$
  select case action
    when 'a' then 'no action' when 'r' then 'restrict' when 'c' then 'cascade'
    when 'n' then 'set null' || coalesce(' (' || setcols || ')', '')
    when 'd' then 'set default' || coalesce(' (' || setcols || ')', '')
  end
$$;

do $$
declare
  tenant oid[];
  org_of jsonb := '{}';
  r record;
  keys int2[];
  org int2;
  drops text[] := '{}';
  creates text[] := '{}';
  lookups text[] := '{}';
  fk_creates text[] := '{}';
  fk_drops text[] := '{}';
  moved oid[] := '{}';        -- indexes that are dropped (rewritten or duplicate): their foreign keys are recreated
  new_pk jsonb := '{}';       -- table oid -> the new primary key's attnums
  local_keys int2[];
  ref_keys int2[];
  set_cols int2[];
  i int;
  stmt text;
begin
  select array_agg(c.oid order by c.relname) into tenant
  from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped
  where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and a.attnotnull and c.relname <> 'organization_domains';

  -- 1. keys and exclusion constraints
  for r in
    select c.oid, c.conname, c.conrelid, c.contype, c.conkey, c.conindid, c.condeferrable, c.condeferred,
           ix.indnullsnotdistinct, ix.indnatts, ix.indnkeyatts, pg_get_constraintdef(c.oid) as def,
           (select attnum from pg_attribute where attrelid = c.conrelid and attname = 'organization_id') as org
    from pg_constraint c join pg_index ix on ix.indexrelid = c.conindid
    where c.conrelid = any (tenant) and c.contype in ('p', 'u', 'x')
    order by c.conrelid::regclass::text, c.conname
  loop
    if r.conkey[1] = r.org then
      if r.contype = 'p' then new_pk := new_pk || jsonb_build_object(r.conrelid::text, to_jsonb(r.conkey)); end if;
      continue;
    end if;
    if r.indnatts <> r.indnkeyatts then raise exception 'constraint % of % has INCLUDE columns: not rewritten', r.conname, r.conrelid::regclass; end if;
    keys := array_remove(r.conkey, r.org);
    moved := moved || r.conindid;
    drops := drops || format('alter table %s drop constraint %I', r.conrelid::regclass, r.conname);
    if r.contype = 'x' then
      if r.org = any (r.conkey) then raise exception 'exclusion constraint % of % names organization_id after other columns', r.conname, r.conrelid::regclass; end if;
      creates := creates || format('alter table %s add constraint %I %s', r.conrelid::regclass, r.conname,
        regexp_replace(r.def, '^EXCLUDE USING (\w+) \(', 'EXCLUDE USING \1 (organization_id WITH =, '));
    else
      creates := creates || format('alter table %s add constraint %I %s%s (%s)%s%s', r.conrelid::regclass, r.conname,
        case r.contype when 'p' then 'primary key' else 'unique' end,
        case when r.indnullsnotdistinct then ' nulls not distinct' else '' end,
        app_meta.column_list(r.conrelid, r.org || keys),
        case when r.condeferrable then ' deferrable' else '' end,
        case when r.condeferred then ' initially deferred' else '' end);
      if r.contype = 'p' then new_pk := new_pk || jsonb_build_object(r.conrelid::text, to_jsonb(r.org || keys)); end if;
      -- 4. the old columns stay searchable without the organization, unless an index already leads with them
      if not (r.org = any (r.conkey)) and not exists (
        select 1 from pg_index o
        where o.indrelid = r.conrelid and o.indexrelid <> r.conindid and o.indpred is null
          and (string_to_array(o.indkey::text, ' ')::int2[])[1:cardinality(r.conkey)] = r.conkey
      ) then
        lookups := lookups || format('create index %I on %s (%s)', left(r.conname, 56) || '_lookup', r.conrelid::regclass,
          app_meta.column_list(r.conrelid, r.conkey));
      end if;
    end if;
  end loop;

  -- 2. unique indexes that are not constraints
  for r in
    select ix.indexrelid, ix.indrelid, i.relname, pg_get_indexdef(ix.indexrelid) as def,
           string_to_array(ix.indkey::text, ' ')::int2[] as cols,
           (select attnum from pg_attribute where attrelid = ix.indrelid and attname = 'organization_id') as org
    from pg_index ix join pg_class i on i.oid = ix.indexrelid
    where ix.indrelid = any (tenant) and ix.indisunique
      and not exists (select 1 from pg_constraint c where c.conindid = ix.indexrelid and c.conrelid = ix.indrelid)
    order by ix.indrelid::regclass::text, i.relname
  loop
    if r.cols[1] = r.org then continue; end if;
    if r.org = any (r.cols) then raise exception 'unique index % names organization_id after other columns', r.relname; end if;
    moved := moved || r.indexrelid;
    drops := drops || format('drop index %s', r.indexrelid::regclass);
    creates := creates || regexp_replace(r.def, ' USING (\w+) \(', ' USING \1 (organization_id, ');
    lookups := lookups || regexp_replace(r.def, '^CREATE UNIQUE INDEX (\S+) ', format('CREATE INDEX %I ', left(r.relname, 56) || '_lookup'));
  end loop;

  -- 3. unique indexes and constraints that the new primary key makes copies of
  for r in
    select ix.indexrelid, ix.indrelid, i.relname, c.conname
    from pg_index ix join pg_class i on i.oid = ix.indexrelid
    left join pg_constraint c on c.conindid = ix.indexrelid and c.conrelid = ix.indrelid
    where ix.indrelid = any (tenant) and ix.indisunique and not ix.indisprimary and ix.indpred is null and ix.indexprs is null
      and new_pk ? ix.indrelid::text
      and to_jsonb(string_to_array(ix.indkey::text, ' ')::int2[]) = new_pk -> ix.indrelid::text
    order by ix.indrelid::regclass::text, i.relname
  loop
    moved := moved || r.indexrelid;
    drops := drops || case when r.conname is null then format('drop index %s', r.indexrelid::regclass)
                           else format('alter table %s drop constraint %I', r.indrelid::regclass, r.conname) end;
  end loop;

  -- 5. foreign keys between tenant tables: not led by organization_id, or pointing at a key dropped above
  for r in
    select c.*,
           (select attnum from pg_attribute where attrelid = c.conrelid and attname = 'organization_id') as org_local,
           (select attnum from pg_attribute where attrelid = c.confrelid and attname = 'organization_id') as org_ref
    from pg_constraint c
    where c.contype = 'f' and (c.conindid = any (moved) or (c.conrelid = any (tenant) and c.confrelid = any (tenant)))
    order by c.conrelid::regclass::text, c.conname
  loop
    if not (r.conrelid = any (tenant) and r.confrelid = any (tenant)) then
      raise exception 'foreign key % of % points at a key of tenant table % from outside the tenant tables', r.conname, r.conrelid::regclass, r.confrelid::regclass;
    end if;
    if r.conkey[1] = r.org_local and r.confkey[1] = r.org_ref and not (r.conindid = any (moved)) then continue; end if;
    if r.confmatchtype = 'f' then raise exception 'foreign key % of % is MATCH FULL: not rewritten', r.conname, r.conrelid::regclass; end if;
    if r.confupdtype in ('n', 'd') then raise exception 'foreign key % of % sets on update: not rewritten', r.conname, r.conrelid::regclass; end if;
    local_keys := '{}';
    ref_keys := '{}';
    for i in 1 .. cardinality(r.conkey) loop
      if r.conkey[i] = r.org_local and r.confkey[i] = r.org_ref then continue; end if;
      if r.conkey[i] = r.org_local or r.confkey[i] = r.org_ref then
        raise exception 'foreign key % of % pairs organization_id with another column', r.conname, r.conrelid::regclass;
      end if;
      local_keys := local_keys || r.conkey[i];
      ref_keys := ref_keys || r.confkey[i];
    end loop;
    set_cols := coalesce(nullif(r.confdelsetcols, '{}'), local_keys);
    fk_drops := fk_drops || format('alter table %s drop constraint %I', r.conrelid::regclass, r.conname);
    fk_creates := fk_creates || format('alter table %s add constraint %I foreign key (%s) references %s (%s) on delete %s on update %s%s%s%s',
      r.conrelid::regclass, r.conname,
      app_meta.column_list(r.conrelid, r.org_local || local_keys), r.confrelid::regclass,
      app_meta.column_list(r.confrelid, r.org_ref || ref_keys),
      app_meta.fk_action(r.confdeltype, case when r.confdeltype in ('n', 'd') then app_meta.column_list(r.conrelid, set_cols) end),
      app_meta.fk_action(r.confupdtype, null),
      case when r.condeferrable then ' deferrable' else '' end,
      case when r.condeferred then ' initially deferred' else '' end,
      case when not r.convalidated then ' not valid' else '' end);
  end loop;

  foreach stmt in array fk_drops || drops || creates || lookups || fk_creates loop
    execute stmt;
  end loop;
end
$$;

drop function app_meta.column_list(oid, int2[]);
drop function app_meta.fk_action("char", text);
