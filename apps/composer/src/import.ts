import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import type { DeliveryProvider } from './delivery/types.ts';
import { probe, type Tools } from './ffmpeg.ts';
import * as q from './queries.ts';

export class ImportError extends Error {}

const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

/**
 * Imports the pre-baked video of a duration-based exercise (spec 4.12): checked with ffprobe,
 * uploaded to the delivery provider, stored as the render row with recipe hash `_imported` and no
 * recipe, at the exercise's current asset version. Importing again replaces that row's video.
 */
export async function importVideo(
  d: { db: Database; delivery: DeliveryProvider; tools: Tools; logger: Logger },
  input: { slug: string; language: string; file: string },
): Promise<q.RenderRow> {
  if (!LANGUAGE.test(input.language)) throw new ImportError(`language "${input.language}" is not a language code like en or pt-BR`);
  const ex = await q.asComposer(d.db, (tx) => q.findExercise(tx, input.slug));
  if (!ex) throw new ImportError(`no exercise with slug "${input.slug}"`);
  if (ex.kind !== 'duration_based')
    throw new ImportError(`"${input.slug}" is reps-based: its videos are composed from primitives, not imported`);
  const p = await probe(d.tools, input.file).catch((err: Error) => {
    throw new ImportError(`${input.file} is not a readable video: ${err.message}`);
  });
  if (!p.video || !(p.duration > 0)) throw new ImportError(`${input.file} has no video stream`);
  const video = await d.delivery.upload(input.file, { name: `${input.slug}_imported_${input.language}_v${ex.asset_version}` });
  const row = await q.asComposer(d.db, (tx) => q.upsertImported(tx, ex, input.language, video, p.duration));
  d.logger.info(
    { exercise: input.slug, language: input.language, asset_version: ex.asset_version, stream_video_id: video.streamVideoId },
    'video imported',
  );
  return row;
}
