/**
 * Composer cost (issue 9): a 4-set, 20-rep composition through POST /v1/compose (signed request,
 * cache miss: claim, render with stream copy, ffprobe check, upload to the local HLS provider, row
 * update) beside the floor `ffmpeg -f concat -c copy` of the same primitive video files, measured
 * alternately in the same run; then the latency of a cache hit, and (separately) the time until
 * the background HLS segmenting makes the video playable. Target: compose / floor <= 1.5.
 *
 *   npx tsx bench/compose.ts            (ROUNDS=7 SIZE=1280x720 to change the defaults)
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, migrate } from '@clinic/db';
import { pino } from 'pino';
import { MIGRATIONS_DIR } from '../apps/core-api/src/platform/runtime.ts';
import { buildComposerService } from '../apps/composer/src/app.ts';
import { signRequest } from '../apps/composer/src/auth.ts';
import { parseComposerConfig } from '../apps/composer/src/config.ts';
import { run } from '../apps/composer/src/ffmpeg.ts';
import type { Recipe } from '../apps/composer/src/recipe.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const SIZE = process.env.SIZE ?? '1280x720';
const SECRET = 'bench-secret-'.padEnd(40, 'x');
const slug = 'bench-squat';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const scratch = await mkdtemp(join(tmpdir(), 'bench-compose-'));
try {
  const assets = join(scratch, 'assets');
  const dir = join(assets, slug);
  console.log(`generating primitives (${SIZE}, 30 fps, H.264 with a keyframe at each start; mp3 voice-overs)...`);
  const video = (name: string, seconds: number, hue: number) =>
    run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=s=${SIZE}:r=30:d=${seconds}`, '-vf', `hue=h=${hue}`,
      '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-g', '60', '-video_track_timescale', '15360', '-an', join(dir, name)], { timeoutMs: 300_000 });
  const tone = (name: string, seconds: number, hz: number) =>
    run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=${hz}:sample_rate=44100:duration=${seconds}`,
      '-ac', '1', '-c:a', 'libmp3lame', '-b:a', '96k', join(dir, 'audio', 'en', name)], { timeoutMs: 60_000 });
  await run('mkdir', ['-p', join(dir, 'audio', 'en')], { timeoutMs: 5000 });
  await writeFile(join(dir, 'manifest.json'), JSON.stringify({ exercise: slug, reps_per_video_block: 5, counts_per_audio_master: 20, sides: ['left', 'right'], languages: ['en'] }));
  const jobs: Array<() => Promise<unknown>> = [];
  for (let n = 1; n <= 3; n++) {
    jobs.push(() => video(`intro-video-${n}.mp4`, 6, n * 20), () => video(`pauza-video-${n}.mp4`, 10, n * 40), () => video(`outro-video-${n}.mp4`, 5, n * 60));
    jobs.push(() => video(`rep-left-video-${n}.mp4`, 5, n * 80), () => video(`rep-right-video-${n}.mp4`, 5, n * 100));
    for (const [slot, secs] of [['intro', 4], ['pauza', 3], ['outro', 3], ['rep-left', 20], ['rep-right', 20]] as const) jobs.push(() => tone(`${slot}-vo-${n}.mp3`, secs, 200 + n * 100));
  }
  for (let i = 0; i < jobs.length; i += 2) await Promise.all(jobs.slice(i, i + 2).map((j) => j()));

  const test = await createTestDatabase(null);
  await migrate(test.db, MIGRATIONS_DIR);
  await test.db.query(`insert into exercises (slug, name, kind, status) values ($1, 'Squat', 'reps_based', 'published')`, [slug]);
  const config = parseComposerConfig({
    NODE_ENV: 'development', DATA_DIR: join(scratch, 'data'), COMPOSER_ASSETS_DIR: assets, COMPOSER_CACHE_DIR: join(scratch, 'cache'),
    COMPOSER_WORK_DIR: scratch, COMPOSER_AUTH_SECRETS: SECRET,
  });
  const svc = await buildComposerService(config, { db: test.db, logger: pino({ level: process.env.BENCH_LOG ?? 'warn' }) });
  const sets = [{ side: 'left', reps: 20 }, { side: 'right', reps: 20 }, { side: 'left', reps: 20 }, { side: 'right', reps: 20 }];
  const compose = async (seed: number) => {
    const payload = JSON.stringify({ exercise: slug, language: 'en', sets, seed });
    const t0 = performance.now();
    const res = await svc.app.inject({ method: 'POST', url: '/v1/compose', payload, headers: { 'content-type': 'application/json', authorization: signRequest(SECRET, 'POST', '/v1/compose', payload) } });
    const ms = performance.now() - t0;
    if (res.statusCode >= 300) throw new Error(`compose answered ${res.statusCode}: ${res.body}`);
    return { ms, status: res.statusCode, data: res.json().data };
  };
  const floor = async (recipe: Recipe) => {
    const files = recipe.segments.flatMap((s) => ('blocks' in s ? s.blocks : [s.video])).map((f) => join(dir, f));
    await writeFile(join(scratch, 'floor.txt'), files.map((f) => `file '${f}'`).join('\n') + '\n');
    const t0 = performance.now();
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'concat', '-safe', '0', '-i', join(scratch, 'floor.txt'), '-c', 'copy', join(scratch, 'floor.mp4')], { timeoutMs: 300_000 });
    return performance.now() - t0;
  };
  const recipeOf = async (id: string) => (await test.db.query<{ recipe: Recipe }>('select recipe from exercise_renders where id = $1', [id])).rows[0]!.recipe;

  // Warm-up: the first render copies the primitives out of the store and probes them once per asset version.
  const cold = await compose(1);
  await svc.composer.idle();
  console.log(`cold render (primitives fetched and probed): ${cold.ms.toFixed(0)} ms, video ${cold.data.duration_seconds.toFixed(1)} s`);
  await floor(await recipeOf(cold.data.id));

  const composeMs: number[] = [];
  const floorMs: number[] = [];
  const readyMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const c = await compose(1000 + i);
    if (c.status !== 201) throw new Error('expected a cache miss');
    composeMs.push(c.ms);
    const t0 = performance.now();
    await svc.composer.idle(); // background HLS segmenting, not part of the response
    readyMs.push(performance.now() - t0);
    floorMs.push(await floor(await recipeOf(c.data.id)));
  }
  const hits: number[] = [];
  for (let i = 0; i < 200; i++) hits.push((await compose(1000)).ms);

  const ratio = median(composeMs) / median(floorMs);
  console.log(`\n4 sets x 20 reps (${cold.data.duration_seconds.toFixed(1)} s of ${SIZE}), ${ROUNDS} rounds, medians:`);
  console.log(`  compose (cache miss, response)      ${median(composeMs).toFixed(0)} ms   [${composeMs.map((x) => x.toFixed(0)).join(' ')}]`);
  console.log(`  floor: ffmpeg -f concat -c copy     ${median(floorMs).toFixed(0)} ms   [${floorMs.map((x) => x.toFixed(0)).join(' ')}]`);
  console.log(`  HLS segmenting after the response   ${median(readyMs).toFixed(0)} ms`);
  console.log(`  cache hit                           ${median(hits).toFixed(2)} ms (p95 ${[...hits].sort((a, b) => a - b)[Math.floor(hits.length * 0.95)]!.toFixed(2)} ms)`);
  console.log(`\nratio compose / floor: ${ratio.toFixed(2)} (target <= 1.5) ${ratio <= 1.5 ? 'OK' : 'ABOVE TARGET'}`);
  await svc.close();
  await test.drop();
} finally {
  await rm(scratch, { recursive: true, force: true });
}
