-- Progress and the clinic dashboard: schedule arithmetic that does not walk an enrollment's
-- whole history. Plan day n is still the n-th scheduled date (migration 0082); the number of scheduled dates
-- before a date is counted in closed form (weekday occurrences minus those inside pauses), so a window of
-- 14 days costs 14 dates whatever the start, and an enrollment's state today costs no series at all.

-- Dates d in [a, b) whose ISO weekday is in wd.
create or replace function app.weekdays_between(a date, b date, wd smallint[]) returns integer
language sql immutable parallel safe as $$
  select case when b <= a then 0 else coalesce((
    select sum(case when (b - a) > x.k then ((b - a) - 1 - x.k) / 7 + 1 else 0 end)::integer
    from (select (w - extract(isodow from a)::integer + 7) % 7 as k from unnest(wd) w) x), 0) end
$$;

-- Scheduled dates of an enrollment before d: from its start, on its weekdays, outside its pauses (which never
-- overlap: one is open at a time, and a pause opens no earlier than the last one closed).
create or replace function app.enrollment_scheduled_before(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], d date)
returns integer language sql stable as $$
  select greatest(0, app.weekdays_between(e_start, d, e_weekdays) - coalesce((
    select sum(app.weekdays_between(greatest(p.paused_on, e_start), least(coalesce(p.resumed_on, d), d), e_weekdays))
    from public.treatment_enrollment_pauses p
    where p.organization_id = e_org and p.enrollment_id = e_id and p.paused_on < d), 0))::integer
$$;

-- The scheduled dates of an enrollment within [e_from, e_until], numbered as plan days.
create or replace function app.enrollment_schedule_window(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], e_from date, e_until date)
returns table (day date, plan_day integer) language sql stable as $$
  select s.d::date, (b.n + row_number() over (order by s.d))::integer
  from (select app.enrollment_scheduled_before(e_org, e_id, e_start, e_weekdays, greatest(e_from, e_start)) as n) b
  cross join lateral generate_series(greatest(e_from, e_start)::timestamp, e_until::timestamp, interval '1 day') s(d)
  where extract(isodow from s.d)::integer = any(e_weekdays)
    and not exists (select 1 from public.treatment_enrollment_pauses p
                    where p.organization_id = e_org and p.enrollment_id = e_id
                      and s.d::date >= p.paused_on and (p.resumed_on is null or s.d::date < p.resumed_on))
$$;

-- The number of items of each plan day of a version (plan day n is element n), for adherence.
create or replace function app.plan_items_per_day(snapshot jsonb) returns integer[]
language sql immutable parallel safe as $$
  select coalesce(array_agg(jsonb_array_length(d.day -> 'items') order by p.ord, d.ord), '{}')
  from jsonb_array_elements(snapshot -> 'phases') with ordinality p(phase, ord)
  cross join lateral jsonb_array_elements(p.phase -> 'days') with ordinality d(day, ord)
$$;

-- The dashboard reads the completed, scored sessions of a window per enrollment.
create index plan_sessions_scored_idx on plan_sessions (organization_id, enrollment_id, scheduled_on) include (form_score, completed_at)
  where status = 'completed' and form_score is not null;
