import type { Database } from '@clinic/db';
import type { AssetStore } from '@clinic/assets';
import { finalizeSession } from '@clinic/telemetry';
import type { Logger } from 'pino';
import type { DomainEvent, WorkerRegistry } from '../../worker/types.ts';

export interface ExerciseSessionJobDeps {
  db: Database;
  assets: AssetStore;
  logger: Logger;
}

/** Spec 8: sessions silent this long without session_end are finalized as incomplete. */
export const SILENCE_MINUTES = 10;
/** Spec 8 retention. */
export const RETENTION = { mediaMetrics: '2 years', poseAggregates: '7 years', replayBlobs: '6 months' } as const;

interface Rep {
  index: number;
  start_ms: number;
  end_ms: number;
  range_deg: number;
  peak_deg: number;
  tempo_s: number;
  score: number;
}
interface EndedData {
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
  const r = d.result;
  await deps.db.transaction(async (tx) => {
    const ins = await tx.query(
      `insert into pose_session_metrics (session_id, organization_id, patient_user_id, exercise_id, status, rep_count, form_score, rom,
         algorithm_version, duration_s, frames, valid_frames, ended_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13) on conflict (session_id) do nothing`,
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
  });
}

/**
 * Sessions still open 10 minutes after their last batch (or their start, with none) are finalized as
 * incomplete: scored on what arrived, replay written, event published (finalizeSession, as the
 * telemetry service does it). Without an active biometric consent by then, nothing is scored: the
 * frames are dropped (processing after a withdrawal is not allowed).
 */
export async function sweepSilentSessions(deps: ExerciseSessionJobDeps, now = new Date()): Promise<number> {
  const { rows } = await deps.db.query<{ id: string; consent: string }>(
    `select s.id, app.telemetry_gate(s.patient_user_id, s.organization_id, 'biometric') as consent
     from exercise_sessions s
     where s.status in ('active', 'ending')
       and greatest(s.started_at, (select max(b.received_at) from pose_batches b where b.session_id = s.id)) < $1::timestamptz - interval '${SILENCE_MINUTES} minutes'
     order by s.started_at limit 100`,
    [now.toISOString()],
  );
  for (const s of rows) {
    if (s.consent !== 'ok') {
      await deps.db.transaction(async (tx) => {
        await tx.query(`update exercise_sessions set status = 'ending' where id = $1 and status = 'active'`, [s.id]);
        await tx.query(`select app.telemetry_finish($1, 'incomplete', 'consent_withdrawn', null, null, 0, 0)`, [s.id]);
      });
      continue;
    }
    await finalizeSession(deps, s.id, null, { status: 'incomplete', reason: 'silence' });
  }
  return rows.length;
}

/** Spec 8 retention: media metrics 2 years, pose aggregates 7 years, replay blobs 6 months. */
export async function applyRetention(
  deps: ExerciseSessionJobDeps,
  now = new Date(),
): Promise<{ media: number; sessions: number; replays: number }> {
  const at = now.toISOString();
  const media = await deps.db.query(
    `delete from media_session_metrics where created_at < $1::timestamptz - interval '${RETENTION.mediaMetrics}'`,
    [at],
  );
  const old = await deps.db.query<{ id: string; replay_key: string | null }>(
    `select id, replay_key from exercise_sessions where status in ('completed', 'incomplete') and ended_at < $1::timestamptz - interval '${RETENTION.replayBlobs}' and replay_key is not null limit 1000`,
    [at],
  );
  for (const s of old.rows) {
    // The blob first: a crash leaves the key set, and the next run deletes it again (delete is idempotent).
    await deps.assets.delete(s.replay_key!);
    await deps.db.query('update exercise_sessions set replay_key = null, replay_deleted_at = now() where id = $1', [s.id]);
  }
  // Sessions cascade to their pose session and rep metrics.
  const sessions = await deps.db.query(
    `delete from exercise_sessions where ended_at < $1::timestamptz - interval '${RETENTION.poseAggregates}'`,
    [at],
  );
  return { media: media.rowCount, sessions: sessions.rowCount, replays: old.rows.length };
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
}
