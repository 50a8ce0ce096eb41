-- Members sorted by email (GET /v1/organizations/{id}/members?sort=email) without joining users:
-- the member's lower-cased email is kept on the membership row, with an index that serves the sort
-- and the page directly. Joining users instead evaluated the users row policy for every member of
-- the organization (bench/lists.ts: 100,000 members). Kept in step by triggers that run with the
-- owner's rights, because the inserting caller may not see a user who is not yet a member.

alter table memberships add column email_sort text;
update memberships m set email_sort = lower(u.email) from users u where u.id = m.user_id;

create or replace function app.membership_email_sort() returns trigger
language plpgsql security definer set search_path = public as $$
begin
  new.email_sort := (select lower(u.email) from users u where u.id = new.user_id);
  return new;
end $$;
create trigger memberships_email_sort before insert or update of user_id on memberships
  for each row execute function app.membership_email_sort();

create or replace function app.user_email_sort() returns trigger
language plpgsql security definer set search_path = public as $$
begin
  update memberships set email_sort = lower(new.email) where user_id = new.id;
  return null;
end $$;
create trigger users_email_sort after update of email on users
  for each row when (old.email is distinct from new.email) execute function app.user_email_sort();

revoke all on function app.membership_email_sort() from public;
revoke all on function app.user_email_sort() from public;

create index memberships_org_email_sort_idx on memberships (organization_id, email_sort, user_id);
