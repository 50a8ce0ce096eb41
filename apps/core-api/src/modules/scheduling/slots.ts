import type { Queryable } from '@clinic/db';

/** What the slots of one service are computed from (all instants; the zones come from the locations). */
export interface SlotQuery {
  orgId: string;
  serviceId: string;
  /** Specialists to consider (already narrowed to those who deliver the service). */
  specialistIds: string[];
  /** Only windows at these locations (the service's, narrowed by the request); null: any. */
  locationIds: string[] | null;
  /** [from, to) of slot starts. */
  from: Date;
  to: Date;
  durationMinutes: number;
  bufferBeforeMinutes: number;
  bufferAfterMinutes: number;
  stepMinutes: number;
  /** Booking rules: no start before `earliest` nor at or after `latest`. */
  earliest: Date;
  latest: Date;
  /** A hold whose own claim does not count against it (re-checking a hold's slot at booking). */
  ignoreHoldId?: string | null;
}

export interface SlotRow {
  specialist_id: string;
  location_id: string;
  start: Date;
  end: Date;
  time_zone: string;
}

/**
 * SQL: the instant of local timestamp `ts` in zone `z`, the first moment the clock shows `ts` or a later
 * time: the earlier of a fall-back's two occurrences, and for a time a spring-forward skips, the moment of
 * the change. PostgreSQL's own reading (`ts at time zone z`) is that instant unless `ts` is skipped (the
 * reading does not show `ts`) or the clocks changed in the three hours before the reading; then the minute
 * is searched. PostgreSQL takes a repeated time's second occurrence and reads a skipped time with the
 * offset before the change (03:30 in Bucharest's gap would be 04:30, so that a rule 03:30-04:15 ended
 * before it began). No subquery on the usual path: each one costs the statement planning time.
 */
const instant = (ts: string, z: string) => {
  const t = `((${ts}) at time zone ${z})`;
  return `case when (${t} at time zone ${z}) = (${ts}) and ((${t} - interval '3 hours') at time zone ${z}) = (${ts}) - interval '3 hours' then ${t}
         else (select min(g) from generate_series(${t} - interval '3 hours', ${t}, interval '1 minute') g where (g at time zone ${z}) >= (${ts})) end`;
};

/**
 * The free slots, in one statement (docs/scheduling.md "Slots"):
 * 1. the open windows of each specialist: weekly rules and extra hours minus time off, in each rule's
 *    IANA zone, for the local days that can touch [from, to) and the longest slot after it (migration
 *    0060's arithmetic). A wall-clock time is the first moment the clock shows it or a later time
 *    (`instant`): a time a spring-forward skips is the moment of the change, a time a fall-back repeats is
 *    its first occurrence. So 09:00 stays 09:00 across a daylight-saving change, a rule 03:30-04:15 on
 *    the night Bucharest skips 03:00-04:00 is open 04:00-04:15, and 01:00-03:00 on the night New York
 *    repeats 01:00-02:00 is open three hours;
 * 2. candidate starts on the grid: in each window, and again from each local midnight inside it (in the
 *    location's zone), the first minute whose local time is a multiple of `step` minutes after midnight,
 *    then every `step` minutes of elapsed time. A window that spans a change keeps its rhythm in elapsed
 *    time; one that opens just before a change starts at the first grid time on the clock after it
 *    (01:40-05:00 on a 45-minute grid the night New York skips 02:00-03:00: 03:00, 03:45). Starting
 *    again at midnight makes a day's slots independent of the range asked: a window that began before
 *    the days computed would otherwise set the grid from wherever the computation cut it, and a slot
 *    shown for a long range could be refused when held (its check computes a one-minute range);
 * 3. a slot is [start, start + duration) inside one window, within the booking rules and the range,
 *    whose occupied time [start - buffer before, end + buffer after) meets no active claim of the
 *    specialist's calendar (booked appointments with their buffers, holds until they expire): its start
 *    lies in none of the claims' forbidden starts (a - duration - buffer after, b + buffer before).
 */
