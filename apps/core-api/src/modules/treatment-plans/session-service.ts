import { listFilters } from './list-filters.ts';
import { createHash } from 'node:crypto';
import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import type { Config } from '../../config.ts';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { featureConsentMissing } from '../consents/service.ts';
import { emit } from '../events/emit.ts';
import type { SessionSigner } from '../exercise-sessions/token.ts';
import { processingRestricted } from '../gdpr/service.ts';
import { ComposeFailed, type ComposedVideo, type VideoComposer } from './composer-client.ts';
import { dayOf } from './content.ts';
import * as eq from './enrollment-queries.ts';
import { enrollmentView } from './enrollment-service.ts';
import type { PlanItem } from './queries.ts';
import { findSettings } from './queries.ts';
import { INTENDED_USE_VERSION, SESSION_SORT } from './schemas.ts';
import * as sq from './session-queries.ts';

export interface SessionDeps {
  composer: VideoComposer;
  signer: () => Promise<SessionSigner>;
  systemInfo: Config['systemInfo'];
}

/** The labelling of the software serving a result (GET /v1/public/system-info) and the intended-use statement's version. */
export const labellingOf = (info: Config['systemInfo']) => ({
  manufacturer_name: info.manufacturer_name,
  product_name: info.product_name,
  version: info.version,
  udi_di: info.udi_di,
  intended_use_version: INTENDED_USE_VERSION,
});

/**
 * A plan session as responses show it. Its results are clinical decision-support outputs: served only where the
 * organization enabled telerehab (the regulatory boundary); otherwise withheld, and said so.
 */
export function sessionView(r: sq.PlanSessionRow, telerehabEnabled: boolean) {
  const { rep_count, form_score, rom, duration_s, algorithm_version, software_version, udi_di, ...rest } = r;
  const results =
    algorithm_version !== null ? { rep_count, form_score, rom, duration_s, algorithm_version, software_version, udi_di } : null;
  return { ...rest, results: telerehabEnabled ? results : null, results_withheld: !telerehabEnabled && results !== null };
}

const notFound = () => errors.notFound('No plan session with this id is visible to you.');

/** A stable seed for an item's video: the same enrollment and exercise always compose the same variants (docs/telerehab.md). */
export const seedOf = (enrollmentId: string, exerciseId: string) =>
  createHash('sha256').update(`${enrollmentId}|${exerciseId}`).digest().readUInt32BE(0) & 0x7fffffff;

interface Prepared {
  enrollment: eq.EnrollmentRow;
  planDay: number;
  item: PlanItem;
  exercise: sq.ItemExercise;
  scorable: boolean;
  required: string[];
}

/**
 * Today's item of an active enrollment of the patient the request acts for, and what starting it needs: an
 * enrollment that is active, today a plan day, the item on it, its exercise visible and published, the patient
 * not restricted and holding the plan's consents (and biometric for an item telemetry scores).
 */
async function prepare(tx: Queryable, actor: OrgActor, enrollmentId: string, itemIndex: number): Promise<Prepared> {
  const enrollment = await eq.findEnrollment(tx, actor.orgId, enrollmentId);
  if (!enrollment || enrollment.patient_id !== (await sq.currentPatientId(tx)))
    throw errors.notFound('No enrollment of yours with this id.');
  if (enrollment.status !== 'active') throw errors.conflict('enrollment_not_active', `The enrollment is ${enrollment.status}.`);
  const view = enrollmentView(enrollment).schedule;
  if (view.today_plan_day === null)
    throw errors.conflict('not_a_plan_day', `Today (${view.today}) is not a plan day of this enrollment: nothing is scheduled.`);
  const content = await eq.versionContent(tx, actor.orgId, enrollment.treatment_plan_id, enrollment.plan_version);
  const day = content ? dayOf(content.phases, view.today_plan_day) : null;
  const item = day?.items[itemIndex];
  if (!content || !item) throw errors.validation({ item_index: `today's plan day has ${day?.items.length ?? 0} item(s)` });
  const [exercise] = await sq.itemExercises(tx, [item.exercise_id]);
  if (exercise?.status !== 'published')
    throw errors.conflict('exercise_unavailable', 'The exercise of this item is no longer available; ask your clinic to update the plan.');
  const scorable = exercise.kind === 'reps_based' && exercise.movement !== null;
  const required = [...content.required_consents, ...(scorable ? ['biometric'] : [])];
  const gaps = await sq.consentGaps(tx, required);
  if (gaps.restricted) throw processingRestricted(required[0] ?? 'telerehab');
  if (gaps.missing.length) throw featureConsentMissing(gaps.missing[0]!);
  return { enrollment, planDay: view.today_plan_day, item, exercise, scorable, required };
}

