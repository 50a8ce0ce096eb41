-- A tamper-evident audit log. Each organization's entries (and the platform-scope entries,
-- chain id = the nil UUID) form a hash chain: every row stores its position (chain_seq), the hash of
-- the previous row and its own hash over prev_hash plus its canonical content. Editing, deleting or
-- reordering a row behind the application's back breaks the chain at that row, and
-- `npm run cli -- audit verify <org id|platform>` names the first broken link.
alter table audit_logs
  add column chain_seq bigint,
  add column prev_hash text,
  add column row_hash text;

-- The head of each chain. Inserts lock their chain's head row until commit: that serialises appends
-- per organization (a chain is a line), while organizations never wait for each other.
create table audit_chain_heads (
  chain_id uuid primary key,
  last_seq bigint not null,
  last_hash text not null
);
-- Only the trigger (SECURITY DEFINER, as the owner) touches heads; the application roles cannot.
select app.secure_table('audit_chain_heads', 'select');
revoke select on audit_chain_heads from app_rls, app_bypass;

-- The canonical content of a row: a JSON array, so no field can bleed into its neighbour; jsonb prints
-- its keys in a fixed order; created_at as integer microseconds (no time zone or format in play).
create or replace function app.audit_canonical(a audit_logs) returns text
language sql stable as $$
  select json_build_array(
    a.chain_seq, a.id, a.organization_id, a.actor_user_id, a.action, a.entity_type, a.entity_id,
    a.action_context, a.break_glass_id, a.data, host(a.ip),
    (extract(epoch from a.created_at) * 1000000)::bigint
  )::text
$$;

create or replace function app.audit_hash(prev_hash text, canonical text) returns text
language sql immutable as $$ select encode(sha256(convert_to(prev_hash || canonical, 'UTF8')), 'hex') $$;

-- Per row: the chain's head is locked (FOR UPDATE, until commit) on the transaction's first entry and
-- then carried in a transaction-local setting, so a statement inserting many rows costs the same per
-- row as one that inserts a single row (updating the head row once per entry made bulk inserts
-- quadratic). The statement-level trigger below writes the head back once per statement. A forged
-- setting cannot hide anything: the row would not link to its predecessor and verification fails.
create or replace function app.audit_chain_link() returns trigger
language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  chain uuid := coalesce(new.organization_id, '00000000-0000-0000-0000-000000000000'::uuid);
  setting text := 'app.audit_head_' || replace(chain::text, '-', '');
  cached text := current_setting(setting, true);
  seq bigint;
  prev text;
begin
  if cached is null or cached = '' then
    select last_seq, last_hash into seq, prev from public.audit_chain_heads where chain_id = chain for update;
    if not found then
      insert into public.audit_chain_heads (chain_id, last_seq, last_hash) values (chain, 0, repeat('0', 64)) on conflict do nothing;
      select last_seq, last_hash into seq, prev from public.audit_chain_heads where chain_id = chain for update;
    end if;
  else
    seq := split_part(cached, ':', 1)::bigint;
    prev := split_part(cached, ':', 2);
  end if;
  -- Whatever the inserter sent for these columns is overwritten: the chain is the database's to keep.
  new.chain_seq := seq + 1;
  new.prev_hash := prev;
  new.row_hash := app.audit_hash(new.prev_hash, app.audit_canonical(new));
  perform set_config(setting, new.chain_seq::text || ':' || new.row_hash, true);
  return new;
end $$;

create or replace function app.audit_chain_flush() returns trigger
language plpgsql security definer set search_path = pg_catalog, public as $$
begin
  update public.audit_chain_heads h
     set last_seq = split_part(current_setting('app.audit_head_' || replace(h.chain_id::text, '-', '')), ':', 1)::bigint,
         last_hash = split_part(current_setting('app.audit_head_' || replace(h.chain_id::text, '-', '')), ':', 2)
    from (select distinct coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid) as chain_id from inserted) c
   where h.chain_id = c.chain_id;
  return null;
end $$;

-- Existing rows join their chains in creation order (the append-only trigger is lifted for this
-- one-off backfill only, inside the migration's transaction).
alter table audit_logs disable trigger audit_logs_append_only;
do $$
declare r record; chain uuid; head record;
begin
  for r in select * from audit_logs order by created_at, id loop
    chain := coalesce(r.organization_id, '00000000-0000-0000-0000-000000000000'::uuid);
    insert into audit_chain_heads values (chain, 0, repeat('0', 64)) on conflict do nothing;
    select last_seq, last_hash into head from audit_chain_heads where chain_id = chain;
    r.chain_seq := head.last_seq + 1;
    r.prev_hash := head.last_hash;
    r.row_hash := app.audit_hash(r.prev_hash, app.audit_canonical(r::audit_logs));
    update audit_logs set chain_seq = r.chain_seq, prev_hash = r.prev_hash, row_hash = r.row_hash where id = r.id;
    update audit_chain_heads set last_seq = r.chain_seq, last_hash = r.row_hash where chain_id = chain;
  end loop;
end $$;
alter table audit_logs enable trigger audit_logs_append_only;

alter table audit_logs alter column chain_seq set not null, alter column prev_hash set not null, alter column row_hash set not null;
create trigger audit_logs_chain before insert on audit_logs for each row execute function app.audit_chain_link();
create trigger audit_logs_chain_flush after insert on audit_logs referencing new table as inserted
  for each statement execute function app.audit_chain_flush();
-- A fork (two rows at one position) is impossible, not merely detectable.
create unique index audit_logs_chain_idx on audit_logs ((coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid)), chain_seq);
-- Keyset pages of the audit-log API and its export: newest first within an organization.
create index audit_logs_org_created_id_idx on audit_logs (organization_id, created_at desc, id desc);

-- Default grant: the CSV export of the audit log (GET /v1/audit-logs/export) needs export.csv as well
-- as audit_log.view_org; clinic administrators hold both (template and every existing clone).
insert into role_permissions (role_id, permission_code, organization_id)
select r.id, 'export.csv', r.organization_id from roles r
where r.code = 'admin' and r.is_system
on conflict do nothing;
