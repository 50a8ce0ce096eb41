import { isUniqueViolation, prepared, type Queryable } from '@clinic/db';
import { errors, type Pagination, SqlWhere, type Sort } from '@clinic/http-kit';
import type { PlanContent } from './queries.ts';

export interface EnrollmentRow {
  id: string;
  organization_id: string;
  treatment_plan_id: string;
  plan_version: number;
  plan_name: string | null;
  patient_id: string;
  status: 'active' | 'paused' | 'cancelled';
  start_date: string;
  weekdays: number[];
  time_zone: string;
  status_changed_at: Date;
  cancel_reason: string | null;
  cancelled_at: Date | null;
  cancelled_by_principal_id: string | null;
  enrolled_by_principal_id: string;
  created_at: Date;
  updated_at: Date;
  /** The local date in the enrollment's zone, now. */
  today: string;
  total_days: number | null;
  /** Scheduled dates before today (plan days already due). */
  scheduled_before: number;
  /** Today's plan day, when today is a scheduled date. */
  today_plan_day: number | null;
}

/**
 * The enrollment with what its schedule says today: the local date in its zone, the plan days due before it
 * and today's plan day (counted in closed form, migration 0084, once: today's plan day is the next one when
 * today is a scheduled date), and its version's length. The version is joined under the caller's policies
 * (left join: staff who read enrollments without plan rights see no name).
 */
const SELECT = `select e.id, e.organization_id, e.treatment_plan_id, e.plan_version, v.plan_name, e.patient_id, e.status,
    to_char(e.start_date, 'YYYY-MM-DD') as start_date, e.weekdays::int[] as weekdays, e.time_zone, e.status_changed_at, e.cancel_reason,
    e.cancelled_at, e.cancelled_by_principal_id, e.enrolled_by_principal_id, e.created_at, e.updated_at,
    to_char(t.today, 'YYYY-MM-DD') as today, v.total_days, s.scheduled_before, s.today_plan_day
  from treatment_enrollments e
  cross join lateral (select (now() at time zone e.time_zone)::date as today) t
  left join lateral (select vv.snapshot->>'name' as plan_name,
                            (select count(*)::int from jsonb_path_query(vv.snapshot, '$.phases[*].days[*]')) as total_days
                     from treatment_plan_versions vv
                     where vv.organization_id = e.organization_id and vv.treatment_plan_id = e.treatment_plan_id and vv.version = e.plan_version) v on true
  cross join lateral (select app.enrollment_scheduled_before(e.organization_id, e.id, e.start_date, e.weekdays, t.today) as scheduled_before
                      offset 0) b
  cross join lateral (select b.scheduled_before,
                             case when t.today >= e.start_date and extract(isodow from t.today)::integer = any(e.weekdays)
                                       and not exists (select 1 from treatment_enrollment_pauses p
                                                       where p.organization_id = e.organization_id and p.enrollment_id = e.id
                                                         and t.today >= p.paused_on and (p.resumed_on is null or t.today < p.resumed_on))
                                  then b.scheduled_before + 1 end as today_plan_day) s`;

export async function insertEnrollment(
  tx: Queryable,
  orgId: string,
  e: { planId: string; version: number; patientId: string; startDate: string; weekdays: number[]; timeZone: string; by: string },
): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      `insert into treatment_enrollments (organization_id, treatment_plan_id, plan_version, patient_id, start_date, weekdays, time_zone,
         enrolled_by_principal_id)
       values ($1, $2, $3, $4, $5::date, $6::smallint[], $7, $8) returning id`,
      [orgId, e.planId, e.version, e.patientId, e.startDate, e.weekdays, e.timeZone, e.by],
    );
    return rows[0]!.id;
  } catch (err) {
    if (isUniqueViolation(err))
      throw errors.conflict(
        'already_enrolled',
        'The patient is already enrolled in this plan (active or paused): cancel that enrollment first.',
      );
    throw err;
  }
}

const FIND = `${SELECT} where e.organization_id = $1 and e.id = $2`;

export async function findEnrollment(tx: Queryable, orgId: string, id: string): Promise<EnrollmentRow | null> {
  const { rows } = await tx.query<EnrollmentRow>(FIND, [orgId, id], prepared(FIND));
  return rows[0] ?? null;
}

