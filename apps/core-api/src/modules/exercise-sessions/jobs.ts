import type { Database } from '@clinic/db';
import type { AssetStore } from '@clinic/assets';
import { finalizeSession } from '@clinic/telemetry';
import type { Logger } from 'pino';
import { type Config, RETENTION_DEFAULTS } from '../../config.ts';
import type { DomainEvent, WorkerRegistry } from '../../worker/types.ts';
import {
  closeWithoutConsent,
  deleteMediaMetricsBefore,
  deleteSessionsEndedBefore,
  expiredReplays,
  knownReplayKeys,
  markReplayDeleted,
  silentSessions,
  writeSessionMetrics,
} from './queries.ts';

export interface ExerciseSessionJobDeps {
  db: Database;
  assets: AssetStore;
  logger: Logger;
  /** Spec 8 retention in calendar months (TELEMETRY_*_RETENTION_MONTHS); the defaults when absent. */
  retention?: Pick<Config['retention'], 'mediaMetricsMonths' | 'poseAggregatesMonths' | 'replayBlobsMonths'>;
}

/** Spec 8: sessions silent this long without session_end are finalized as incomplete. */
export const SILENCE_MINUTES = 10;

interface Rep {
  index: number;
  start_ms: number;
  end_ms: number;
  range_deg: number;
  peak_deg: number;
  tempo_s: number;
  score: number;
}
export interface EndedData {
  session_id: string;
  organization_id: string;
  patient_user_id: string;
  exercise_id: string;
  status: string;
  ended_at: string;
  result: null | {
    rep_count: number;
    form_score: number | null;
    rom: unknown;
    algorithm_version: string;
    duration_s: number;
    frames: number;
    valid_frames: number;
    reps: Rep[];
  };
}

/**
 * The consumer of exercise_session.ended (spec 4.11, 6.2): pose session metrics, one pose rep metrics row
 * per rep and the patient's exercise log, in one transaction. At-least-once delivery: the metrics row is
 * the idempotency key (a replayed event inserts nothing and so does not count the session twice).
 */
export async function handleSessionEnded(deps: Pick<ExerciseSessionJobDeps, 'db'>, event: DomainEvent): Promise<void> {
  const d = event.data as unknown as EndedData;
  await deps.db.transaction((tx) => writeSessionMetrics(tx, d));
}

/**
 * Sessions still open 10 minutes after their last batch (or their start, with none) are finalized as
 * incomplete: scored on what arrived, replay written, event published (finalizeSession, as the
 * telemetry service does it). Without an active biometric consent by then, nothing is scored: the
 * frames are dropped (processing after a withdrawal is not allowed).
 */
export async function sweepSilentSessions(deps: ExerciseSessionJobDeps, now = new Date()): Promise<number> {
  const rows = await silentSessions(deps.db, now, SILENCE_MINUTES);
  for (const s of rows) {
    if (s.consent !== 'ok') {
      await deps.db.transaction((tx) => closeWithoutConsent(tx, s.id));
      continue;
    }
    await finalizeSession(deps, s.id, null, { status: 'incomplete', reason: 'silence' });
  }
  return rows.length;
}

/**
 * Spec 8 retention, in calendar months counted by the database (settings, defaults: media metrics 2 years,
 * pose aggregates 7 years, replay blobs 6 months).
 */
export async function applyRetention(
  deps: ExerciseSessionJobDeps,
  now = new Date(),
): Promise<{ media: number; sessions: number; replays: number }> {
  const at = now.toISOString();
  const r = deps.retention ?? RETENTION_DEFAULTS;
  const media = await deleteMediaMetricsBefore(deps.db, at, `${r.mediaMetricsMonths} months`);
  const old = await expiredReplays(deps.db, at, `${r.replayBlobsMonths} months`);
  for (const s of old) {
    // The blob first: a crash leaves the key set, and the next run deletes it again (delete is idempotent).
    await deps.assets.delete(s.replay_key!);
    await markReplayDeleted(deps.db, s.id);
  }
  // Sessions cascade to their pose session and rep metrics.
  const sessions = await deleteSessionsEndedBefore(deps.db, at, `${r.poseAggregatesMonths} months`);
  return { media, sessions, replays: old.length };
}

/** A replay is written when its session ends, hours at most after it started: older orphans are safe to remove. */
export const ORPHAN_REPLAY_GRACE_MS = 24 * 3600 * 1000;
const REPLAY_KEY = /^telemetry\/replays\/[0-9a-f-]{36}\/([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\.pose\.gz$/;

/**
 * Removes replay blobs no session names: the session was erased (or deleted) and deleting the blob
 * after commit failed, or a crash came between writing a blob and committing the end. A session id is
 * a UUIDv7, so the key tells when its session started; younger ones are left alone. Returns the keys removed.
 */
export async function sweepOrphanReplays(deps: ExerciseSessionJobDeps, now = Date.now()): Promise<string[]> {
  const candidates = (await deps.assets.list('telemetry/replays/')).filter((key) => {
    const m = REPLAY_KEY.exec(key);
    return m !== null && now - parseInt(m[1]! + m[2]!, 16) > ORPHAN_REPLAY_GRACE_MS;
  });
  if (!candidates.length) return [];
  const known = new Set(await knownReplayKeys(deps.db, candidates));
  const orphans = candidates.filter((k) => !known.has(k));
  for (const key of orphans) await deps.assets.delete(key);
  return orphans;
}

/** Registered by apps/core-api/src/worker/registry.ts. */
export function registerExerciseSessionJobs(registry: WorkerRegistry, deps: ExerciseSessionJobDeps): void {
  registry.onEvent('exercise_session.ended', (event) => handleSessionEnded(deps, event));
  registry.every('exercise-sessions.silence-sweep', 60, async ({ logger }) => {
    const n = await sweepSilentSessions({ ...deps, logger });
    if (n) logger.info({ sessions: n }, 'silent exercise sessions finalized');
  });
  registry.every('telemetry.retention', 3600, async ({ logger }) => {
    const r = await applyRetention({ ...deps, logger });
    if (r.media || r.sessions || r.replays) logger.info(r, 'telemetry retention applied');
  });
  registry.every('telemetry.orphan_replays', 3600, async ({ logger }) => {
    const removed = await sweepOrphanReplays({ ...deps, logger });
    if (removed.length) logger.info({ count: removed.length }, 'removed orphan pose replays');
  });
}
