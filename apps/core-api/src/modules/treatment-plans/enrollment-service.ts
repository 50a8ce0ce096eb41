import { listFilters } from './list-filters.ts';
import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { canonicalTimeZone } from '../locations/validation.ts';
import * as eq from './enrollment-queries.ts';
import * as q from './queries.ts';
import { ENROLLMENT_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No enrollment with this id is visible to you.');

/** An enrollment as responses show it: its row and what its schedule says today. */
export function enrollmentView(r: eq.EnrollmentRow) {
  const { today, total_days, scheduled_before, today_plan_day, ...rest } = r;
  const total = total_days ?? null;
  return {
    ...rest,
    schedule: {
      today,
      total_days: total,
      days_due: total === null ? scheduled_before : Math.min(scheduled_before, total),
      today_plan_day: today_plan_day !== null && (total === null || today_plan_day <= total) ? today_plan_day : null,
      finished: total !== null && scheduled_before >= total,
    },
  };
}

const dayNumber = (d: string) => {
  const [y, m, dd] = d.split('-').map(Number) as [number, number, number];
  const t = Date.UTC(y, m - 1, dd);
  const back = new Date(t);
  return back.getUTCFullYear() === y && back.getUTCMonth() === m - 1 && back.getUTCDate() === dd ? t / 86_400_000 : null;
};

/**
 * POST /v1/treatment-plans/{id}/enrollments (treatment_plans.assign): the patient follows a published version
 * (the latest unless named) from a start date, on weekdays, in a zone. A patient plan enrolls its own patient
 * only. At most one active or paused enrollment per patient and plan (409 already_enrolled, a unique index).
 */
export async function enroll(
  tx: Queryable,
  actor: OrgActor,
  planId: string,
  body: {
    patient_id: string;
    version?: number | undefined;
    start_date?: string | undefined;
    weekdays?: number[] | undefined;
    time_zone?: string | undefined;
  },
) {
  const plan = await q.findPlan(tx, actor.orgId, planId);
  if (!plan) throw errors.notFound('No treatment plan with this id in this organization.');
  if (plan.version === 0)
    throw errors.conflict('plan_not_published', 'Patients are enrolled in a published version: publish the plan first.');
  const version = body.version ?? plan.version;
  if (!(await q.planVersions.find(tx, actor.orgId, planId, version)))
    throw errors.notFound(`This treatment plan has no version ${version}.`);
  const patientId = body.patient_id.toLowerCase();
  const fields: Record<string, string> = {};
  if (plan.kind === 'patient' && plan.patient_id !== patientId) fields.patient_id = "a patient's plan enrolls that patient only";
  else if (!(await q.livePatient(tx, actor.orgId, patientId))) fields.patient_id = 'no patient record with this id at the organization';
  const zone = body.time_zone === undefined ? await eq.defaultZone(tx, actor.orgId) : canonicalTimeZone(body.time_zone.trim());
  if (!zone || !(await eq.zoneKnown(tx, zone))) fields.time_zone = 'must be an IANA time zone name such as Europe/Bucharest';
  const today = await eq.localToday(tx, zone && !fields.time_zone ? zone : 'UTC');
  const start = body.start_date ?? today;
  const startDay = dayNumber(start);
  if (startDay === null) fields.start_date = 'is not a real calendar date';
  else if (Math.abs(startDay - dayNumber(today)!) > 366) fields.start_date = 'must be within a year of today';
  if (Object.keys(fields).length) throw errors.validation(fields);
  const weekdays = [...new Set(body.weekdays ?? [1, 2, 3, 4, 5, 6, 7])].sort();
  const id = await eq.insertEnrollment(tx, actor.orgId, {
    planId,
    version,
    patientId,
    startDate: start,
    weekdays,
    timeZone: zone!,
    by: actor.ctx.principalId,
  });
  await audit(tx, actor, 'enrollment.created', 'treatment_enrollment', id, {
    patient_id: patientId,
    treatment_plan_id: planId,
    plan_version: version,
    start_date: start,
    weekdays,
    time_zone: zone,
  });
  await emit(tx, actor.orgId, 'enrollment.created', { id, patient_id: patientId, treatment_plan_id: planId, plan_version: version });
  return enrollmentView((await eq.findEnrollment(tx, actor.orgId, id))!);
}

export async function getEnrollment(tx: Queryable, orgId: string, id: string) {
  const row = await eq.findEnrollment(tx, orgId, id);
  if (!row) throw notFound();
  const [pauses, plan] = [await eq.pausesOf(tx, orgId, id), await eq.versionContent(tx, orgId, row.treatment_plan_id, row.plan_version)];
  return { ...enrollmentView(row), pauses, plan };
}

const STATUSES = ['active', 'paused', 'cancelled'];

export async function listEnrollments(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, ENROLLMENT_SORT);
  const { ids, statuses } = listFilters(query, ['patient_id', 'treatment_plan_id'], STATUSES);
  const { rows, total } = await eq.listEnrollments(
    tx,
    orgId,
    { patientId: ids.patient_id, planId: ids.treatment_plan_id, statuses },
    sort,
    page,
  );
  return listEnvelope(rows.map(enrollmentView), page, total);
}

