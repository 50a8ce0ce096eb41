-- Issue 31, point 2: when the database has the citus extension, distribute the schema (docs/scaling.md).
-- On plain PostgreSQL and PGlite (no citus extension) this migration does nothing.
--
-- Layout (every table of schema public falls in exactly one group):
--   distributed  organizations by id, and every tenant table (organization_id NOT NULL, the tables 0180 gave
--                organization-led keys) by organization_id, co-located with organizations;
--   local        tables that hold platform rows with a null organization_id and are written on every request,
--                so that copying them to every node (a reference table) would cost each write a two-phase
--                commit on all nodes: audit_logs, audit_chain_heads, audit_checkpoints (the hash chains are
--                sequential), domain_events, jobs (the outbox and queue the coordinator's workers drain),
--                consent_ledger and gdpr_restrictions (person-level rows, platform consents). They stay on the
--                coordinator until they get a platform organization id (docs/decisions.md);
--   reference    every other table: global catalogs (permissions, platform_provider_kinds, roles and their
--                permissions, the exercise library, consent purposes, platform service providers) and the
--                identities that every node's policies and triggers read (users, platform_memberships,
--                organization_domains). A copy on every node, written rarely.
--
-- What Citus needs and this does, in one transaction with the rest of the migrations:
--   1. policies: `(select app.f(...))` becomes `app.f(...)` (Citus refuses the sublink; the functions are
--      STABLE). A policy that still has a subquery over another table is refused on a distributed or reference
--      table: its expression moves, unchanged, into a STABLE SQL function app.rls_<policy>_<using|check>(...)
--      that takes the row's columns, and the policy calls it;
--   2. foreign keys from reference or local tables to distributed tables (to organizations, mostly) are dropped:
--      Citus cannot check them. Every other foreign key is dropped before and re-added after distribution, so
--      that the order of the create_*_table calls does not matter (the exercise library has a cycle);
--   3. create_reference_table for the reference group, then create_distributed_table for organizations and
--      every tenant table with colocate_with => 'organizations';
--   4. citus.enable_unsafe_triggers for this database: the triggers of tenant tables touch rows of the same
--      organization (co-located), the reference tables or nothing (docs/scaling.md lists them).

do $$
declare
  local_tables text[] := array['audit_logs', 'audit_chain_heads', 'audit_checkpoints', 'domain_events', 'jobs', 'consent_ledger',
                               'gdpr_restrictions'];
  dist oid[];
  ref oid[];
  r record;
  expr_using text;
  expr_check text;
  fks text[] := '{}';
  stmt text;
  fn text;
