import { join } from 'node:path';
import { migrate, openPglite, openPostgres, type Database } from '@clinic/db';
import { createServiceLogger } from '@clinic/http-kit';
import { acquireLock, DataDirBusyError, type HeldLock } from '@clinic/db';
import { MIGRATIONS_DIR } from '@clinic/db';
import { createAssetStore } from '@clinic/assets';
import { composerConfigFromEnv } from './config.ts';
import { writeSamples } from './samples.ts';
import { createDelivery } from './delivery/index.ts';
import { importVideo, ImportError } from './import.ts';
import { settleProcessingRenders } from './jobs.ts';

const USAGE = [
  'usage: npm run composer -- import <exercise-slug> <video-file> [--language <code>]   (language defaults to en)',
  '       npm run composer -- samples [exercise-slug ...]   (sample primitives; default: the seeded squat, lunge and arm-raise)',
].join('\n');

/** The exercises the migrations seed: what a newcomer composes first. */
const SEEDED = ['squat', 'lunge', 'arm-raise'];
const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * `npm run composer -- samples [slug ...]`: writes the sample primitive set (src/samples.ts) for each
 * exercise into the asset store, so that a compose works on a fresh install. Needs ffmpeg, not the
 * database, so it runs beside `npm start` too.
 */
async function samplesCommand(slugs: string[]): Promise<number> {
  const bad = slugs.find((s) => !SLUG.test(s));
  if (bad) {
    process.stderr.write(`"${bad}" is not an exercise slug (lower-case letters, digits and hyphens)\n${USAGE}\n`);
    return 2;
  }
  const config = composerConfigFromEnv();
  const store = createAssetStore(config.assetStore, config.assetsDir);
  const targets = slugs.length ? slugs : SEEDED;
  process.stdout.write(`writing sample primitives for ${targets.join(', ')} (ffmpeg, a few seconds each)\n`);
  try {
    await writeSamples(store, targets, config.workDir, (slug) => process.stdout.write(`  ${slug}: done\n`));
  } catch (err) {
    process.stderr.write(`could not make the samples: ${(err as Error).message}; is ffmpeg installed (FFMPEG_PATH)?\n`);
    return 1;
  } finally {
    store.close?.();
  }
  return 0;
}

/**
 * `npm run composer -- import <slug> <file>`: the pre-baked video of a duration-based exercise.
 * On the embedded default it takes the data folder's lock, so it refuses while `npm start` runs
 * (the database belongs to one process); with DATABASE_URL it runs beside the services.
 */
export async function runCli(args: string[]): Promise<number> {
  if (args[0] === 'samples') return samplesCommand(args.slice(1));
  const [command, slug, file, ...rest] = args;
  const langAt = rest.indexOf('--language');
  const language = langAt >= 0 ? rest[langAt + 1] : 'en';
  if (command !== 'import' || !slug || !file || !language) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = composerConfigFromEnv();
  const logger = createServiceLogger({ level: config.logLevel });
  let lock: HeldLock | null = null;
  let db: Database;
  try {
    if (config.databaseUrl) db = await openPostgres({ connectionString: config.databaseUrl, max: 2 });
    else {
      lock = await acquireLock(config.dataDir);
      db = await openPglite(join(config.dataDir, 'pgdata'));
      await migrate(db, MIGRATIONS_DIR);
    }
  } catch (err) {
    if (err instanceof DataDirBusyError) {
      process.stderr.write(`The embedded server is running on ${config.dataDir}: stop it (Ctrl-C on npm start), then import again.\n`);
      return 1;
    }
    throw err;
  }
  const delivery = createDelivery(config, logger);
  try {
    const row = await importVideo(
      { db, delivery, tools: { ffmpeg: config.ffmpeg, ffprobe: config.ffprobe }, logger },
      { slug, language, file },
    );
    // Local HLS segments in this process: wait for it, then record the ready state before leaving.
    await delivery.close();
    if (delivery.kind === 'local') await settleProcessingRenders({ db, delivery, logger }, { minAgeSeconds: 0 });
    process.stdout.write(
      `${JSON.stringify({ render_id: row.id, stream_video_id: row.stream_video_id, playback_hls_url: row.playback_hls_url })}\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof ImportError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await db.close();
    await lock?.release();
  }
}
