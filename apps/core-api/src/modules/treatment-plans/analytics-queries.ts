import { prepared, type Queryable } from '@clinic/db';
import type { Pagination } from '@clinic/http-kit';

export interface Adherence {
  days_due: number;
  days_completed: number;
  items_due: number;
  items_completed: number;
  items_skipped: number;
}

/**
 * An enrollment's adherence up to today (docs/telerehab.md "Analytics definitions"), counted where the rows are:
 * every scheduled date from its start to today within its plan (in the version it follows), with the items of that
 * plan day and how many the patient completed and skipped on that date. A date is due once it is past; today
 * counts once all its items are done. One row; zeros when nothing is due or the enrollment is not visible.
 */
const ADHERENCE = `select count(*)::int as days_due, (count(*) filter (where d.completed >= d.items))::int as days_completed,
       coalesce(sum(d.items), 0)::int as items_due, coalesce(sum(least(d.completed, d.items)), 0)::int as items_completed,
       coalesce(sum(d.skipped), 0)::int as items_skipped
from (
  select s.day, e.today, coalesce(v.items[s.plan_day], 0) as items, coalesce(c.completed, 0) as completed, coalesce(c.skipped, 0) as skipped
  from (select e.organization_id, e.id, e.start_date, e.weekdays, e.treatment_plan_id, e.plan_version, (now() at time zone e.time_zone)::date as today
        from treatment_enrollments e where e.organization_id = $1 and e.id = $2) e
  -- The items per plan day once (offset 0): pulled up, the function would parse the whole snapshot for every date.
  cross join lateral (select app.plan_items_per_day(tv.snapshot) as items from treatment_plan_versions tv
                      where tv.organization_id = e.organization_id and tv.treatment_plan_id = e.treatment_plan_id and tv.version = e.plan_version
                      offset 0) v
  cross join lateral app.enrollment_schedule(e.organization_id, e.id, e.start_date, e.weekdays, e.today) s
  left join (select scheduled_on, count(*) filter (where status = 'completed') as completed, count(*) filter (where status = 'skipped') as skipped
             from plan_sessions where organization_id = $1 and enrollment_id = $2 group by scheduled_on) c on c.scheduled_on = s.day
  where s.plan_day <= cardinality(v.items)
) d
where d.day < d.today or d.completed >= d.items`;

export async function adherence(tx: Queryable, orgId: string, enrollmentId: string): Promise<Adherence> {
  const { rows } = await tx.query<Adherence>(ADHERENCE, [orgId, enrollmentId], prepared(ADHERENCE));
  return rows[0]!;
}

export interface SessionPoint {
  id: string;
  scheduled_on: string;
  plan_day: number;
  exercise_id: string;
  rep_count: number | null;
  form_score: number | null;
  rom: Record<string, { range_deg: number | null; min_deg: number | null; max_deg: number | null }> | null;
  algorithm_version: string | null;
  pain: number | null;
  effort: number | null;
}

const COMPLETED = `select id, to_char(scheduled_on, 'YYYY-MM-DD') as scheduled_on, plan_day, exercise_id, rep_count, form_score, rom, algorithm_version, pain, effort
from plan_sessions where organization_id = $1 and enrollment_id = $2 and status = 'completed' order by scheduled_on, item_index`;

/** The completed sessions of an enrollment, in date order: the points of its series. */
export async function completedSessions(tx: Queryable, orgId: string, enrollmentId: string): Promise<SessionPoint[]> {
  const { rows } = await tx.query<SessionPoint>(COMPLETED, [orgId, enrollmentId], prepared(COMPLETED));
  return rows;
}

const NAMES = `select x.id, x.name from exercises x
where x.id in (select p.exercise_id from plan_sessions p where p.organization_id = $1 and p.enrollment_id = $2 and p.status = 'completed')`;

/** The names of the exercises of an enrollment's completed sessions. */
export async function sessionExerciseNames(tx: Queryable, orgId: string, enrollmentId: string): Promise<Map<string, string>> {
  const { rows } = await tx.query<{ id: string; name: string }>(NAMES, [orgId, enrollmentId], prepared(NAMES));
  return new Map(rows.map((r) => [r.id, r.name]));
}

