-- The closed-form schedule counts of 0084 again: the same answers, in PL/pgSQL instead of SQL (docs/telerehab.md,
-- Performance). Neither SQL function is inlined (a subquery in the body prevents it), so PostgreSQL parsed,
-- rewrote and planned app.enrollment_scheduled_before's query on the pauses, with their row policies, on every
-- statement that called it: about 2 ms of each enrollment read and each progress answer as a clinic member
-- (0.2 ms as the owner), more than the rest of the statement. PL/pgSQL keeps the plan of its query for the life
-- of the connection (as 0071 does for the patient functions), and app.weekdays_between now loops over the
-- weekdays without a query at all. Measured by bench/treatment-progress.ts.

-- Dates d in [a, b) whose ISO weekday is in wd (each element of wd counted, as before).
create or replace function app.weekdays_between(a date, b date, wd smallint[]) returns integer
language plpgsql immutable parallel safe as $$
declare
  n integer := b - a;
  first integer := extract(isodow from a)::integer;
  k integer;
  total integer := 0;
  w smallint;
begin
  if n <= 0 or wd is null then
    return 0;
  end if;
  foreach w in array wd loop
    k := (w - first + 7) % 7;
    if n > k then
      total := total + (n - 1 - k) / 7 + 1;
    end if;
  end loop;
  return total;
end $$;

-- Scheduled dates of an enrollment before d: from its start, on its weekdays, outside its pauses (read as the
-- caller, under its policies, as before).
create or replace function app.enrollment_scheduled_before(e_org uuid, e_id uuid, e_start date, e_weekdays smallint[], d date)
returns integer language plpgsql stable as $$
declare
  paused bigint;
begin
  select sum(app.weekdays_between(greatest(p.paused_on, e_start), least(coalesce(p.resumed_on, d), d), e_weekdays)) into paused
  from public.treatment_enrollment_pauses p
  where p.organization_id = e_org and p.enrollment_id = e_id and p.paused_on < d;
  return greatest(0, app.weekdays_between(e_start, d, e_weekdays) - coalesce(paused, 0))::integer;
end $$;

-- An enrollment's pauses, found by the enrollment (the schedule functions and the dashboard read them so; only
-- the open one had an index).
create index treatment_enrollment_pauses_enrollment_idx on treatment_enrollment_pauses (organization_id, enrollment_id, paused_on);