begin
  if not exists (select 1 from pg_extension where extname = 'citus') then
    return;
  end if;
  if exists (select 1 from pg_dist_partition where logicalrelid = 'public.organization_settings'::regclass) then
    return;
  end if;
  perform set_config('citus.multi_shard_modify_mode', 'sequential', true);
  perform set_config('citus.enable_unsafe_triggers', 'on', true);
  execute format('alter database %I set citus.enable_unsafe_triggers = on', current_database());
  -- The coordinator opens its connections to the workers as the current role, the request roles included
  -- (SET ROLE): they must be allowed to log in there. Citus propagates ALTER ROLE to the workers. On a
  -- production cluster the operator gives them a credential (pg_dist_authinfo or .pgpass; docs/scaling.md).
  -- Roles belong to the cluster, not to this database: only the first database to distribute changes them.
  for r in select rolname from pg_roles where rolname in ('app_rls', 'app_bypass', 'app_composer', 'app_telemetry') and not rolcanlogin
           order by rolname loop
    execute format('alter role %I login', r.rolname);
  end loop;

  select array_agg(c.oid order by c.relname) into dist
  from pg_class c
  where c.relnamespace = 'public'::regnamespace and c.relkind = 'r'
    and c.relname <> 'organization_domains' and exists (
      select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and a.attnotnull and not a.attisdropped);
  select array_agg(c.oid order by c.relname) into ref
  from pg_class c
  where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and not (c.oid = any (dist)) and not (c.relname = any (local_tables));

  -- 1. policies
  for r in
    select p.oid, p.polname, p.polrelid, c.relname, p.polcmd,
           pg_get_expr(p.polqual, p.polrelid) as q, pg_get_expr(p.polwithcheck, p.polrelid) as wc,
           (select string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum)
              from pg_attribute a where a.attrelid = p.polrelid and a.attnum > 0 and not a.attisdropped) as params,
           (select string_agg(quote_ident(a.attname), ', ' order by a.attnum)
              from pg_attribute a where a.attrelid = p.polrelid and a.attnum > 0 and not a.attisdropped) as args
    from pg_policy p join pg_class c on c.oid = p.polrelid
    where p.polrelid = any (dist || ref)
    order by c.relname, p.polname
  loop
    expr_using := regexp_replace(r.q, '\( SELECT (app\.\w+\([^()]*\)) AS \w+\)', '\1', 'g');
    expr_check := regexp_replace(r.wc, '\( SELECT (app\.\w+\([^()]*\)) AS \w+\)', '\1', 'g');
    foreach fn in array array['using', 'check'] loop
      stmt := case fn when 'using' then expr_using else expr_check end;
      continue when stmt is null or stmt !~* '\mselect\M';
      -- Inside the subquery the policy's own row is named by the table's name (relname.column): it becomes the
      -- function's name, which qualifies its parameters.
      stmt := format('create function app.%I(%s) returns boolean language sql stable set search_path = public, pg_catalog as %L',
        left(format('rls_%s_%s', r.polname, fn), 63), r.params,
        'select ' || regexp_replace(stmt, '(^|[^a-z0-9_."])' || r.relname || '\.', '\1' || left(format('rls_%s_%s', r.polname, fn), 63) || '.', 'g'));
      execute stmt;
      if fn = 'using' then
        expr_using := format('app.%I(%s)', left(format('rls_%s_%s', r.polname, fn), 63), r.args);
      else
        expr_check := format('app.%I(%s)', left(format('rls_%s_%s', r.polname, fn), 63), r.args);
      end if;
    end loop;
    if expr_using is distinct from r.q or expr_check is distinct from r.wc then
      execute format('alter policy %I on %s%s%s', r.polname, r.polrelid::regclass,
        case when expr_using is not null then format(' using (%s)', expr_using) else '' end,
        case when expr_check is not null then format(' with check (%s)', expr_check) else '' end);
    end if;
  end loop;

  -- 2. foreign keys
  for r in
    select c.conname, c.conrelid, c.confrelid, pg_get_constraintdef(c.oid) as def
    from pg_constraint c
    where c.contype = 'f' and c.connamespace = 'public'::regnamespace
    order by c.conrelid::regclass::text, c.conname
  loop
    -- Between two local tables a foreign key stays as it is.
    continue when not (r.conrelid = any (dist || ref)) and not (r.confrelid = any (dist || ref));
    execute format('alter table %s drop constraint %I', r.conrelid::regclass, r.conname);
    -- Citus checks no foreign key from a reference or local table to a distributed one, nor between a local
    -- table and a reference one unless the local table joins the metadata (it stays a plain table).
    continue when r.confrelid = any (dist) and not (r.conrelid = any (dist));
    continue when not (r.conrelid = any (dist || ref)) or not (r.confrelid = any (dist || ref));
    -- Citus refuses ON DELETE SET NULL (col) on a key that includes the distribution column (it would null
    -- organization_id): on Citus such a reference blocks the delete instead (no action), and the code that
    -- deletes the row clears the references first (docs/scaling.md lists them).
    if r.confrelid = any (dist) then
      r.def := regexp_replace(r.def, 'ON DELETE SET (NULL|DEFAULT)( \([^)]*\))?', 'ON DELETE NO ACTION');
    end if;
    fks := fks || format('alter table %s add constraint %I %s', r.conrelid::regclass, r.conname, r.def);
  end loop;

  -- 3. distribution. The rows already there (the seeded catalogs) are copied into the shards with the user
  -- triggers off: they were checked when written, and a trigger that writes elsewhere must not run again.
  for r in select unnest(dist || ref) as rel loop
    execute format('alter table %s disable trigger user', r.rel::regclass);
  end loop;
  for r in select unnest(ref) as rel loop
    perform create_reference_table(r.rel::regclass);
  end loop;
  -- organization_settings (one row per organization) anchors the co-location group of the tenant tables.
  perform create_distributed_table('public.organization_settings', 'organization_id', colocate_with => 'none');
  for r in select unnest(dist) as rel loop
    continue when r.rel = 'public.organization_settings'::regclass;
    perform create_distributed_table(r.rel::regclass, 'organization_id', colocate_with => 'public.organization_settings');
  end loop;
  for r in select unnest(dist || ref) as rel loop
    execute format('alter table %s enable trigger user', r.rel::regclass);
  end loop;
  foreach stmt in array fks loop
    execute stmt;
  end loop;
end
$$;
