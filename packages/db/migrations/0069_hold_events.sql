-- The hold stream (GET /v1/public/holds/{id}/stream; modules/scheduling/hold-streams.ts).
--
-- Every change of a hold's status or expiry is announced on the channel hold_events by the transaction
-- that makes it (a release, a booking, the sweep, a stream that finds its hold due, or an update by
-- hand), so every API instance that LISTENs hears it when, and only if, it commits. The payload is what
-- a stream needs to end without reading the row again; a stream whose hold is still live reads it.
create or replace function app.announce_hold_change() returns trigger
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  perform pg_notify('hold_events', json_build_object(
    'organization_id', new.organization_id, 'id', new.id, 'status', new.status, 'appointment_id', new.appointment_id)::text);
  return null;
end $$;
revoke all on function app.announce_hold_change() from public;
create trigger holds_announce after update of status, expires_at on holds for each row
  when (old.status is distinct from new.status or old.expires_at is distinct from new.expires_at)
  execute function app.announce_hold_change();

-- A hold is named by its id alone on the public routes (release, booking, stream): without this index
-- each of them read the whole table, whose primary key leads with the organization.
create index holds_id_idx on holds (id);
