import type { Queryable } from '@clinic/db';

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