/**
 * POST /v1/treatment-plans/enrollments/{id}/sessions: starts today's item. In a first transaction the rules are
 * checked; then the item's video is composed (the composer's HTTP call, outside any transaction: a cache miss
 * bakes for a second or more) or its imported video found; a second transaction checks again, creates the
 * exercise session of spec 4.11 for scored items and records the start (a restart makes a new exercise session).
 */
export async function startSession(
  inTx: <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>,
  deps: SessionDeps,
  actor: OrgActor,
  enrollmentId: string,
  itemIndex: number,
) {
  const first = await inTx(async (tx) => {
    const p = await prepare(tx, actor, enrollmentId, itemIndex);
    const existing = await sq.sessionOfItem(tx, actor.orgId, enrollmentId, p.enrollment.today, itemIndex);
    if (existing && existing.status !== 'started') throw errors.conflict('plan_session_closed', `This item is ${existing.status} today.`);
    const imported =
      p.exercise.kind === 'duration_based'
        ? await sq.importedRender(tx, p.exercise.media_exercise_id, p.item.video_language, p.exercise.media_asset_version)
        : null;
    return { p, imported };
  });
  const seed = seedOf(enrollmentId, first.p.exercise.id);
  let video: ComposedVideo | null = null;
  let unavailable: string | null = null;
  if (first.p.exercise.kind === 'reps_based' && first.p.item.sets) {
    try {
      video = await deps.composer.compose({
        exercise: first.p.exercise.media_slug,
        language: first.p.item.video_language,
        sets: first.p.item.sets,
        seed,
      });
    } catch (err) {
      if (!(err instanceof ComposeFailed)) throw err;
      unavailable = err.reason;
    }
  } else if (first.imported) {
    video = {
      render_id: first.imported.id,
      status: first.imported.status,
      language: first.imported.language,
      stream_video_id: first.imported.stream_video_id,
      playback_hls_url: first.imported.playback_hls_url,
      duration_seconds: first.imported.duration_seconds,
      cached: true,
    };
  } else {
    unavailable = `no imported video of this exercise in ${first.p.item.video_language} at its current asset version`;
  }

  const signer = await deps.signer();
  return inTx(async (tx) => {
    const p = await prepare(tx, actor, enrollmentId, itemIndex);
    let exerciseSession: { id: string; patient_user_id: string } | null = null;
    if (p.scorable) {
      exerciseSession = await sq.insertExerciseSession(tx, actor.orgId, p.exercise.id, p.exercise.movement);
      await audit(tx, actor, 'exercise_session.started', 'exercise_session', exerciseSession.id, {
        exercise_id: p.exercise.id,
        enrollment_id: enrollmentId,
      });
    }
    const id = await sq.upsertStarted(tx, actor.orgId, {
      enrollmentId,
      patientId: p.enrollment.patient_id,
      planId: p.enrollment.treatment_plan_id,
      version: p.enrollment.plan_version,
      planDay: p.planDay,
      on: p.enrollment.today,
      itemIndex,
      exerciseId: p.exercise.id,
      exerciseSessionId: exerciseSession?.id ?? null,
      renderId: video?.render_id ?? null,
      seed,
      by: actor.ctx.principalId,
    });
    if (!id) throw errors.conflict('plan_session_closed', 'This item was completed or skipped meanwhile.');
    const row = (await sq.findPlanSession(tx, actor.orgId, id))!;
    const data = {
      enrollment_id: enrollmentId,
      patient_id: row.patient_id,
      plan_day: row.plan_day,
      item_index: itemIndex,
      exercise_id: row.exercise_id,
    };
    await audit(tx, actor, 'plan_session.started', 'plan_session', id, {
      ...data,
      exercise_session_id: exerciseSession?.id ?? null,
      starts: row.starts,
    });
    await emit(tx, actor.orgId, 'plan_session.started', { id, ...data });
    const token = exerciseSession
      ? await signer.sign({
          userId: exerciseSession.patient_user_id,
          sessionId: exerciseSession.id,
          orgId: actor.orgId,
          exerciseId: p.exercise.id,
        })
      : null;
    const enabled = (await findSettings(tx, actor.orgId)).enabled;
    return {
      session: sessionView(row, enabled),
      item: p.item,
      exercise: { id: p.exercise.id, slug: p.exercise.slug, name: p.exercise.name, kind: p.exercise.kind },
      telemetry:
        exerciseSession && token
          ? { session_id: exerciseSession.id, session_token: token.token, session_token_expires_at: token.expiresAt }
          : null,
      video,
      video_unavailable_reason: video ? null : unavailable,
      labelling: labellingOf(deps.systemInfo),
    };
  });
}

