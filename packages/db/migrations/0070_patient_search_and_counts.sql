-- Patient search and list totals on a large clinic (GET /v1/patients; docs/operations.md, "Patient, specialist
-- and service lists"). Three things:
--
-- 1. The person's email on the patients row (user_email), a copy of users.email kept by triggers that run with
--    the owner's rights, like memberships.email_sort of 0011: searching it needs it in the same index as the
--    names and phone, and reading it from the row replaces a call of app.patient_email() per listed row. The
--    copy is exactly as visible as that function's answer (the caller's own row, or staff with patients.view_org
--    or patients.view at the organization in scope), and it exists only on live rows: a soft delete (which every
--    erasure does first) clears it, and a revived row takes the current address again.
-- 2. search_text, the names, phone and email in one generated column, with a trigram GIN index led by the
--    organization (btree_gin), so that `q` (a case-insensitive substring, spec 4.1) reads the matching rows of
--    one clinic from the index instead of every row of it; app.patient_search() below runs it.
-- 3. patient_counts: live patients per organization, kept by statement-level triggers, for the exact
--    pagination.total of the unfiltered list without counting 100,000 rows per request.

create extension if not exists pg_trgm;
create extension if not exists btree_gin;

alter table patients add column user_email text;
-- The backfill is not an edit of the records: updated_at stays as it was.
alter table patients disable trigger patients_touch;
update patients p set user_email = u.email from users u where u.id = p.user_id and p.deleted_at is null;
alter table patients enable trigger patients_touch;

alter table patients add column search_text text generated always as (
  coalesce(first_name, '') || ' ' || coalesce(last_name, '') || E'\n' || coalesce(phone, '') || E'\n' || coalesce(user_email, '')
) stored;

create or replace function app.patients_user_email() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  if new.deleted_at is not null then
    new.user_email := null;
  elsif tg_op = 'INSERT' or new.user_id is distinct from old.user_id or old.deleted_at is not null then
    new.user_email := (select u.email from public.users u where u.id = new.user_id);
  end if;
  return new;
end $$;
create trigger patients_user_email before insert or update of user_id, deleted_at on patients
  for each row execute function app.patients_user_email();

create or replace function app.user_email_to_patients() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  update public.patients set user_email = new.email where user_id = new.id and deleted_at is null;
  return null;
end $$;
create trigger users_email_to_patients after update of email on users
  for each row when (old.email is distinct from new.email) execute function app.user_email_to_patients();

revoke all on function app.patients_user_email() from public;
revoke all on function app.user_email_to_patients() from public;

-- The list's access paths, all on live rows only (every list filters deleted_at is null): the page in each
-- sort order, and the search. They replace the index of 0022, which also held deleted rows.
drop index patients_org_created_idx;
create index patients_org_live_created_idx on patients (organization_id, created_at desc, id desc) where deleted_at is null;
create index patients_org_live_last_name_idx on patients (organization_id, lower(last_name), id) where deleted_at is null;
create index patients_org_live_first_name_idx on patients (organization_id, lower(first_name), id) where deleted_at is null;
create index patients_org_live_search_idx on patients using gin (organization_id, search_text gin_trgm_ops) where deleted_at is null;

-- The ids of the live patients of `org` whose name ("first last"), phone or email contains `pattern` (an ILIKE
-- pattern, containsPattern of http-kit). Why a definer function: under row-level security PostgreSQL may not
-- use a condition that is not leakproof (LIKE and ILIKE are not) as an index condition before the policies,
-- so for app_rls the trigram index would never be used and every row of the clinic would be read. Inside,
-- the same rule as patients_read_org applies (the organization in scope and patients.view_org or
-- patients.view, or a superadmin), and callers join the ids with patients under their own policies.
-- EXECUTE plans the search for the given pattern on each call: a generic plan cannot tell a selective
-- pattern, and chose the organization's whole index range (90 ms for 100,000 rows instead of under 1 ms).
-- search_text narrows through the index; the fields are then re-checked one by one, so that a match that
-- spans two of them does not count.
create or replace function app.patient_search(org uuid, pattern text) returns setof uuid
language plpgsql stable security definer set search_path = pg_catalog, pg_temp rows 100 as $$
begin
  if not (current_setting('role', true) = 'app_bypass'
          or (org = app.current_org_id() and (app.has_permission('patients.view_org') or app.has_permission('patients.view')))) then
    return;
  end if;
  return query execute
    $q$select p.id from public.patients p
       where p.organization_id = $1 and p.deleted_at is null and p.search_text ilike $2
         and ((coalesce(p.first_name, '') || ' ' || coalesce(p.last_name, '')) ilike $2 or p.phone ilike $2 or p.user_email ilike $2)$q$
    using org, pattern;