/** The states each move starts from; anything else is 409 invalid_transition. */
const FROM = { pause: ['active'], resume: ['paused'], cancel: ['active', 'paused'], migrate: ['active', 'paused'] } as const;

async function locked(tx: Queryable, actor: OrgActor, id: string, move: 'pause' | 'resume' | 'cancel' | 'migrate') {
  // Read under the read policy first, so that a patient touching another's enrollment hears 404, not a lock failure.
  const seen = await eq.findEnrollment(tx, actor.orgId, id);
  if (!seen) throw notFound();
  const row = await eq.lockEnrollment(tx, actor.orgId, id);
  if (!row) throw errors.forbidden('This needs the treatment_plans.assign permission.');
  if (!(FROM[move] as readonly string[]).includes(row.status))
    throw errors.conflict(
      'invalid_transition',
      `An enrollment that is ${row.status} cannot be ${move === 'migrate' ? 'migrated' : `${move}d`}.`,
    );
  return seen;
}

/** POST .../pause: active -> paused from today (local); the patient's dates from today are not scheduled until it resumes. */
export async function pause(tx: Queryable, actor: OrgActor, id: string, reason: string) {
  const seen = await locked(tx, actor, id, 'pause');
  const why = reason.trim();
  if (!why) throw errors.validation({ reason: 'must not be blank' });
  await eq.openPause(tx, actor.orgId, id, why, actor.ctx.principalId);
  await eq.setStatus(tx, actor.orgId, id, 'paused', null);
  return changed(tx, actor, seen, 'paused', { reason: why });
}

export async function resume(tx: Queryable, actor: OrgActor, id: string, reason: string | undefined) {
  const seen = await locked(tx, actor, id, 'resume');
  const why = reason?.trim() || null;
  await eq.closePause(tx, actor.orgId, id, why, actor.ctx.principalId);
  await eq.setStatus(tx, actor.orgId, id, 'active', null);
  return changed(tx, actor, seen, 'resumed', { reason: why });
}

/** POST .../cancel (staff): active or paused -> cancelled, with a reason; an open pause ends today. */
export async function cancel(tx: Queryable, actor: OrgActor, id: string, reason: string) {
  const seen = await locked(tx, actor, id, 'cancel');
  const why = reason.trim();
  if (!why) throw errors.validation({ reason: 'must not be blank' });
  if (seen.status === 'paused') await eq.closePause(tx, actor.orgId, id, null, actor.ctx.principalId);
  await eq.setStatus(tx, actor.orgId, id, 'cancelled', { reason: why, by: actor.ctx.principalId });
  return changed(tx, actor, seen, 'cancelled', { reason: why });
}

/** POST .../migrate (staff): the enrollment follows another published version of its plan from now on. */
export async function migrate(tx: Queryable, actor: OrgActor, id: string, version: number) {
  const seen = await locked(tx, actor, id, 'migrate');
  if (seen.plan_version === version) return getEnrollment(tx, actor.orgId, id);
  if (!(await q.planVersions.find(tx, actor.orgId, seen.treatment_plan_id, version)))
    throw errors.notFound(`This treatment plan has no version ${version}.`);
  await eq.setVersion(tx, actor.orgId, id, version);
  return changed(tx, actor, seen, 'migrated', { from_version: seen.plan_version, to_version: version });
}

async function changed(tx: Queryable, actor: OrgActor, before: eq.EnrollmentRow, what: string, data: Record<string, unknown>) {
  // Reasons are free text, often about the person's health: they stay on the enrollment (which erasure
  // removes), never in the append-only trail (docs/decisions.md, "Telerehab").
  const { reason, ...rest } = data;
  await audit(tx, actor, `enrollment.${what}`, 'treatment_enrollment', before.id, {
    patient_id: before.patient_id,
    from: before.status,
    ...rest,
    ...(reason !== undefined ? { reason_given: reason !== null } : {}),
  });
  const ids = { id: before.id, patient_id: before.patient_id, treatment_plan_id: before.treatment_plan_id };
  const extra = what === 'migrated' ? { from_version: data.from_version, to_version: data.to_version } : {};
  await emit(tx, actor.orgId, `enrollment.${what}`, { ...ids, ...extra });
  return getEnrollment(tx, actor.orgId, before.id);
}
