-- The plan days of a window (0084) count the scheduled dates before it once: as written there the planner pulled
-- the count's subquery up into the window function's output and ran app.enrollment_scheduled_before for every date
-- of the window (a year's progress: 366 calls, about 120 ms). `offset 0` keeps it a subquery evaluated once.
-- Measured by bench/treatment-progress.ts.
create or replace function app.enrollment_schedule_window(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], e_from date, e_until date)
returns table (day date, plan_day integer) language sql stable as $$
  select s.d::date, (b.n + row_number() over (order by s.d))::integer
  from (select app.enrollment_scheduled_before(e_org, e_id, e_start, e_weekdays, greatest(e_from, e_start)) as n offset 0) b
  cross join lateral generate_series(greatest(e_from, e_start)::timestamp, e_until::timestamp, interval '1 day') s(d)
  where extract(isodow from s.d)::integer = any(e_weekdays)
    and not exists (select 1 from public.treatment_enrollment_pauses p
                    where p.organization_id = e_org and p.enrollment_id = e_id
                      and s.d::date >= p.paused_on and (p.resumed_on is null or s.d::date < p.resumed_on))
$$;