export async function freeSlots(tx: Queryable, s: SlotQuery): Promise<SlotRow[]> {
  const { rows } = await tx.query<SlotRow>(
    `with sp as (
       select c.specialist_id, c.id as calendar_id from calendars c
       where c.organization_id = $1 and c.specialist_id = any($2::uuid[])
     ),
     days as (
       select d::date as day from generate_series(($4::timestamptz at time zone 'UTC')::date - 1, ($5::timestamptz at time zone 'UTC')::date + 2, interval '1 day') d
     ),
     edges as (
       select r.specialist_id, r.location_id, true as opens, r.time_zone as z, x.day + r.start_time as a, x.day + r.end_time as b
       from availability_rules r
       join days x on extract(isodow from x.day) = r.weekday
         and (r.effective_from is null or x.day >= r.effective_from) and (r.effective_until is null or x.day <= r.effective_until)
       where r.organization_id = $1 and r.specialist_id = any($2::uuid[]) and ($3::uuid[] is null or r.location_id = any($3::uuid[]))
       union all
       select e.specialist_id, e.location_id, e.kind = 'extra_hours', e.time_zone, e.date + coalesce(e.start_time, time '00:00'),
              case when e.start_time is null then (e.date + 1)::timestamp else e.date + e.end_time end
       from availability_exceptions e join days x on x.day = e.date
       where e.organization_id = $1 and e.specialist_id = any($2::uuid[])
         and (e.kind = 'time_off' or $3::uuid[] is null or e.location_id = any($3::uuid[]))
     ),
     spans as (
       select e.specialist_id, e.location_id, e.opens, tstzrange(${instant('e.a', 'e.z')}, ${instant('e.b', 'e.z')}) as span
       from edges e
     ),
     open as (select specialist_id, location_id, span from spans where opens),
     closed as (select specialist_id, location_id, span from spans where not opens),
     windows as (
       select o.specialist_id, o.location_id, w
       from (select o.specialist_id, o.location_id,
                    range_agg(o.span) - coalesce((select range_agg(c.span) from closed c
                                                  where c.specialist_id = o.specialist_id and (c.location_id is null or c.location_id = o.location_id)),
                                                 '{}'::tstzmultirange) as spans
             from open o group by o.specialist_id, o.location_id) o
       cross join lateral unnest(o.spans) as w
       where w && tstzrange($4, $5)
     ),
     busy as (
       -- The starts each specialist's claims forbid: a claim [a, b) meets the occupied time
       -- [s - buffer before, s + duration + buffer after) of a start s in (a - duration - buffer after, b + buffer before).
       select sp.specialist_id,
              range_agg(tstzrange(lower(cl.during) - make_interval(mins => $6::int + $8::int), upper(cl.during) + make_interval(mins => $7::int), '()')) as b
       from sp join calendar_claims cl on cl.organization_id = $1 and cl.calendar_id = sp.calendar_id
       where cl.active and (cl.expires_at is null or cl.expires_at > now()) and cl.during && tstzrange($4::timestamptz - make_interval(mins => $7::int), $5::timestamptz + make_interval(mins => $6::int + $8::int))
         and ($12::uuid is null or cl.hold_id is distinct from $12::uuid)
       group by sp.specialist_id
     ),
     -- Each window in pieces, one a local day of the location's zone (k: the local times of its ends): a
     -- piece's start and end, and the local time of its start. Materialized: planned on its own, the
     -- statement plans in half the time.
     pieces as materialized (
       select w.specialist_id, w.location_id, l.timezone, w.w,
              case when d <= k.lo then lower(w.w) else ${instant('d', 'l.timezone')} end as ps,
              case when d = date_trunc('day', k.hi) then upper(w.w) else ${instant("d + interval '1 day'", 'l.timezone')} end as pe,
              case when d <= k.lo then k.lo else ${instant('d', 'l.timezone')} at time zone l.timezone end as local
       from windows w
       join locations l on l.organization_id = $1 and l.id = w.location_id
       cross join lateral (select lower(w.w) at time zone l.timezone as lo, (upper(w.w) - interval '1 minute') at time zone l.timezone as hi) k
       cross join lateral generate_series(date_trunc('day', k.lo), date_trunc('day', k.hi), interval '1 day') d
     ),
     -- On each piece, the grid points that start in the range and within the booking rules. c0 is the
     -- first unless the clocks change between the piece's start and it: then the minute is searched.
     cand as (
       select p.specialist_id, p.location_id, p.timezone, s as start
       from pieces p
       cross join lateral (select p.ps + make_interval(mins => (($9::int - (extract(hour from p.local) * 60 + extract(minute from p.local))::int % $9::int) % $9::int)) as c0) f
       cross join lateral (select case when (f.c0 at time zone p.timezone) - p.local = f.c0 - p.ps then f.c0
                                       else (select min(g) from generate_series(p.ps, p.ps + make_interval(mins => 2 * $9::int + 180), interval '1 minute') g
                                             where (extract(hour from g at time zone p.timezone) * 60 + extract(minute from g at time zone p.timezone))::int % $9::int = 0) end as first) x
       cross join lateral generate_series(
         x.first + make_interval(mins => $9::int * greatest(0, ceil(extract(epoch from greatest($4::timestamptz, $10::timestamptz) - x.first) / (60 * $9::int)))::int),
         least(p.pe - interval '1 minute', upper(p.w) - make_interval(mins => $6::int), $5::timestamptz - interval '1 microsecond', $11::timestamptz - interval '1 microsecond'),
         make_interval(mins => $9::int)) s
     )
     select c.specialist_id, c.location_id, c.start, c.start + make_interval(mins => $6::int) as "end", c.timezone as time_zone
     from cand c left join busy b on b.specialist_id = c.specialist_id
     where not coalesce(b.b @> c.start, false)
     order by c.start, c.specialist_id, c.location_id`,
    [
      s.orgId,
      s.specialistIds,
      s.locationIds,
      s.from,
      s.to,
      s.durationMinutes,
      s.bufferBeforeMinutes,
      s.bufferAfterMinutes,
      s.stepMinutes,
      s.earliest,
      s.latest,
      s.ignoreHoldId ?? null,
    ],
    { name: 'free_slots' },
  );
  return rows;
}