/**
 * POST /v1/treatment-plans/sessions/{id}/complete: the patient finishes a started item. For a scored item the
 * exercise session must have ended (telemetry's POST /v1/sessions/{id}/end, or the silence sweep); its result,
 * stored at session end, is copied with the algorithm's version and this software's version and UDI-DI. The
 * plan's self-reports (pain, effort) are required when it asks for them.
 */
export async function completeSession(
  tx: Queryable,
  deps: Pick<SessionDeps, 'systemInfo'>,
  actor: OrgActor,
  id: string,
  body: { pain?: number | undefined; effort?: number | undefined; note?: string | undefined },
) {
  const row = await sq.findPlanSession(tx, actor.orgId, id, { forUpdate: true });
  if (!row || row.patient_id !== (await sq.currentPatientId(tx))) throw notFound();
  if (row.status !== 'started') throw errors.conflict('plan_session_closed', `This session is ${row.status}.`);
  const content = await eq.versionContent(tx, actor.orgId, row.treatment_plan_id, row.plan_version);
  const fields: Record<string, string> = {};
  if (content?.self_report.pain && body.pain === undefined) fields.pain = 'the plan asks for pain, 0-10';
  if (content?.self_report.effort && body.effort === undefined) fields.effort = 'the plan asks for effort, 0-10';
  if (Object.keys(fields).length) throw errors.validation(fields);
  let result: sq.TelemetryOutcome['result'] = null;
  if (row.exercise_session_id) {
    const outcome = await sq.telemetryOutcome(tx, row.exercise_session_id);
    if (outcome && (outcome.status === 'active' || outcome.status === 'ending'))
      throw errors.conflict(
        'session_not_ended',
        'End the exercise session at the telemetry service first (POST /v1/sessions/{id}/end): its results are written then.',
      );
    result = outcome?.result ?? null;
  }
  await sq.complete(tx, actor.orgId, id, {
    result,
    software: deps.systemInfo.version,
    udiDi: deps.systemInfo.udi_di,
    pain: body.pain ?? null,
    effort: body.effort ?? null,
    note: body.note?.trim() || null,
    by: actor.ctx.principalId,
  });
  const data = {
    enrollment_id: row.enrollment_id,
    patient_id: row.patient_id,
    plan_day: row.plan_day,
    item_index: row.item_index,
    exercise_id: row.exercise_id,
  };
  await audit(tx, actor, 'plan_session.completed', 'plan_session', id, {
    ...data,
    algorithm_version: result?.algorithm_version ?? null,
    software_version: deps.systemInfo.version,
  });
  await emit(tx, actor.orgId, 'plan_session.completed', { id, ...data, scored: result !== null });
  return sessionRead(tx, deps, actor.orgId, id);
}

/** POST /v1/treatment-plans/enrollments/{id}/skip: today's item is skipped, with a reason (a started one too). */
export async function skipItem(
  tx: Queryable,
  deps: Pick<SessionDeps, 'systemInfo'>,
  actor: OrgActor,
  enrollmentId: string,
  itemIndex: number,
  reason: string,
) {
  const why = reason.trim();
  if (!why) throw errors.validation({ reason: 'must not be blank' });
  const enrollment = await eq.findEnrollment(tx, actor.orgId, enrollmentId);
  if (!enrollment || enrollment.patient_id !== (await sq.currentPatientId(tx)))
    throw errors.notFound('No enrollment of yours with this id.');
  if (enrollment.status !== 'active') throw errors.conflict('enrollment_not_active', `The enrollment is ${enrollment.status}.`);
  const planDay = enrollmentView(enrollment).schedule.today_plan_day;
  if (planDay === null) throw errors.conflict('not_a_plan_day', `Today (${enrollment.today}) is not a plan day of this enrollment.`);
  const content = await eq.versionContent(tx, actor.orgId, enrollment.treatment_plan_id, enrollment.plan_version);
  const item = content ? dayOf(content.phases, planDay)?.items[itemIndex] : undefined;
  if (!item) throw errors.validation({ item_index: "no such item on today's plan day" });
  const id = await sq.upsertSkipped(tx, actor.orgId, {
    enrollmentId,
    patientId: enrollment.patient_id,
    planId: enrollment.treatment_plan_id,
    version: enrollment.plan_version,
    planDay,
    on: enrollment.today,
    itemIndex,
    exerciseId: item.exercise_id,
    reason: why,
    by: actor.ctx.principalId,
  });
  if (!id) throw errors.conflict('plan_session_closed', 'This item is already completed or skipped today.');
  const data = {
    enrollment_id: enrollmentId,
    patient_id: enrollment.patient_id,
    plan_day: planDay,
    item_index: itemIndex,
    exercise_id: item.exercise_id,
  };
  // The reason stays on the session (which erasure removes), not in the append-only trail.
  await audit(tx, actor, 'plan_session.skipped', 'plan_session', id, data);
  await emit(tx, actor.orgId, 'plan_session.skipped', { id, ...data });
  return sessionRead(tx, deps, actor.orgId, id);
}

