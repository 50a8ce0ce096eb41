import type { Database, Queryable } from '@clinic/db';
import type { DeliveredVideo } from './delivery/types.ts';
import type { Recipe } from './recipe.ts';

/**
 * Every statement of the composer runs as its own restricted role (migration 0041): it can read
 * exercises and read and write renders, nothing else, whatever login the connection uses.
 */
export function asComposer<T>(db: Database, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(`select set_config('role', 'app_composer', true)`);
    return fn(tx);
  });
}

export interface ExerciseRow {
  id: string;
  organization_id: string | null;
  slug: string;
  kind: 'reps_based' | 'duration_based';
  status: string;
  asset_version: number;
}

export interface RenderRow {
  id: string;
  exercise_id: string;
  recipe_hash: string;
  language: string;
  asset_version: number;
  status: 'rendering' | 'processing' | 'ready' | 'failed';
  stream_video_id: string | null;
  playback_hls_url: string | null;
  duration_seconds: number | null;
  claim_token: string | null;
  /** Seconds since the claim's last heartbeat (rendering rows). */
  idle_seconds: number | null;
}

const RENDER_COLS = `id, exercise_id, recipe_hash, language, asset_version, status, stream_video_id, playback_hls_url,
  duration_seconds, claim_token, extract(epoch from now() - heartbeat_at)::float8 as idle_seconds`;

export async function findExercise(tx: Queryable, slug: string): Promise<ExerciseRow | null> {
  const { rows } = await tx.query<ExerciseRow>(
    'select id, organization_id, slug, kind, status, asset_version from exercises where slug = $1',
    [slug],
    { name: 'composer_exercise' },
  );
  return rows[0] ?? null;
}

export async function findRender(
  tx: Queryable,
  key: { exerciseId: string; hash: string; language: string; assetVersion: number },
): Promise<RenderRow | null> {
  const { rows } = await tx.query<RenderRow>(
    `select ${RENDER_COLS} from exercise_renders where exercise_id = $1 and recipe_hash = $2 and language = $3 and asset_version = $4`,
    [key.exerciseId, key.hash, key.language, key.assetVersion],
    { name: 'composer_find_render' },
  );
  return rows[0] ?? null;
}

/**
 * Claims the render of a key for this instance: a new row, or a failed one, or one whose renderer
 * stopped sending heartbeats. Returns the row and whether this call holds the claim; the unique key
 * makes the insert the database-level guard between instances.
 */
export async function claimRender(
  tx: Queryable,
  r: { exercise: ExerciseRow; hash: string; language: string; recipe: Recipe; token: string; staleSeconds: number },
): Promise<{ row: RenderRow; claimed: boolean }> {
  const inserted = await tx.query<RenderRow>(
    `insert into exercise_renders (exercise_id, organization_id, recipe_hash, language, asset_version, recipe, status, claim_token, heartbeat_at)
     values ($1, $2, $3, $4, $5, $6::jsonb, 'rendering', $7, now())
     on conflict (exercise_id, recipe_hash, language, asset_version) do nothing returning ${RENDER_COLS}`,
    [r.exercise.id, r.exercise.organization_id, r.hash, r.language, r.exercise.asset_version, JSON.stringify(r.recipe), r.token],
  );
  if (inserted.rows[0]) return { row: inserted.rows[0], claimed: true };
  const taken = await tx.query<RenderRow>(
    `update exercise_renders set status = 'rendering', claim_token = $2, heartbeat_at = now(), error = null
     where exercise_id = $1 and recipe_hash = $3 and language = $4 and asset_version = $5
       and (status = 'failed' or (status = 'rendering' and heartbeat_at < now() - make_interval(secs => $6)))
     returning ${RENDER_COLS}`,
    [r.exercise.id, r.token, r.hash, r.language, r.exercise.asset_version, r.staleSeconds],
  );
  if (taken.rows[0]) return { row: taken.rows[0], claimed: true };
  const row = await findRender(tx, {
    exerciseId: r.exercise.id,
    hash: r.hash,
    language: r.language,
    assetVersion: r.exercise.asset_version,
  });
  if (!row) throw new Error('render row vanished while claiming');
  return { row, claimed: false };
}

