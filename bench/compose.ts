/**
 * Composer cost: a 4-set, 20-rep composition through POST /v1/compose (signed request,
 * cache miss: claim, render with stream copy, ffprobe check, upload to the local HLS provider, row
 * update) beside the floor `ffmpeg -f concat -c copy` of the same primitive files, measured
 * alternately in the same run; then the latency of a cache hit, and (separately) the time until
 * the background HLS segmenting makes the video playable. Target: compose / floor <= 1.5.
 *
 * The floor concat-copies the same video primitives AND the same voice-over primitives (two concat
 * lists mapped into one MP4), because the composed video carries that audio track. A video-only
 * concat is printed too, for reference. The floor gets no cuts, pads or check: those are the
 * composer's own work and count against it.
 *
 *   npx tsx bench/compose.ts            (ROUNDS=9 SIZE=1280x720 to change the defaults;
 *                                        BENCH_ASSETS=<dir> keeps the generated primitives there
 *                                        and reuses them on the next run)
 */
import { Writable } from 'node:stream';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, migrate } from '@clinic/db';
import { pino } from 'pino';
import { MIGRATIONS_DIR } from '@clinic/db';
import { buildComposerService } from '../apps/composer/src/app.ts';
import { signRequest } from '../apps/composer/src/auth.ts';
import { parseComposerConfig } from '../apps/composer/src/config.ts';
import { run } from '../apps/composer/src/ffmpeg.ts';
import { buildRecipe, recipeHash, type ComposeSet, type Recipe } from '../apps/composer/src/recipe.ts';
import { loadInventory } from '../apps/composer/src/assets.ts';
import { createLocalAssetStore } from '@clinic/assets';