export async function sessionRead(tx: Queryable, deps: Pick<SessionDeps, 'systemInfo'>, orgId: string, id: string) {
  const row = await sq.findPlanSession(tx, orgId, id);
  if (!row) throw notFound();
  const enabled = (await findSettings(tx, orgId)).enabled;
  return { ...sessionView(row, enabled), labelling: labellingOf(deps.systemInfo) };
}

const STATUSES = ['started', 'completed', 'skipped'];

export async function listSessions(tx: Queryable, deps: Pick<SessionDeps, 'systemInfo'>, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, SESSION_SORT, '-scheduled_on');
  const on = parseDateRange(query, 'scheduled_on');
  const { ids, statuses } = listFilters(query, ['enrollment_id', 'patient_id'], STATUSES);
  const { rows, total } = await sq.listPlanSessions(
    tx,
    orgId,
    { enrollmentId: ids.enrollment_id, patientId: ids.patient_id, statuses, on },
    sort,
    page,
  );
  const enabled = (await findSettings(tx, orgId)).enabled;
  return {
    ...listEnvelope(
      rows.map((r) => sessionView(r, enabled)),
      page,
      total,
    ),
    labelling: labellingOf(deps.systemInfo),
  };
}

/**
 * GET /v1/treatment-plans/today: for each live enrollment of the patient (its own, or the patient a staff
 * member names), today's plan day with its items and what the patient did with each, and the consents
 * still missing before a session can start.
 */
export async function today(tx: Queryable, orgId: string, patientId: string, forPatient: boolean) {
  const ids = await sq.liveEnrollmentIds(tx, orgId, patientId);
  const out = [];
  for (const id of ids) {
    const e = await eq.findEnrollment(tx, orgId, id);
    if (!e) continue;
    const view = enrollmentView(e);
    const content = await eq.versionContent(tx, orgId, e.treatment_plan_id, e.plan_version);
    const day =
      content && view.schedule.today_plan_day !== null && e.status === 'active'
        ? dayOf(content.phases, view.schedule.today_plan_day)
        : null;
    const done = day ? await sq.sessionsOfDay(tx, orgId, id, e.today) : [];
    const exercises = new Map((await sq.itemExercises(tx, day ? day.items.map((i) => i.exercise_id) : [])).map((x) => [x.id, x]));
    const scored = day?.items.some((i) => {
      const x = exercises.get(i.exercise_id);
      return x?.kind === 'reps_based' && x.movement !== null;
    });
    const required = [...(content?.required_consents ?? []), ...(scored ? ['biometric'] : [])];
    const gaps = forPatient ? await sq.consentGaps(tx, required) : { restricted: false, missing: [] };
    out.push({
      enrollment: view,
      plan_day: day ? view.schedule.today_plan_day : null,
      phase: day?.phase ?? null,
      title: day?.title ?? null,
      items: (day?.items ?? []).map((item, i) => {
        const s = done.find((d) => d.item_index === i);
        const x = exercises.get(item.exercise_id);
        return {
          item_index: i,
          item,
          exercise: x ? { id: x.id, slug: x.slug, name: x.name, kind: x.kind } : null,
          status: s?.status ?? 'pending',
          plan_session_id: s?.id ?? null,
        };
      }),
      self_report: content?.self_report ?? { pain: false, effort: false },
      missing_consents: gaps.missing,
    });
  }
  return { enrollments: out };
}