end $$;
revoke all on function app.patient_search(uuid, text) from public;
grant execute on function app.patient_search(uuid, text) to app_rls, app_bypass;

-- Live patients per organization, over eight rows per organization (slot = the backend's pid modulo 8), so
-- that concurrent transactions adding patients to one clinic seldom wait for each other's counter row. A
-- transaction keeps one connection, so it touches one slot per organization; each statement updates its
-- organizations in order, and the upsert adds to the row in place (never read, then written).
create table patient_counts (
  organization_id uuid not null references organizations (id) on delete cascade,
  slot smallint not null check (slot between 0 and 7),
  live bigint not null default 0,
  primary key (organization_id, slot)
);
select app.secure_table('patient_counts', 'select');
-- Who may list the patients may know how many there are: the read rule of patients_read_org for live rows.
create policy patient_counts_read on patient_counts for select to app_rls using (
  organization_id = (select app.current_org_id())
  and ((select app.has_permission('patients.view_org')) or (select app.has_permission('patients.view')))
);

insert into patient_counts (organization_id, slot, live)
select organization_id, 0, count(*) from patients where deleted_at is null group by organization_id;

-- One function for the three events: rows that stop being live count -1, rows that become live +1. An
-- organization being deleted (its patients go by cascade) is skipped: its counters go with it.
create or replace function app.patient_counts_apply() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  if tg_op = 'INSERT' then
    insert into public.patient_counts as c (organization_id, slot, live)
    select n.organization_id, (pg_backend_pid() % 8)::smallint, count(*) from new_rows n
    where n.deleted_at is null group by n.organization_id order by n.organization_id
    on conflict (organization_id, slot) do update set live = c.live + excluded.live;
  elsif tg_op = 'UPDATE' then
    insert into public.patient_counts as c (organization_id, slot, live)
    select d.organization_id, (pg_backend_pid() % 8)::smallint, sum(d.delta) from (
      select o.organization_id, -1 as delta from old_rows o where o.deleted_at is null
      union all
      select n.organization_id, 1 from new_rows n where n.deleted_at is null
    ) d
    group by d.organization_id having sum(d.delta) <> 0 order by d.organization_id
    on conflict (organization_id, slot) do update set live = c.live + excluded.live;
  else
    insert into public.patient_counts as c (organization_id, slot, live)
    select o.organization_id, (pg_backend_pid() % 8)::smallint, -count(*) from old_rows o
    where o.deleted_at is null and exists (select 1 from public.organizations g where g.id = o.organization_id)
    group by o.organization_id order by o.organization_id
    on conflict (organization_id, slot) do update set live = c.live + excluded.live;
  end if;
  return null;
end $$;
create trigger patient_counts_insert after insert on patients referencing new table as new_rows
  for each statement execute function app.patient_counts_apply();
create trigger patient_counts_update after update on patients referencing old table as old_rows new table as new_rows
  for each statement execute function app.patient_counts_apply();
create trigger patient_counts_delete after delete on patients referencing old table as old_rows
  for each statement execute function app.patient_counts_apply();

create or replace function app.patient_counts_truncate() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  delete from public.patient_counts;
  return null;
end $$;
create trigger patient_counts_truncate after truncate on patients for each statement execute function app.patient_counts_truncate();

revoke all on function app.patient_counts_apply() from public;
revoke all on function app.patient_counts_truncate() from public;
