import type { Queryable } from '@clinic/db';
import type { EndedData } from './jobs.ts';

export interface SessionRow {
  id: string;
  organization_id: string;
  patient_user_id: string;
  exercise_id: string;
  status: string;
  end_reason: string | null;
  started_at: Date;
  ended_at: Date | null;
  batches_received: number;
  frames_received: number;
  replay_key: string | null;
  movement: unknown;
}

const COLS =
  'id, organization_id, patient_user_id, exercise_id, status, end_reason, started_at, ended_at, batches_received, frames_received, replay_key, movement';

/** A published exercise the caller can see, with its movement definition (null: not scorable). */
export async function scorableExercise(tx: Queryable, id: string): Promise<{ id: string; status: string; movement: unknown } | null> {
  const { rows } = await tx.query<{ id: string; status: string; movement: unknown }>(
    'select e.id, e.status, m.definition as movement from exercises e left join exercise_movements m on m.exercise_id = e.id where e.id = $1',
    [id],
  );
  return rows[0] ?? null;
}

export async function insertSession(
  tx: Queryable,
  orgId: string,
  userId: string,
  exerciseId: string,
  movement: unknown,
): Promise<SessionRow> {
  const { rows } = await tx.query<SessionRow>(
    `insert into exercise_sessions (organization_id, patient_user_id, exercise_id, movement) values ($1, $2, $3, $4::jsonb) returning ${COLS}`,
    [orgId, userId, exerciseId, JSON.stringify(movement)],
  );
  return rows[0]!;
}

/** Under RLS: the patient's own, or the organization's with telemetry.view_org. */
export async function findSession(tx: Queryable, id: string): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>(`select ${COLS} from exercise_sessions where id = $1`, [id]);
  return rows[0] ?? null;
}

export async function sessionMetrics(tx: Queryable, id: string) {
  const m = await tx.query<Record<string, unknown>>(
    'select rep_count, form_score, rom, algorithm_version, duration_s::float8 as duration_s, frames, valid_frames from pose_session_metrics where session_id = $1',
    [id],
  );
  const reps = await tx.query<Record<string, unknown>>(
    `select rep_index as index, start_ms, end_ms, range_deg::float8 as range_deg, peak_deg::float8 as peak_deg, tempo_s::float8 as tempo_s, score
     from pose_rep_metrics where session_id = $1 order by rep_index`,
    [id],
  );
  return { metrics: m.rows[0] ?? null, reps: reps.rows };
}

/** The replay key of a session by id alone (the public replay route: the signed token already proved access). */
export async function replayKeyById(db: Queryable, sessionId: string): Promise<string | null> {
  const { rows } = await db.query<{ replay_key: string | null }>('select replay_key from exercise_sessions where id = $1', [sessionId]);
  return rows[0]?.replay_key ?? null;
}

/**
 * The metrics of an ended session, its reps and the patient's exercise log, once per session: a repeated
 * event finds the metrics row and changes nothing.
 */