const ROUNDS = Number(process.env.ROUNDS ?? 9);
const SIZE = process.env.SIZE ?? '1280x720';
const SECRET = 'bench-secret-'.padEnd(40, 'x');
const slug = 'bench-squat';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = async () =>
  (await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

const scratch = await mkdtemp(join(tmpdir(), 'bench-compose-'));
try {
  const assets = process.env.BENCH_ASSETS ?? join(scratch, 'assets');
  const dir = join(assets, slug);
  const reuse = await stat(join(dir, 'manifest.json')).then(
    () => true,
    () => false,
  );
  if (!reuse) await generate();
  // Primitives in the format the asset pipeline prepares (the same for every file of a kind).
  async function generate() {
    console.log(`generating primitives (${SIZE}, 30 fps, H.264 with a keyframe at each start; mp3 voice-overs)...`);
    const video = (name: string, seconds: number, hue: number) =>
      run(
        'ffmpeg',
        [
          '-hide_banner',
          '-loglevel',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          `testsrc2=s=${SIZE}:r=30:d=${seconds}`,
          '-vf',
          `hue=h=${hue}`,
          '-c:v',
          'libx264',
          '-preset',
          'veryfast',
          '-pix_fmt',
          'yuv420p',
          '-g',
          '60',
          '-video_track_timescale',
          '15360',
          '-an',
          join(dir, name),
        ],
        { timeoutMs: 300_000 },
      );
    const tone = (name: string, seconds: number, hz: number) =>
      run(
        'ffmpeg',
        [
          '-hide_banner',
          '-loglevel',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          `sine=frequency=${hz}:sample_rate=44100:duration=${seconds}`,
          '-ac',
          '1',
          '-c:a',
          'libmp3lame',
          '-b:a',
          '96k',
          join(dir, 'audio', 'en', name),
        ],
        { timeoutMs: 60_000 },
      );
    await mkdir(join(dir, 'audio', 'en'), { recursive: true });
    await writeFile(
      join(dir, 'manifest.json'),
      JSON.stringify({ exercise: slug, reps_per_video_block: 5, counts_per_audio_master: 20, sides: ['left', 'right'], languages: ['en'] }),
    );
    const jobs: Array<() => Promise<unknown>> = [];
    for (let n = 1; n <= 3; n++) {
      jobs.push(
        () => video(`intro-video-${n}.mp4`, 6, n * 20),
        () => video(`pauza-video-${n}.mp4`, 10, n * 40),
        () => video(`outro-video-${n}.mp4`, 5, n * 60),
      );
      jobs.push(
        () => video(`rep-left-video-${n}.mp4`, 5, n * 80),
        () => video(`rep-right-video-${n}.mp4`, 5, n * 100),
      );
      for (const [slot, secs] of [
        ['intro', 4],
        ['pauza', 3],
        ['outro', 3],
        ['rep-left', 20],
        ['rep-right', 20],
      ] as const)
        jobs.push(() => tone(`${slot}-vo-${n}.mp3`, secs, 200 + n * 100));
    }
    for (let i = 0; i < jobs.length; i += 2) await Promise.all(jobs.slice(i, i + 2).map((j) => j()));
  }

  const test = await createTestDatabase(null);
  await migrate(test.db, MIGRATIONS_DIR);
  await test.db.query(`insert into exercises (slug, name, kind, status) values ($1, 'Squat', 'reps_based', 'published')`, [slug]);
  const config = parseComposerConfig({
    NODE_ENV: 'development',
    DATA_DIR: join(scratch, 'data'),
    COMPOSER_ASSETS_DIR: assets,
    COMPOSER_CACHE_DIR: join(scratch, 'cache'),
    COMPOSER_WORK_DIR: scratch,
    COMPOSER_AUTH_SECRETS: SECRET,
  });
  // The composer logs each render's phases ('render done'); the bench keeps them for the breakdown.
  const phases: Array<Record<string, number>> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        const o = JSON.parse(line) as Record<string, unknown>;
        if (o.msg === 'render done') phases.push(o as Record<string, number>);
        else if ((o.level as number) >= 40) process.stderr.write(`${line}\n`);
      }
      cb();
    },
  });
  const svc = await buildComposerService(config, { db: test.db, logger: pino({ level: 'info' }, sink) });
  const sets = [
    { side: 'left', reps: 20 },
    { side: 'right', reps: 20 },
    { side: 'left', reps: 20 },
    { side: 'right', reps: 20 },
  ];
  const compose = async (seed: number) => {
    const payload = JSON.stringify({ exercise: slug, language: 'en', sets, seed });
    const t0 = performance.now();
    const res = await svc.app.inject({
      method: 'POST',
      url: '/v1/compose',
      payload,
      headers: { 'content-type': 'application/json', authorization: signRequest(SECRET, 'POST', '/v1/compose', payload) },
    });
    const ms = performance.now() - t0;
    if (res.statusCode >= 300) throw new Error(`compose answered ${res.statusCode}: ${res.body}`);
    return { ms, status: res.statusCode, data: res.json().data };
  };
  /** `ffmpeg -f concat -c copy` of the recipe's primitive files: video only, or video and voice-overs. */
  const floor = async (recipe: Recipe, withAudio: boolean) => {
    const list = (files: string[]) => `${files.map((f) => `file '${join(dir, f)}'`).join('\n')}\n`;
    await writeFile(join(scratch, 'floor-v.txt'), list(recipe.segments.flatMap((s) => ('blocks' in s ? s.blocks : [s.video]))));
    await writeFile(join(scratch, 'floor-a.txt'), list(recipe.segments.flatMap((s) => ('blocks' in s ? s.audio : [s.audio]))));
    const inputs = [
      '-f',
      'concat',
      '-safe',
      '0',
      '-i',
      join(scratch, 'floor-v.txt'),
      ...(withAudio ? ['-f', 'concat', '-safe', '0', '-i', join(scratch, 'floor-a.txt'), '-map', '0:v', '-map', '1:a'] : []),
    ];
    const t0 = performance.now();
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...inputs, '-c', 'copy', join(scratch, 'floor.mp4')], {
      timeoutMs: 300_000,
    });
    return performance.now() - t0;
  };
  const recipeOf = async (id: string) =>
    (await test.db.query<{ recipe: Recipe }>('select recipe from exercise_renders where id = $1', [id])).rows[0]!.recipe;

  // Warm-up: the first render copies its primitives out of the store and probes them; after it the
  // composer prepares the exercise's other variants in the background (idle() waits for that), as
  // a running service would have done long before. The rounds below measure that steady state.
  const cold = await compose(1);
  await svc.composer.idle();
  console.log(`cold render (primitives fetched and probed): ${cold.ms.toFixed(0)} ms, video ${cold.data.duration_seconds.toFixed(1)} s`);
  await floor(await recipeOf(cold.data.id), true);
  const inventory = await loadInventory(createLocalAssetStore(assets), slug);
  console.log(`load average at start: ${await load()}`);

  const composeMs: number[] = [];
  const floorMs: number[] = [];
  const videoFloorMs: number[] = [];
  const readyMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // The order alternates, so neither side always runs right after the other's disk writes.
    // The recipe this seed makes, so the floor concatenates exactly the files the compose will.
    const recipe = buildRecipe({ exercise: slug, language: 'en', sets: sets as ComposeSet[], seed: 1000 + i }, inventory);
    const side = async () => {
      const c = await compose(1000 + i);
      if (c.status !== 201 || c.data.recipe_hash !== recipeHash(recipe)) throw new Error('expected a cache miss of the predicted recipe');
      composeMs.push(c.ms);
      const t0 = performance.now();
      await svc.composer.idle(); // background HLS segmenting, not part of the response
      readyMs.push(performance.now() - t0);
    };
    if (i % 2 === 0) await side();
    floorMs.push(await floor(recipe, true));
    videoFloorMs.push(await floor(recipe, false));
    if (i % 2 === 1) await side();
  }
  const hits: number[] = [];
  for (let i = 0; i < 200; i++) hits.push((await compose(1000)).ms);

  const ratio = median(composeMs) / median(floorMs);
  console.log(`\n4 sets x 20 reps (${cold.data.duration_seconds.toFixed(1)} s of ${SIZE}), ${ROUNDS} rounds, medians:`);
  console.log(
    `  compose (cache miss, response)      ${median(composeMs).toFixed(0)} ms   [${composeMs.map((x) => x.toFixed(0)).join(' ')}]`,
  );
  console.log(`  floor: concat -c copy, video+vo     ${median(floorMs).toFixed(0)} ms   [${floorMs.map((x) => x.toFixed(0)).join(' ')}]`);
  console.log(
    `  (reference: concat -c copy, video)  ${median(videoFloorMs).toFixed(0)} ms   [${videoFloorMs.map((x) => x.toFixed(0)).join(' ')}]`,
  );
  const warm = phases.slice(1);
  const phase = (k: string) => median(warm.map((p) => p[k] ?? 0)).toFixed(0);
  console.log(
    `  compose phases (medians): prepare ${phase('prepare_ms')}, ffmpeg ${phase('ffmpeg_ms')}, ffprobe check ${phase('check_ms')}, upload ${phase('upload_ms')}, row update ${phase('complete_ms')} ms; render folder and claim: the rest`,
  );
  console.log(`  HLS segmenting after the response   ${median(readyMs).toFixed(0)} ms`);
  console.log(
    `  cache hit                           ${median(hits).toFixed(2)} ms (p95 ${[...hits].sort((a, b) => a - b)[Math.floor(hits.length * 0.95)]!.toFixed(2)} ms)`,
  );
  console.log(`  load average at end: ${await load()}`);
  console.log(`\nratio compose / floor: ${ratio.toFixed(2)} (target <= 1.5) ${ratio <= 1.5 ? 'OK' : 'ABOVE TARGET'}`);
  await svc.close();
  await test.drop();
} finally {
  await rm(scratch, { recursive: true, force: true });
}
