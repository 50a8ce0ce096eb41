import type { Queryable } from '@clinic/db';
import type { Movement } from './pose/movement.ts';
import type { SessionScore } from './pose/scoring.ts';

// The telemetry service's SQL: calls of the SECURITY DEFINER functions its role may execute (migrations
// 0050-0054), each in a transaction that runs as app_telemetry (db.ts asTelemetry).

/** A pose session as the telemetry role may read it (app.telemetry_session). */
export interface SessionRow {
  organization_id: string;
  patient_user_id: string;
  status: string;
  movement: Movement;
  result: SessionScore | null;
  replay_key: string | null;
}

export async function sessionRow(tx: Queryable, id: string): Promise<SessionRow | null> {
  const { rows } = await tx.query<SessionRow>('select * from app.telemetry_session($1)', [id]);
  return rows[0] ?? null;
}

/** Moves a session to 'ending' for this caller (or says why not): the state the end starts from. */
export async function beginEnd(tx: Queryable, sessionId: string, userId: string | null, orgId: string | null): Promise<string> {
  const { rows } = await tx.query<{ s: string }>('select app.telemetry_begin_end($1, $2, $3) as s', [sessionId, userId, orgId]);
  return rows[0]!.s;
}

export async function sessionBatches(
  tx: Queryable,
  sessionId: string,
): Promise<{ seq: number; frame_count: number; payload: Buffer | Uint8Array }[]> {
  const { rows } = await tx.query<{ seq: number; frame_count: number; payload: Buffer | Uint8Array }>(
    'select * from app.telemetry_session_batches($1)',
    [sessionId],
  );
  return rows;
}

/** Stores the outcome of an ending session; false when another finalizer finished it first. */
export async function finish(
  tx: Queryable,
  sessionId: string,
  status: string,
  reason: string,
  resultJson: string | null,
  replayKey: string | null,
  batches: number,
  frames: number,
): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>('select app.telemetry_finish($1, $2, $3, $4::jsonb, $5, $6, $7) as ok', [
    sessionId,
    status,
    reason,
    resultJson,
    replayKey,
    batches,
    frames,
  ]);
  return rows[0]!.ok;
}

/** The user id of a sign-in subject, or null when the person never used the core API. */
export async function userBySubject(tx: Queryable, subject: string): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>('select app.telemetry_user_by_subject($1) as id', [subject]);
  return rows[0]?.id ?? null;
}

/** Records a batch of media events (consent checked inside): the gate's status and how many were new. */
export async function ingestMedia(
  tx: Queryable,
  userId: string,
  orgId: string,
  mediaSessionId: string,
  exerciseId: string | null,
  videoId: string | null,
  events: unknown[],
): Promise<{ status: string; accepted: number }> {
  const { rows } = await tx.query<{ status: string; accepted: number }>(
    'select * from app.telemetry_ingest_media($1, $2, $3, $4, $5, $6::jsonb)',
    [userId, orgId, mediaSessionId, exerciseId, videoId, JSON.stringify(events)],
  );
  return rows[0]!;
}