/** Locks the enrollment row for a change of state (the update policy decides who may). */
export async function lockEnrollment(tx: Queryable, orgId: string, id: string): Promise<{ status: string; patient_id: string } | null> {
  const { rows } = await tx.query<{ status: string; patient_id: string }>(
    'select status, patient_id from treatment_enrollments where organization_id = $1 and id = $2 for update',
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function listEnrollments(
  tx: Queryable,
  orgId: string,
  f: { patientId?: string | undefined; planId?: string | undefined; statuses?: string[] | undefined },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: EnrollmentRow[]; total: number }> {
  const where = new SqlWhere()
    .add('e.organization_id = ?', orgId)
    .optional('e.patient_id = ?', f.patientId)
    .optional('e.treatment_plan_id = ?', f.planId)
    .optional('e.status = any(?::text[])', f.statuses);
  const count = await tx.query<{ total: number }>(
    `select count(*)::int as total from treatment_enrollments e where ${where.text}`,
    where.params,
  );
  const { rows } = await tx.query<EnrollmentRow>(
    `${SELECT} where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** Active or paused enrollments in a plan (a plan with some is in use). */
export async function activeEnrollmentsOf(tx: Queryable, orgId: string, planId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    `select count(*)::int as n from treatment_enrollments where organization_id = $1 and treatment_plan_id = $2 and status in ('active', 'paused')`,
    [orgId, planId],
  );
  return rows[0]!.n;
}

export async function setStatus(
  tx: Queryable,
  orgId: string,
  id: string,
  status: string,
  cancel: { reason: string; by: string } | null,
): Promise<void> {
  await tx.query(
    `update treatment_enrollments set status = $3, status_changed_at = now(), cancel_reason = $4,
       cancelled_at = case when $3 = 'cancelled' then now() end, cancelled_by_principal_id = $5
     where organization_id = $1 and id = $2`,
    [orgId, id, status, cancel?.reason ?? null, cancel?.by ?? null],
  );
}

export async function setVersion(tx: Queryable, orgId: string, id: string, version: number): Promise<void> {
  await tx.query('update treatment_enrollments set plan_version = $3 where organization_id = $1 and id = $2', [orgId, id, version]);
}

/** Opens a pause from the enrollment's local today. */
export async function openPause(tx: Queryable, orgId: string, id: string, reason: string, by: string): Promise<void> {
  await tx.query(
    `insert into treatment_enrollment_pauses (organization_id, enrollment_id, paused_on, pause_reason, paused_by_principal_id)
     select e.organization_id, e.id, (now() at time zone e.time_zone)::date, $3, $4 from treatment_enrollments e
     where e.organization_id = $1 and e.id = $2`,
    [orgId, id, reason, by],
  );
}

/** Closes the open pause at the enrollment's local today (a pause opened and closed on one day covers no date). */
export async function closePause(tx: Queryable, orgId: string, id: string, reason: string | null, by: string): Promise<void> {
  await tx.query(
    `update treatment_enrollment_pauses p set resumed_on = greatest(p.paused_on, (now() at time zone e.time_zone)::date), resumed_at = now(),
       resume_reason = $3, resumed_by_principal_id = $4
     from treatment_enrollments e
     where e.organization_id = $1 and e.id = $2 and p.organization_id = e.organization_id and p.enrollment_id = e.id and p.resumed_on is null`,
    [orgId, id, reason, by],
  );
}

export interface PauseRow {
  id: string;
  paused_on: string;
  resumed_on: string | null;
  pause_reason: string;
  resume_reason: string | null;
  paused_by_principal_id: string;
  resumed_by_principal_id: string | null;
  paused_at: Date;
  resumed_at: Date | null;
}

export async function pausesOf(tx: Queryable, orgId: string, id: string): Promise<PauseRow[]> {
  const { rows } = await tx.query<PauseRow>(
    `select id, to_char(paused_on, 'YYYY-MM-DD') as paused_on, to_char(resumed_on, 'YYYY-MM-DD') as resumed_on, pause_reason, resume_reason,
       paused_by_principal_id, resumed_by_principal_id, paused_at, resumed_at
     from treatment_enrollment_pauses where organization_id = $1 and enrollment_id = $2 order by paused_at, id`,
    [orgId, id],
  );
  return rows;
}

/** The version an enrollment follows, as its patient or staff read it. */
export async function versionContent(tx: Queryable, orgId: string, planId: string, version: number): Promise<PlanContent | null> {
  const { rows } = await tx.query<{ snapshot: PlanContent }>(
    'select snapshot from treatment_plan_versions where organization_id = $1 and treatment_plan_id = $2 and version = $3',
    [orgId, planId, version],
  );
  return rows[0]?.snapshot ?? null;
}

/** The organization's default zone (organization_settings), for enrollments that name none. */
export async function defaultZone(tx: Queryable, orgId: string): Promise<string> {
  const { rows } = await tx.query<{ z: string }>('select default_timezone as z from organization_settings where organization_id = $1', [
    orgId,
  ]);
  return rows[0]?.z ?? 'UTC';
}

/** Whether PostgreSQL knows the zone (the runtime's and the database's zone data may differ). */
export async function zoneKnown(tx: Queryable, zone: string): Promise<boolean> {
  const { rows } = await tx.query('select 1 from pg_timezone_names where name = $1', [zone]);
  return rows.length > 0;
}

/** The local date in a zone, now, and a date `days` from it. */
export async function localToday(tx: Queryable, zone: string): Promise<string> {
  const { rows } = await tx.query<{ d: string }>(`select to_char((now() at time zone $1)::date, 'YYYY-MM-DD') as d`, [zone]);
  return rows[0]!.d;
}