export async function heartbeat(tx: Queryable, id: string, token: string): Promise<void> {
  await tx.query(`update exercise_renders set heartbeat_at = now() where id = $1 and claim_token = $2`, [id, token]);
}

/** Stores the delivered video on the claimed row; false when the claim was lost meanwhile. */
export async function completeRender(
  tx: Queryable,
  id: string,
  token: string,
  v: DeliveredVideo,
  durationSeconds: number,
): Promise<RenderRow | null> {
  const { rows } = await tx.query<RenderRow & { organization_id: string | null }>(
    `update exercise_renders set status = $3, stream_video_id = $4, playback_hls_url = $5, duration_seconds = $6,
       claim_token = null, heartbeat_at = null
     where id = $1 and claim_token = $2 returning ${RENDER_COLS}, organization_id`,
    [id, token, v.state === 'ready' ? 'ready' : 'processing', v.streamVideoId, v.playbackHlsUrl, durationSeconds],
  );
  const row = rows[0] ?? null;
  if (row?.status === 'ready') await emitReady(tx, row);
  return row;
}

export async function failRender(tx: Queryable, id: string, token: string, error: string): Promise<void> {
  await tx.query(
    `update exercise_renders set status = 'failed', error = $3, claim_token = null, heartbeat_at = null where id = $1 and claim_token = $2`,
    [id, token, error.slice(0, 1000)],
  );
}

/** Records what the provider now says about a processing row (ready or failed); idempotent. */
export async function settleProcessing(tx: Queryable, id: string, v: DeliveredVideo): Promise<void> {
  if (v.state === 'processing') return;
  const { rows } = await tx.query<RenderRow & { organization_id: string | null }>(
    `update exercise_renders set status = $2, error = $3 where id = $1 and status = 'processing' returning ${RENDER_COLS}, organization_id`,
    [id, v.state === 'ready' ? 'ready' : 'failed', v.error ?? null],
  );
  if (rows[0]?.status === 'ready') await emitReady(tx, rows[0]);
}

/** Rows processing for longer than `minAgeSeconds` (younger ones are followed up by their renderer). */
export async function listProcessing(tx: Queryable, limit: number, minAgeSeconds: number): Promise<RenderRow[]> {
  const { rows } = await tx.query<RenderRow>(
    `select ${RENDER_COLS} from exercise_renders where status = 'processing' and updated_at < now() - make_interval(secs => $2)
     order by updated_at limit $1`,
    [limit, minAgeSeconds],
  );
  return rows;
}

/** The row of an imported video (recipe hash `_imported`, no recipe): a re-import replaces the video. */
export async function upsertImported(
  tx: Queryable,
  exercise: ExerciseRow,
  language: string,
  v: DeliveredVideo,
  durationSeconds: number,
): Promise<RenderRow> {
  const { rows } = await tx.query<RenderRow>(
    `insert into exercise_renders (exercise_id, organization_id, recipe_hash, language, asset_version, recipe, status, stream_video_id, playback_hls_url, duration_seconds)
     values ($1, $2, '_imported', $3, $4, null, $5, $6, $7, $8)
     on conflict (exercise_id, recipe_hash, language, asset_version) do update
       set status = excluded.status, stream_video_id = excluded.stream_video_id, playback_hls_url = excluded.playback_hls_url,
           duration_seconds = excluded.duration_seconds, error = null
     returning ${RENDER_COLS}`,
    [
      exercise.id,
      exercise.organization_id,
      language,
      exercise.asset_version,
      v.state === 'ready' ? 'ready' : 'processing',
      v.streamVideoId,
      v.playbackHlsUrl,
      durationSeconds,
    ],
  );
  return rows[0]!;
}

async function emitReady(tx: Queryable, row: RenderRow & { organization_id: string | null }): Promise<void> {
  await tx.query(`select app.emit_event($1, 'exercise.render_ready', $2::jsonb)`, [
    row.organization_id,
    JSON.stringify({
      render_id: row.id,
      exercise_id: row.exercise_id,
      recipe_hash: row.recipe_hash,
      language: row.language,
      asset_version: row.asset_version,
      stream_video_id: row.stream_video_id,
      playback_hls_url: row.playback_hls_url,
    }),
  ]);
}
