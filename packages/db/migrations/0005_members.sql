-- Members and roles of an organization (spec 2.4, 2.7, 4.2).

-- Adding a member by email must find a user who is not (yet) a member of the caller's organization,
-- and users_read_directory shows app_rls only users who already are. This function answers exactly
-- one question, "which user id has this email?", and only inside a request that holds
-- organizations.manage_members (or runs as app_bypass, a superadmin). It returns the id and nothing
-- else: no email list, no other column, no pattern match. It runs as its owner, the migration role,
-- which reads users past row-level security as the request-context query already does.
-- Only principals that may join the organization in scope are returned: humans, and agents or
-- service accounts whose home is this organization (spec 2.4).
create or replace function app.user_id_by_email(address text) returns uuid
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select u.id
  from public.users u
  where lower(u.email) = lower(address)
    and ((select app.has_permission('organizations.manage_members'))
         or current_setting('role', true) = 'app_bypass')
    and (u.kind = 'human' or u.home_organization_id = (select app.current_org_id()))
$$;
revoke all on function app.user_id_by_email(text) from public;
grant execute on function app.user_id_by_email(text) to app_rls, app_bypass;

-- The trigger that enforces "a non-human principal is a member of its own organization only" (spec
-- 2.4, migration 0002) reads the principal's users row. As an invoker's function it ran under the
-- inserting request's row-level security, where a principal who is not yet a member is invisible: it
-- read null and let every row through (an app_rls insert of another organization's agent succeeded).
-- As the owner it sees the row, whoever inserts.
alter function app.membership_principal_rule() security definer set search_path = public, pg_catalog, pg_temp;

-- users_read_directory, same rows, cheaper form. As "id in (select user_id from memberships where
-- organization_id = current)" the policy is an uncorrelated subquery that PostgreSQL answers by hashing
-- the organization's whole member list, on every statement that reads even one user row: for an
-- organization of 100,000 members that is milliseconds per statement (a page of 50 members, a member
-- read back after a write, a picker's first 20 matches). As a correlated EXISTS it is a probe of the
-- memberships primary key (user_id, organization_id) per user row actually read, so its cost follows
-- the rows a statement reads, not the size of the organization. OFFSET 0 keeps it that way: without it
-- the planner may still pick the hashed form, from row estimates that the policies' own unknown
-- settings make unreliable (bench/lists.ts, page 1 sorted by email in an organization of 100,000
-- members, on a busy 2-vCPU machine: the hashed form added about 60 ms to the statement, the probes
-- well under 1 ms).
drop policy users_read_directory on users;
create policy users_read_directory on users for select to app_rls using (
  ((select app.has_permission('organizations.view_directory')) or (select app.has_permission('organizations.manage_members')))
  and exists (select 1 from memberships m
              where m.user_id = users.id and m.organization_id = (select app.current_org_id())
              offset 0)
);

-- The member list of spec 4.1 (GET /v1/organizations/{id}/members). Its default order is newest
-- first with the user id as tie-breaker, and both its count(*) and its page evaluate the memberships
-- policies, which read user_id and organization_id. On (organization_id, created_at, user_id) the
-- count, the policies and the keys of a default-ordered page come from the index alone (an index-only
-- scan, walked backwards and stopped after OFFSET + LIMIT entries). It replaces memberships_org_idx,
-- whose columns are its prefix, so membership writes maintain as many indexes as before.
create index memberships_org_list_idx on memberships (organization_id, created_at, user_id);
drop index memberships_org_idx;
