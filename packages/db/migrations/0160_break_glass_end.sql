-- A superadmin may end a break-glass session before it expires (the console's "End session"). The table
-- stays history: the only change ever allowed is setting ended_at once, from null, on an open session; any
-- other update and every delete are refused as before, by any role.
alter table break_glass_sessions add column ended_at timestamptz;
alter table break_glass_sessions add constraint break_glass_sessions_ended_check
  check (ended_at is null or (ended_at >= created_at and ended_at <= expires_at));

create or replace function app.break_glass_end_only() returns trigger
language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.ended_at is null and new.ended_at is not null
     and (new.id, new.organization_id, new.superadmin_user_id, new.scope, new.reason_category, new.reason_text,
          new.created_at, new.expires_at) is not distinct from
         (old.id, old.organization_id, old.superadmin_user_id, old.scope, old.reason_category, old.reason_text,
          old.created_at, old.expires_at)
     and new.reason_ref is not distinct from old.reason_ref then
    return new;
  end if;
  raise exception '% is append-only: % is not allowed (only ending an open session)', tg_table_name, lower(tg_op)
    using errcode = 'insufficient_privilege';
end $$;

drop trigger break_glass_sessions_append_only on break_glass_sessions;
create trigger break_glass_sessions_append_only before update or delete on break_glass_sessions
  for each row execute function app.break_glass_end_only();
-- Superadmin requests run as app_bypass; only that column.
grant update (ended_at) on break_glass_sessions to app_bypass;
