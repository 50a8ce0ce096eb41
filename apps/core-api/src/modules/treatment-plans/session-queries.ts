import type { Queryable } from '@clinic/db';
import { type DateRange, type Pagination, SqlWhere, type Sort } from '@clinic/http-kit';

export interface PlanSessionRow {
  id: string;
  organization_id: string;
  enrollment_id: string;
  patient_id: string;
  treatment_plan_id: string;
  plan_version: number;
  plan_day: number;
  scheduled_on: string;
  item_index: number;
  exercise_id: string;
  status: 'started' | 'completed' | 'skipped';
  exercise_session_id: string | null;
  starts: number;
  render_id: string | null;
  started_at: Date | null;
  completed_at: Date | null;
  skipped_at: Date | null;
  skip_reason: string | null;
  rep_count: number | null;
  form_score: number | null;
  rom: Record<string, unknown> | null;
  duration_s: number | null;
  algorithm_version: string | null;
  software_version: string | null;
  udi_di: string | null;
  pain: number | null;
  effort: number | null;
  patient_note: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, organization_id, enrollment_id, patient_id, treatment_plan_id, plan_version, plan_day, to_char(scheduled_on, 'YYYY-MM-DD') as scheduled_on,
  item_index, exercise_id, status, exercise_session_id, starts, render_id, started_at, completed_at, skipped_at, skip_reason, rep_count, form_score,
  rom, duration_s::float8 as duration_s, algorithm_version, software_version, udi_di, pain, effort, patient_note, created_at, updated_at`;

export async function findPlanSession(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<PlanSessionRow | null> {
  const { rows } = await tx.query<PlanSessionRow>(
    `select ${COLUMNS} from plan_sessions where organization_id = $1 and id = $2${opts.forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

/** The row of one item on one date, if the patient touched it. */
export async function sessionOfItem(
  tx: Queryable,
  orgId: string,
  enrollmentId: string,
  on: string,
  itemIndex: number,
): Promise<PlanSessionRow | null> {
  const { rows } = await tx.query<PlanSessionRow>(
    `select ${COLUMNS} from plan_sessions where organization_id = $1 and enrollment_id = $2 and scheduled_on = $3::date and item_index = $4`,
    [orgId, enrollmentId, on, itemIndex],
  );
  return rows[0] ?? null;
}

export async function sessionsOfDay(tx: Queryable, orgId: string, enrollmentId: string, on: string): Promise<PlanSessionRow[]> {
  const { rows } = await tx.query<PlanSessionRow>(
    `select ${COLUMNS} from plan_sessions where organization_id = $1 and enrollment_id = $2 and scheduled_on = $3::date order by item_index`,
    [orgId, enrollmentId, on],
  );
  return rows;
}

export interface ItemExercise {
  id: string;
  slug: string;
  name: string;
  kind: 'reps_based' | 'duration_based';
  status: string;
  asset_version: number;
  movement: unknown;
  /** Whose primitives and imported videos play: the template's for an organization's copy. */
  media_exercise_id: string;
  media_slug: string;
  media_asset_version: number;
}

/** Exercises as the caller sees them (a patient: published ones), with where their videos come from. */
export async function itemExercises(tx: Queryable, ids: string[]): Promise<ItemExercise[]> {
  const { rows } = await tx.query<ItemExercise>(
    `select e.id, e.slug, e.name, e.kind, e.status, e.asset_version, m.definition as movement,
            coalesce(t.id, e.id) as media_exercise_id, coalesce(t.slug, e.slug) as media_slug, coalesce(t.asset_version, e.asset_version) as media_asset_version
     from exercises e
     left join exercise_movements m on m.exercise_id = e.id
     left join exercises t on t.id = e.template_exercise_id
     where e.id = any($1::uuid[])`,
    [ids],
  );
  return rows;
}

/** The pre-baked video of a duration-based exercise in a language, at its current asset version (spec 2.12). */
export async function importedRender(tx: Queryable, exerciseId: string, language: string, assetVersion: number) {
  const { rows } = await tx.query<{
    id: string;
    status: string;
    language: string;
    stream_video_id: string | null;
    playback_hls_url: string | null;
    duration_seconds: number | null;
  }>(
    `select id, status, language, stream_video_id, playback_hls_url, duration_seconds from exercise_renders
     where exercise_id = $1 and recipe_hash = '_imported' and language = $2 and asset_version = $3 and status in ('processing', 'ready')`,
    [exerciseId, language, assetVersion],
  );
  return rows[0] ?? null;
}

/** What a session needs that the caller may not read itself: a restriction of processing, and purposes not granted. */
export async function consentGaps(tx: Queryable, codes: string[]): Promise<{ restricted: boolean; missing: string[] }> {
  const { rows } = await tx.query<{ g: { restricted: boolean; missing: string[] } }>(
    'select app.current_patient_consent_gaps($1::text[]) as g',
    [codes],
  );
  return rows[0]!.g;
}

/** The exercise session of spec 4.11, for the patient the request acts for (a caregiver's patient too). */
export async function insertExerciseSession(
  tx: Queryable,
  orgId: string,
  exerciseId: string,
  movement: unknown,
): Promise<{ id: string; patient_user_id: string }> {
  const { rows } = await tx.query<{ id: string; patient_user_id: string }>(
    `insert into exercise_sessions (organization_id, patient_user_id, exercise_id, movement)
     values ($1, app.current_patient_user_id(), $2, $3::jsonb) returning id, patient_user_id`,
    [orgId, exerciseId, JSON.stringify(movement)],
  );
  return rows[0]!;
}

/**
 * Starts (or starts again) an item of a date: one row per item and date (the unique key), counted per start.
 * A row already completed or skipped is not touched: null then.
 */
export async function upsertStarted(
  tx: Queryable,
  orgId: string,
  s: {
    enrollmentId: string;
    patientId: string;
    planId: string;
    version: number;
    planDay: number;
    on: string;
    itemIndex: number;
    exerciseId: string;
    exerciseSessionId: string | null;
    renderId: string | null;
    seed: number;
    by: string;
  },
): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>(
    `insert into plan_sessions as p (organization_id, enrollment_id, patient_id, treatment_plan_id, plan_version, plan_day, scheduled_on, item_index,
       exercise_id, status, exercise_session_id, starts, render_id, seed, started_at, acted_by_principal_id)
     values ($1, $2, $3, $4, $5, $6, $7::date, $8, $9, 'started', $10, 1, $11, $12, now(), $13)
     on conflict (organization_id, enrollment_id, scheduled_on, item_index) do update set
       exercise_session_id = excluded.exercise_session_id, starts = p.starts + 1, render_id = coalesce(excluded.render_id, p.render_id),
       seed = excluded.seed, started_at = now(), acted_by_principal_id = excluded.acted_by_principal_id
     where p.status = 'started'
     returning id`,
    [
      orgId,
      s.enrollmentId,
      s.patientId,
      s.planId,
      s.version,
      s.planDay,
      s.on,
      s.itemIndex,
      s.exerciseId,
      s.exerciseSessionId,
      s.renderId,
      s.seed,
      s.by,
    ],
  );
  return rows[0]?.id ?? null;
}

/** Skips an item of a date (a started one included); null when it was already completed or skipped. */
export async function upsertSkipped(
  tx: Queryable,
  orgId: string,
  s: {
    enrollmentId: string;
    patientId: string;
    planId: string;
    version: number;
    planDay: number;
    on: string;
    itemIndex: number;
    exerciseId: string;
    reason: string;
    by: string;
  },
): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>(
    `insert into plan_sessions as p (organization_id, enrollment_id, patient_id, treatment_plan_id, plan_version, plan_day, scheduled_on, item_index,
       exercise_id, status, skipped_at, skip_reason, acted_by_principal_id)
     values ($1, $2, $3, $4, $5, $6, $7::date, $8, $9, 'skipped', now(), $10, $11)
     on conflict (organization_id, enrollment_id, scheduled_on, item_index) do update set
       status = 'skipped', skipped_at = now(), skip_reason = excluded.skip_reason, acted_by_principal_id = excluded.acted_by_principal_id
     where p.status = 'started'
     returning id`,
    [orgId, s.enrollmentId, s.patientId, s.planId, s.version, s.planDay, s.on, s.itemIndex, s.exerciseId, s.reason, s.by],
  );
  return rows[0]?.id ?? null;
}

