-- Audit retention (spec 8: audit data 6 years) with the hash chain still verifying (docs/operations.md,
-- "Audit retention and checkpoints"). The worker's `audit.retention` sweep removes a chain's oldest entries
-- up to a cut position and, in the same transaction, records a checkpoint: the chain, the cut position and
-- the hash of the last removed entry, signed by the application with a key derived from MASTER_KEYS (the
-- database never sees the key). `audit verify` starts from the latest checkpoint whose signature verifies
-- instead of the genesis hash; entries missing at the head with no valid checkpoint, or a checkpoint that
-- does not verify, break the chain.

-- One row per cut (and per re-signing after a master key rotation). chain_id is the organization's id, or
-- the nil UUID for the platform chain, as in audit_chain_heads; it leads the key like organization_id does
-- on tenant tables. No foreign key: the checkpoint outlives what it describes, like the audit log.
create table audit_checkpoints (
  chain_id uuid not null,
  id uuid not null default app.uuid_v7(),
  -- Entries 1..cut_seq of the chain are gone; the chain now starts at cut_seq + 1.
  cut_seq bigint not null check (cut_seq > 0),
  -- The row_hash of entry cut_seq: entry cut_seq + 1 must name it as its prev_hash.
  last_hash text not null check (last_hash ~ '^[0-9a-f]{64}$'),
  -- Every removed entry was created before this instant (the sweep's clock minus the retention).
  older_than timestamptz not null,
  -- Entries removed by this cut (0 for a re-signed checkpoint).
  removed bigint not null check (removed >= 0),
  -- The master key (by id) whose derived key signed it, and the HMAC-SHA256 (hex) over the fields above
  -- (apps/core-api/src/modules/audit/checkpoints.ts: checkpointMessage).
  key_id text not null check (key_id ~ '^[A-Za-z0-9_-]{1,32}$'),
  signature text not null check (signature ~ '^[0-9a-f]{64}$'),
  created_at timestamptz not null,
  primary key (chain_id, id)
);
create index audit_checkpoints_chain_cut_idx on audit_checkpoints (chain_id, cut_seq desc);
-- Append-only for every role; RLS forced with no policy, and nothing granted: only the owner (the worker's
-- sweep, `audit verify`) reads or writes checkpoints, as for audit_chain_heads.
select app.append_only('audit_checkpoints');
revoke all on audit_checkpoints from app_rls, app_bypass;

-- The audit log's append-only trigger now lets one kind of delete through: inside app.audit_prune, which
-- sets a transaction-local marker naming the chain and the cut, and only for entries of that chain at or
-- before the cut, once a checkpoint at that cut exists. Updates stay forbidden; the trigger keeps its name.
-- The application roles have no DELETE privilege on audit_logs at all (0004), so the marker gives them
-- nothing; the owner could always disable the trigger, which verification catches (no valid checkpoint).
create or replace function app.audit_logs_append_only() returns trigger
language plpgsql as $$
declare
  marker text := current_setting('app.audit_prune', true);
begin
  if tg_op = 'DELETE' and marker is not null and marker <> ''
     and split_part(marker, ':', 1)::uuid = coalesce(old.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
     and old.chain_seq <= split_part(marker, ':', 2)::bigint
     and exists (select 1 from public.audit_checkpoints c
                  where c.chain_id = split_part(marker, ':', 1)::uuid and c.cut_seq = split_part(marker, ':', 2)::bigint) then
    return old;
  end if;
  raise exception '% is append-only: % is not allowed', tg_table_name, lower(tg_op)
    using errcode = 'insufficient_privilege';
end $$;

drop trigger audit_logs_append_only on audit_logs;
create trigger audit_logs_append_only before update or delete on audit_logs
  for each row execute function app.audit_logs_append_only();

-- The one way to remove audit entries. Checks what the database can check (the cut entry exists with the
-- hash the checkpoint names, everything up to it is older than older_than, the cut moves forward), writes
-- the checkpoint and deletes entries 1..cut of the chain, all in the caller's transaction. The signature
-- is checked by `audit verify`, which holds the key. Runs as the owner; executable by no application role.
create or replace function app.audit_prune(
  p_chain uuid, p_cut_seq bigint, p_last_hash text, p_older_than timestamptz,
  p_key_id text, p_signature text, p_created_at timestamptz
) returns bigint
language plpgsql security definer set search_path = pg_catalog, public as $$
declare
  prev_cut bigint;
  n_removed bigint;
begin
  -- One prune per chain at a time (appends are not held up: they lock the chain head, not this).
  perform pg_advisory_xact_lock(hashtext('audit_prune'), hashtext(p_chain::text));
  select max(cut_seq) into prev_cut from audit_checkpoints where chain_id = p_chain;
  if p_cut_seq <= coalesce(prev_cut, 0) then
    raise exception 'audit_prune: cut % is not after the last checkpoint (%)', p_cut_seq, prev_cut;
  end if;
  if not exists (select 1 from audit_logs
                  where coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid) = p_chain
                    and chain_seq = p_cut_seq and row_hash = p_last_hash and created_at < p_older_than) then
    raise exception 'audit_prune: entry % of chain % does not exist older than % with the given hash', p_cut_seq, p_chain, p_older_than;
  end if;
  if exists (select 1 from audit_logs
              where coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid) = p_chain
                and chain_seq <= p_cut_seq and created_at >= p_older_than) then
    raise exception 'audit_prune: chain % has entries up to % that are not older than %', p_chain, p_cut_seq, p_older_than;
  end if;
  select count(*) into n_removed from audit_logs
   where coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid) = p_chain and chain_seq <= p_cut_seq;
  -- The checkpoint first: the append-only trigger lets a delete through only once it exists.
  insert into audit_checkpoints (chain_id, cut_seq, last_hash, older_than, removed, key_id, signature, created_at)
  values (p_chain, p_cut_seq, p_last_hash, p_older_than, n_removed, p_key_id, p_signature, p_created_at);
  perform set_config('app.audit_prune', p_chain::text || ':' || p_cut_seq::text, true);
  delete from audit_logs
   where coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid) = p_chain and chain_seq <= p_cut_seq;
  perform set_config('app.audit_prune', '', true);
  return n_removed;
end $$;
revoke all on function app.audit_prune(uuid, bigint, text, timestamptz, text, text, timestamptz) from public, app_rls, app_bypass;