export async function writeSessionMetrics(tx: Queryable, d: EndedData): Promise<void> {
  const r = d.result;
  const ins = await tx.query(
    `insert into pose_session_metrics (session_id, organization_id, patient_user_id, exercise_id, status, rep_count, form_score, rom,
       algorithm_version, duration_s, frames, valid_frames, ended_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13) on conflict (organization_id, session_id) do nothing`,
    [
      d.session_id,
      d.organization_id,
      d.patient_user_id,
      d.exercise_id,
      d.status,
      r?.rep_count ?? 0,
      r?.form_score ?? null,
      JSON.stringify(r?.rom ?? {}),
      r?.algorithm_version ?? 'none',
      r?.duration_s ?? 0,
      r?.frames ?? 0,
      r?.valid_frames ?? 0,
      d.ended_at,
    ],
  );
  if (ins.rowCount === 0) return;
  for (const rep of r?.reps ?? []) {
    await tx.query(
      `insert into pose_rep_metrics (session_id, rep_index, organization_id, patient_user_id, start_ms, end_ms, range_deg, peak_deg, tempo_s, score)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict do nothing`,
      [
        d.session_id,
        rep.index,
        d.organization_id,
        d.patient_user_id,
        Math.round(rep.start_ms),
        Math.round(rep.end_ms),
        rep.range_deg,
        rep.peak_deg,
        rep.tempo_s,
        rep.score,
      ],
    );
  }
  const score = r?.form_score ?? null;
  await tx.query(
    `insert into patient_exercise_log as l (organization_id, patient_user_id, exercise_id, sessions, completed_sessions, total_reps,
       last_session_id, last_session_at, last_form_score, best_form_score)
     values ($1, $2, $3, 1, $4, $5, $6, $7, $8, $8)
     on conflict (organization_id, patient_user_id, exercise_id) do update set
       sessions = l.sessions + 1, completed_sessions = l.completed_sessions + excluded.completed_sessions,
       total_reps = l.total_reps + excluded.total_reps,
       last_session_id = case when excluded.last_session_at >= coalesce(l.last_session_at, '-infinity') then excluded.last_session_id else l.last_session_id end,
       last_form_score = case when excluded.last_session_at >= coalesce(l.last_session_at, '-infinity') then excluded.last_form_score else l.last_form_score end,
       last_session_at = greatest(l.last_session_at, excluded.last_session_at),
       best_form_score = greatest(l.best_form_score, excluded.best_form_score), updated_at = now()`,
    [
      d.organization_id,
      d.patient_user_id,
      d.exercise_id,
      d.status === 'completed' ? 1 : 0,
      r?.rep_count ?? 0,
      d.session_id,
      d.ended_at,
      score,
    ],
  );
}

/** Sessions still open `minutes` after their last batch (or their start, with none), with the patient's consent state. */
export async function silentSessions(db: Queryable, now: Date, minutes: number): Promise<{ id: string; consent: string }[]> {
  const { rows } = await db.query<{ id: string; consent: string }>(
    `select s.id, app.telemetry_gate(s.patient_user_id, s.organization_id, 'biometric') as consent
     from exercise_sessions s
     where s.status in ('active', 'ending')
       and greatest(s.started_at, (select max(b.received_at) from pose_batches b where b.session_id = s.id)) < $1::timestamptz - make_interval(mins => $2)
     order by s.started_at limit 100`,
    [now.toISOString(), minutes],
  );
  return rows;
}

/** Ends a session whose consent was withdrawn without scoring it: its frames may not be processed. */
export async function closeWithoutConsent(tx: Queryable, sessionId: string): Promise<void> {
  await tx.query(`update exercise_sessions set status = 'ending' where id = $1 and status = 'active'`, [sessionId]);
  await tx.query(`select app.telemetry_finish($1, 'incomplete', 'consent_withdrawn', null, null, 0, 0)`, [sessionId]);
}

export async function deleteMediaMetricsBefore(db: Queryable, at: string, age: string): Promise<number> {
  const { rowCount } = await db.query('delete from media_session_metrics where created_at < $1::timestamptz - $2::interval', [at, age]);
  return rowCount;
}

export async function expiredReplays(db: Queryable, at: string, age: string): Promise<{ id: string; replay_key: string | null }[]> {
  const { rows } = await db.query<{ id: string; replay_key: string | null }>(
    `select id, replay_key from exercise_sessions where status in ('completed', 'incomplete') and ended_at < $1::timestamptz - $2::interval and replay_key is not null limit 1000`,
    [at, age],
  );
  return rows;
}

export async function markReplayDeleted(db: Queryable, sessionId: string): Promise<void> {
  await db.query('update exercise_sessions set replay_key = null, replay_deleted_at = now() where id = $1', [sessionId]);
}

/** Deletes sessions ended before `at - age`; their pose session and rep metrics go by cascade. */
export async function deleteSessionsEndedBefore(db: Queryable, at: string, age: string): Promise<number> {
  const { rowCount } = await db.query('delete from exercise_sessions where ended_at < $1::timestamptz - $2::interval', [at, age]);
  return rowCount;
}

/** Of these replay keys, the ones a session still names (the rest are orphans). */
export async function knownReplayKeys(db: Queryable, keys: string[]): Promise<string[]> {
  const { rows } = await db.query<{ replay_key: string }>('select replay_key from exercise_sessions where replay_key = any($1::text[])', [
    keys,
  ]);
  return rows.map((r) => r.replay_key);
}