export interface DashboardRow {
  enrollment_id: string;
  patient_id: string;
  treatment_plan_id: string;
  plan_version: number;
  plan_name: string | null;
  status: string;
  days_due: number;
  days_completed: number;
  items_due: number;
  items_completed: number;
  adherence: number | null;
  scored_sessions: number;
  form_mean: number | null;
  form_trend: number | null;
  last_completed_at: Date | null;
  falling_behind: boolean;
  worsening_form: boolean;
}

export interface DashboardFilters {
  windowDays: number;
  planId?: string | undefined;
  fallingBehind?: boolean | undefined;
  worseningForm?: boolean | undefined;
}

/** Below this share of due days completed in the window an enrollment is falling behind (docs/telerehab.md). */
export const BEHIND_BELOW = 0.7;
/** A form score falling by at least this many points across the window (least squares, at least 3 scored sessions) is worsening. */
export const WORSENING_POINTS = 10;
export const WORSENING_MIN_SESSIONS = 3;

/**
 * The clinic dashboard (one statement): each live enrollment's adherence over the last `windowDays` dates before
 * today (scheduled plan days whose items were all completed, and the items), the mean and least-squares trend of its
 * form scores there, and the flags; then the summary of all of them, then a page sorted worst first.
 *
 * Set-based (docs/telerehab.md "Performance"): `w` numbers each window's dates as plan days from the scheduled
 * dates before it (the closed form of app.enrollment_scheduled_before, inline: the weekdays from the start less
 * those in pauses, `pz`); `ws` reads every session of the windows once (plan_sessions_window_idx, index-only);
 * the per-day counts meet the schedule in a grouped union rather than a join, so that a misestimated row count
 * cannot make it a nested loop. Same answers as the per-enrollment schedule window of migration 0084.
 */
