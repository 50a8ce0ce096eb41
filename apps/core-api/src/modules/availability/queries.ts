import type { Queryable } from '@clinic/db';

export interface RuleInput {
  location_id: string;
  weekday: number;
  start: string;
  end: string;
  time_zone: string;
  effective_from: string | null;
  effective_until: string | null;
}
export interface ExceptionInput {
  kind: 'time_off' | 'extra_hours';
  date: string;
  location_id: string | null;
  start: string | null;
  end: string | null;
  time_zone: string;
  note: string | null;
}
export type RuleRow = RuleInput & { id: string };
export type ExceptionRow = ExceptionInput & { id: string };
export interface WindowRow {
  location_id: string;
  start: Date;
  end: Date;
}

/** Whose availability: a specialist's, or a room's or device's calendar (migration 0067). */
export type AvailabilityOwner = { column: 'specialist_id' | 'calendar_id'; id: string };
export const specialistOwner = (id: string): AvailabilityOwner => ({ column: 'specialist_id', id });
export const calendarOwner = (id: string): AvailabilityOwner => ({ column: 'calendar_id', id });

// Times leave the database as HH:MM (24:00 stays 24:00) and dates as YYYY-MM-DD, as they came in.
const hhmm = (c: string) => `to_char(${c}, 'HH24:MI')`;
const ymd = (c: string) => `to_char(${c}, 'YYYY-MM-DD')`;

export async function readRules(tx: Queryable, orgId: string, owner: AvailabilityOwner): Promise<RuleRow[]> {
  const { rows } = await tx.query<RuleRow>(
    `select id, location_id, weekday, ${hhmm('start_time')} as start, ${hhmm('end_time')} as "end", time_zone,
            ${ymd('effective_from')} as effective_from, ${ymd('effective_until')} as effective_until
     from availability_rules where organization_id = $1 and ${owner.column} = $2 order by position`,
    [orgId, owner.id],
  );
  return rows;
}

export async function readExceptions(tx: Queryable, orgId: string, owner: AvailabilityOwner): Promise<ExceptionRow[]> {
  const { rows } = await tx.query<ExceptionRow>(
    `select id, kind, ${ymd('date')} as date, location_id, ${hhmm('start_time')} as start, ${hhmm('end_time')} as "end", time_zone, note
     from availability_exceptions where organization_id = $1 and ${owner.column} = $2 order by position`,
    [orgId, owner.id],
  );
  return rows;
}

/** The locations the specialist is linked to, with their zones (the default zone of a rule there). */
export async function linkedLocations(tx: Queryable, orgId: string, specialistId: string): Promise<Map<string, string>> {
  const { rows } = await tx.query<{ id: string; timezone: string }>(
    `select l.id, l.timezone from specialist_locations sl
     join locations l on l.organization_id = sl.organization_id and l.id = sl.location_id
     where sl.organization_id = $1 and sl.specialist_id = $2`,
    [orgId, specialistId],
  );
  return new Map(rows.map((r) => [r.id, r.timezone]));
}

/** Replaces the whole availability: one delete and one insert per table, keeping the given order. */
export async function replaceAvailability(
  tx: Queryable,
  orgId: string,
  owner: AvailabilityOwner,
  rules: RuleInput[],
  exceptions: ExceptionInput[],
): Promise<void> {
  const c = owner.column;
  await tx.query(`delete from availability_rules where organization_id = $1 and ${c} = $2`, [orgId, owner.id]);
  await tx.query(`delete from availability_exceptions where organization_id = $1 and ${c} = $2`, [orgId, owner.id]);
  if (rules.length)
    await tx.query(
      `insert into availability_rules (organization_id, ${c}, position, location_id, weekday, start_time, end_time, time_zone,
         effective_from, effective_until)
       select $1, $2, r.position, r.location_id, r.weekday, r.start_time, r.end_time, r.time_zone, r.effective_from, r.effective_until
       from jsonb_to_recordset($3::jsonb) as r(position smallint, location_id uuid, weekday smallint, start_time time, end_time time,
         time_zone text, effective_from date, effective_until date)`,
      [orgId, owner.id, JSON.stringify(rules.map((r, i) => ({ ...r, position: i, start_time: r.start, end_time: r.end })))],
    );
  if (exceptions.length)
    await tx.query(
      `insert into availability_exceptions (organization_id, ${c}, position, kind, date, location_id, start_time, end_time, time_zone, note)
       select $1, $2, e.position, e.kind, e.date, e.location_id, e.start_time, e.end_time, e.time_zone, e.note
       from jsonb_to_recordset($3::jsonb) as e(position smallint, kind text, date date, location_id uuid, start_time time, end_time time,
         time_zone text, note text)`,
      [orgId, owner.id, JSON.stringify(exceptions.map((e, i) => ({ ...e, position: i, start_time: e.start, end_time: e.end })))],
    );
}

/**
 * The open windows of local dates from..to as instants: weekly rules and extra hours, minus time off
 * (at the location, or everywhere), merged per location. The database does the zone arithmetic
 * (`local timestamp AT TIME ZONE zone`), so 09:00 is 09:00 local on both sides of a daylight-saving
 * change; a local time that does not exist on a spring-forward day is read with the offset before the gap.
 */
export async function openWindows(tx: Queryable, orgId: string, owner: AvailabilityOwner, from: string, to: string): Promise<WindowRow[]> {
  const c = owner.column;
  const { rows } = await tx.query<WindowRow>(
    `with days as (
       select d::date as day from generate_series($3::date, $4::date, interval '1 day') d
     ), open as (
       select r.location_id, tstzrange((x.day + r.start_time) at time zone r.time_zone, (x.day + r.end_time) at time zone r.time_zone) as span
       from availability_rules r
       join days x on extract(isodow from x.day) = r.weekday
         and (r.effective_from is null or x.day >= r.effective_from)
         and (r.effective_until is null or x.day <= r.effective_until)
       where r.organization_id = $1 and r.${c} = $2
       union all
       select e.location_id, tstzrange((e.date + e.start_time) at time zone e.time_zone, (e.date + e.end_time) at time zone e.time_zone)
       from availability_exceptions e
       where e.organization_id = $1 and e.${c} = $2 and e.kind = 'extra_hours' and e.date between $3::date and $4::date
     ), closed as (
       select e.location_id,
              tstzrange((e.date + coalesce(e.start_time, time '00:00')) at time zone e.time_zone,
                        case when e.start_time is null then (e.date + 1)::timestamp at time zone e.time_zone
                             else (e.date + e.end_time) at time zone e.time_zone end) as span
       from availability_exceptions e
       where e.organization_id = $1 and e.${c} = $2 and e.kind = 'time_off' and e.date between $3::date - 1 and $4::date + 1
     ), merged as (
       select o.location_id,
              range_agg(o.span) - coalesce((select range_agg(c.span) from closed c where c.location_id is null or c.location_id = o.location_id),
                                           '{}'::tstzmultirange) as spans
       from open o group by o.location_id
     )
     select m.location_id, lower(w) as start, upper(w) as "end"
     from merged m cross join lateral unnest(m.spans) as w
     order by 2, 1`,
    [orgId, owner.id, from, to],
  );
  return rows;
}
