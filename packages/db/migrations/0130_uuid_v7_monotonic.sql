-- UUIDv7 ids monotonic within a session (RFC 9562 section 6.2): the 12 bits of rand_a hold the fraction of the
-- millisecond (method 3, where the clock has sub-millisecond precision, as PostgreSQL's has) and, when the clock
-- gives the same or an earlier value than the last id this session made (PGlite's clock ticks in milliseconds;
-- clocks step back), the last value plus one (method 1, a counter; a full counter moves into the next millisecond).
-- Ids made in one transaction therefore sort in the order they were made: the outbox dispatches events by id and
-- webhook consumers see event ids, so `appointment.created` comes before the `appointment.first_booked` emitted
-- after it in the same transaction. The last value lives in a session setting; a rolled-back transaction takes it
-- back with the ids it made, which no row holds.
create or replace function app.uuid_v7() returns uuid
language plpgsql volatile as $$
declare
  us bigint := floor(extract(epoch from clock_timestamp()) * 1000000)::bigint;
  ms bigint := us / 1000;
  sub int := ((us % 1000) * 4096 / 1000)::int;
  last text := current_setting('app.uuid_v7_last', true);
  last_ms bigint;
  last_sub int;
  b bytea;
begin
  if last is not null and last <> '' then
    last_ms := split_part(last, ':', 1)::bigint;
    last_sub := split_part(last, ':', 2)::int;
    if ms < last_ms or (ms = last_ms and sub <= last_sub) then
      ms := last_ms;
      sub := last_sub + 1;
      if sub > 4095 then
        ms := ms + 1;
        sub := 0;
      end if;
    end if;
  end if;
  perform set_config('app.uuid_v7_last', ms::text || ':' || sub::text, false);
  b := overlay(uuid_send(gen_random_uuid()) placing substring(int8send(ms) from 3) from 1 for 6);
  -- Version 7 in the high nibble of byte 6, then the 12 bits of rand_a; gen_random_uuid() set the variant.
  b := set_byte(b, 6, 112 | (sub >> 8));
  b := set_byte(b, 7, sub & 255);
  return encode(b, 'hex')::uuid;
end $$;