export interface TelemetryOutcome {
  status: string;
  result: {
    rep_count: number;
    form_score: number | null;
    rom: Record<string, unknown>;
    algorithm_version: string;
    duration_s: number;
  } | null;
}

/** The exercise session's state and the result telemetry stored when it ended (under the caller's policies). */
export async function telemetryOutcome(tx: Queryable, exerciseSessionId: string): Promise<TelemetryOutcome | null> {
  const { rows } = await tx.query<TelemetryOutcome>('select status, result from exercise_sessions where id = $1', [exerciseSessionId]);
  return rows[0] ?? null;
}

export async function complete(
  tx: Queryable,
  orgId: string,
  id: string,
  c: {
    result: TelemetryOutcome['result'];
    software: string;
    udiDi: string;
    pain: number | null;
    effort: number | null;
    note: string | null;
    by: string;
  },
): Promise<void> {
  const r = c.result;
  await tx.query(
    `update plan_sessions set status = 'completed', completed_at = now(), rep_count = $3, form_score = $4, rom = $5::jsonb, duration_s = $6,
       algorithm_version = $7, software_version = $8, udi_di = $9, pain = $10, effort = $11, patient_note = $12, acted_by_principal_id = $13
     where organization_id = $1 and id = $2`,
    [
      orgId,
      id,
      r?.rep_count ?? null,
      r?.form_score ?? null,
      r ? JSON.stringify(r.rom ?? {}) : null,
      r?.duration_s ?? null,
      r?.algorithm_version ?? null,
      c.software,
      c.udiDi,
      c.pain,
      c.effort,
      c.note,
      c.by,
    ],
  );
}

export async function listPlanSessions(
  tx: Queryable,
  orgId: string,
  f: { enrollmentId?: string | undefined; patientId?: string | undefined; statuses?: string[] | undefined; on: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: PlanSessionRow[]; total: number }> {
  const where = new SqlWhere()
    .add('organization_id = ?', orgId)
    .optional('enrollment_id = ?', f.enrollmentId)
    .optional('patient_id = ?', f.patientId)
    .optional('status = any(?::text[])', f.statuses)
    .optional(`scheduled_on >= (?::timestamptz at time zone 'UTC')::date`, f.on.after)
    .optional(`scheduled_on <= (?::timestamptz at time zone 'UTC')::date`, f.on.before);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from plan_sessions where ${where.text}`, where.params);
  const { rows } = await tx.query<PlanSessionRow>(
    `select ${COLUMNS} from plan_sessions where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** The live enrollments of a patient (its own, or one a staff member names). */
export async function liveEnrollmentIds(tx: Queryable, orgId: string, patientId: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `select id from treatment_enrollments where organization_id = $1 and patient_id = $2 and status in ('active', 'paused') order by created_at, id`,
    [orgId, patientId],
  );
  return rows.map((r) => r.id);
}

export async function currentPatientId(tx: Queryable): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>('select app.current_patient_id() as id');
  return rows[0]?.id ?? null;
}
