import type { AssetStore } from '@clinic/assets';
import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import { asTelemetry } from './db.ts';
import * as q from './queries.ts';
import type { SessionRow } from './queries.ts';
import { decodeBatch, gunzipBatch } from './pose/format.ts';
import { concatBatches, scoreSession, type SessionScore } from './pose/scoring.ts';
import { gateError } from './gate.ts';

export interface FinalizeDeps {
  db: Database;
  assets: AssetStore;
  logger: Logger;
}

export interface EndedSession {
  session_id: string;
  status: 'completed' | 'incomplete';
  result: SessionScore | null;
  replay_available: boolean;
}

export const replayKey = (orgId: string, sessionId: string) => `telemetry/replays/${orgId}/${sessionId}.pose.gz`;

async function sessionRow(deps: FinalizeDeps, id: string): Promise<SessionRow | null> {
  return asTelemetry(deps.db, (tx) => q.sessionRow(tx, id));
}

const ended = (id: string, s: SessionRow): EndedSession => ({
  session_id: id,
  status: s.status as EndedSession['status'],
  result: s.result,
  replay_available: s.replay_key !== null,
});

/**
 * Ends a session (spec 4.11): stop taking batches, score every frame, write the replay blob, then in
 * ONE transaction store the result, drop the raw batches and publish exercise_session.ended.
 * `caller` is the patient (POST /v1/sessions/{id}/end: ownership and biometric consent checked) or
 * null for the silence sweep. Idempotent and crash-safe: a session left in `ending` is finished by the
 * next call (the batches are still there; the blob is rewritten under the same key).
 */
export async function finalizeSession(
  deps: FinalizeDeps,
  sessionId: string,
  caller: { userId: string; orgId: string } | null,
  outcome: { status: 'completed' | 'incomplete'; reason: 'session_end' | 'silence' },
): Promise<EndedSession> {
  const begun = await asTelemetry(deps.db, (tx) => q.beginEnd(tx, sessionId, caller?.userId ?? null, caller?.orgId ?? null));
  if (begun === 'completed' || begun === 'incomplete') return ended(sessionId, (await sessionRow(deps, sessionId))!);
  if (begun !== 'ending') throw gateError(begun, 'biometric')!;

  const session = (await sessionRow(deps, sessionId))!;
  const batches = await asTelemetry(deps.db, (tx) => q.sessionBatches(tx, sessionId));
  const payloads = batches.map((b) => Buffer.from(b.payload.buffer, b.payload.byteOffset, b.payload.byteLength));
  const decoded = payloads.map((p) => decodeBatch(gunzipBatch(p)));
  const frames = concatBatches(decoded);
  const result = frames.count ? scoreSession(frames, session.movement) : null;
  let key: string | null = null;
  if (payloads.length) {
    // Gzip members concatenated are one valid gzip stream: the replay is the batches as received.
    key = replayKey(session.organization_id, sessionId);
    await deps.assets.put(key, Buffer.concat(payloads), { contentType: 'application/gzip' });
  }
  const finished = await asTelemetry(deps.db, (tx) =>
    q.finish(tx, sessionId, outcome.status, outcome.reason, result ? JSON.stringify(result) : null, key, payloads.length, frames.count),
  );
  if (!finished) return ended(sessionId, (await sessionRow(deps, sessionId))!);
  deps.logger.info(
    { session: sessionId, reps: result?.rep_count ?? 0, frames: frames.count, status: outcome.status },
    'exercise session finalized',
  );
  return { session_id: sessionId, status: outcome.status, result, replay_available: key !== null };
}
