import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import type { Actor } from '../../platform/actor.ts';
import { findSession, insertSession, scorableExercise, sessionMetrics } from './queries.ts';
import type { SessionSigner } from './token.ts';

const notFound = () => errors.notFound('No exercise session with this id is visible to you.');

/** POST /v1/exercise-sessions: the calling patient starts a session on a published, scorable exercise. */
export async function startSession(tx: Queryable, actor: Actor, signer: SessionSigner, exerciseId: string) {
  const orgId = actor.ctx.orgId!;
  const ex = await scorableExercise(tx, exerciseId);
  if (ex?.status !== 'published') throw errors.notFound('No published exercise with this id is visible to you.');
  if (!ex.movement)
    throw errors.conflict('exercise_not_scorable', 'This exercise has no movement definition, so pose telemetry cannot score it.');
  const row = await insertSession(tx, orgId, actor.ctx.principalId, exerciseId, ex.movement);
  await recordChange(
    tx,
    actor,
    'exercise_session.started',
    { type: 'exercise_session', id: row.id, organizationId: orgId },
    { exercise_id: exerciseId },
  );
  const token = await signer.sign({ userId: actor.ctx.principalId, sessionId: row.id, orgId, exerciseId });
  return { ...view(row), session_token: token.token, session_token_expires_at: token.expiresAt };
}

function view(row: Awaited<ReturnType<typeof findSession>> & object) {
  return {
    id: row.id,
    organization_id: row.organization_id,
    patient_user_id: row.patient_user_id,
    exercise_id: row.exercise_id,
    status: row.status,
    end_reason: row.end_reason,
    started_at: row.started_at,
    ended_at: row.ended_at,
    batches_received: row.batches_received,
    frames_received: row.frames_received,
    replay_available: row.replay_key !== null,
  };
}

/** GET /v1/exercise-sessions/{id}: the session and the aggregates the worker wrote (null until then). */
export async function getSession(tx: Queryable, id: string) {
  const row = await findSession(tx, id);
  if (!row) throw notFound();
  const { metrics, reps } = await sessionMetrics(tx, id);
  return { ...view(row), metrics: metrics ? { ...metrics, reps } : null };
}

/** The replay of a visible session (for the signed URL), or 404. */
export async function replayOf(tx: Queryable, id: string): Promise<string> {
  const row = await findSession(tx, id);
  if (!row) throw notFound();
  if (!row.replay_key) throw errors.notFound('This session has no replay (not ended yet, no frames, or past its 6-month retention).');
  return row.id;
}