export async function dashboard(
  tx: Queryable,
  orgId: string,
  f: DashboardFilters,
  sortSql: string,
  page: Pagination,
): Promise<{ rows: DashboardRow[]; total: number; behind: number; worsening: number; enrollments: number }> {
  const { rows } = await tx.query<DashboardRow & { total: number; n_behind: number; n_worsening: number; n_all: number }>(
    `with e as materialized (
       select e.organization_id, e.id, e.patient_id, e.treatment_plan_id, e.plan_version, e.start_date, e.weekdays, e.status, t.today,
              t.today - $3::int as w_start, greatest(t.today - $3::int, e.start_date) as w_from
       from treatment_enrollments e cross join lateral (select (now() at time zone e.time_zone)::date as today) t
       where e.organization_id = $1 and e.status in ('active', 'paused') and ($2::uuid is null or e.treatment_plan_id = $2)
     ),
     v as materialized (
       select x.treatment_plan_id, x.plan_version, app.plan_items_per_day(tv.snapshot) as items, tv.snapshot ->> 'name' as plan_name
       from (select distinct treatment_plan_id, plan_version from e) x
       join treatment_plan_versions tv on tv.organization_id = $1 and tv.treatment_plan_id = x.treatment_plan_id and tv.version = x.plan_version
     ),
     pz as materialized (
       select p.enrollment_id, p.paused_on, p.resumed_on, e.start_date, e.weekdays, e.w_from
       from treatment_enrollment_pauses p join e on p.organization_id = e.organization_id and p.enrollment_id = e.id
       where p.paused_on < e.today
     ),
     w as materialized (
       select s.id, s.day, v.items[s.plan_day] as items
       from (
         select e.id, e.treatment_plan_id, e.plan_version, g.d::date as day,
                greatest(0, wk.n - coalesce(pb.n, 0))::int + (row_number() over (partition by e.id order by g.d))::int as plan_day
         from e
         cross join lateral (
           select coalesce(sum(case when e.w_from - e.start_date > x.k then (e.w_from - e.start_date - 1 - x.k) / 7 + 1 else 0 end), 0) as n
           from (select (wd - extract(isodow from e.start_date)::integer + 7) % 7 as k from unnest(e.weekdays) wd) x
         ) wk
         left join (
           select pz.enrollment_id,
                  sum(app.weekdays_between(greatest(pz.paused_on, pz.start_date), least(coalesce(pz.resumed_on, pz.w_from), pz.w_from), pz.weekdays)) as n
           from pz where pz.paused_on < pz.w_from group by pz.enrollment_id
         ) pb on pb.enrollment_id = e.id
         cross join lateral generate_series(e.w_from::timestamp, (e.today - 1)::timestamp, interval '1 day') g(d)
         where extract(isodow from g.d)::integer = any(e.weekdays)
           and not exists (select 1 from pz where pz.enrollment_id = e.id and g.d::date >= pz.paused_on
                             and (pz.resumed_on is null or g.d::date < pz.resumed_on))
       ) s
       join v on v.treatment_plan_id = s.treatment_plan_id and v.plan_version = s.plan_version
       where s.plan_day <= cardinality(v.items)
     ),
     ws as materialized (
       select p.enrollment_id, p.scheduled_on, p.status, p.form_score, p.completed_at, e.today
       from e join plan_sessions p on p.organization_id = e.organization_id and p.enrollment_id = e.id
       where p.scheduled_on >= e.w_start
     ),
     adh as (
       select d.id, count(*)::int as days_due, (count(*) filter (where d.completed >= d.items))::int as days_completed,
              sum(d.items)::int as items_due, sum(least(d.completed, d.items))::int as items_completed
       from (select u.id, u.day, max(u.items) as items, sum(u.completed) as completed
             from (select w.id, w.day, w.items, 0 as completed from w
                   union all
                   select ws.enrollment_id, ws.scheduled_on, null, 1 from ws where ws.scheduled_on < ws.today and ws.status = 'completed') u
             group by u.id, u.day) d
       where d.items is not null
       group by d.id
     ),
     fs as (
       select enrollment_id, count(*)::int as n, avg(form_score)::float8 as mean,
              regr_slope(form_score, extract(epoch from completed_at) / 86400)::float8 as slope, max(completed_at) as last
       from ws where status = 'completed' and form_score is not null
       group by enrollment_id
     ),
     r as (
       select e.id as enrollment_id, e.patient_id, e.treatment_plan_id, e.plan_version, v.plan_name, e.status,
              coalesce(adh.days_due, 0) as days_due, coalesce(adh.days_completed, 0) as days_completed,
              coalesce(adh.items_due, 0) as items_due, coalesce(adh.items_completed, 0) as items_completed,
              case when adh.days_due > 0 then adh.days_completed::float8 / adh.days_due end as adherence,
              coalesce(fs.n, 0) as scored_sessions, fs.mean as form_mean, fs.slope as form_trend, fs.last as last_completed_at,
              coalesce(adh.days_due > 0 and adh.days_completed::float8 / adh.days_due < $4::float8, false) as falling_behind,
              coalesce(fs.n >= $6::int and fs.slope * $3::int <= -($5::float8), false) as worsening_form,
              e.id as id
       from e left join v on v.treatment_plan_id = e.treatment_plan_id and v.plan_version = e.plan_version
       left join adh on adh.id = e.id left join fs on fs.enrollment_id = e.id
     ),
     f as (
       select * from r where ($7::boolean is null or falling_behind = $7) and ($8::boolean is null or worsening_form = $8)
     ),
     s as (
       select (select count(*) from f)::int as total, (select count(*) from r where r.falling_behind)::int as n_behind,
              (select count(*) from r where r.worsening_form)::int as n_worsening, (select count(*) from r)::int as n_all
     )
     -- One row even when the page is empty, so that the summary is always there.
     select s.total, s.n_behind, s.n_worsening, s.n_all, pg.*
     from s left join lateral (
       select f.*, row_number() over (order by ${sortSql}) as rn from f order by ${sortSql} limit $9 offset $10
     ) pg on true
     order by pg.rn`,
    [
      orgId,
      f.planId ?? null,
      f.windowDays,
      BEHIND_BELOW,
      WORSENING_POINTS,
      WORSENING_MIN_SESSIONS,
      f.fallingBehind ?? null,
      f.worseningForm ?? null,
      page.limit,
      page.offset,
    ],
  );
  const first = rows[0];
  return {
    rows: rows.filter((r) => r.enrollment_id !== null),
    total: first?.total ?? 0,
    behind: first?.n_behind ?? 0,
    worsening: first?.n_worsening ?? 0,
    enrollments: first?.n_all ?? 0,
  };
}
