import assert from 'node:assert/strict';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createLocalAssetStore } from '@clinic/assets';
import { loadInventory } from '../src/assets.ts';
import { buildComposerService } from '../src/app.ts';
import { parseComposerConfig } from '../src/config.ts';
import type { DeliveryProvider } from '../src/delivery/types.ts';
import { probe } from '../src/ffmpeg.ts';
import { buildRecipe, recipeHash, type Recipe } from '../src/recipe.ts';
import { startComposerTest, type ComposerTest } from './helpers.ts';
import { colorAt, FIXTURE, makeTone, makeVideo, toneAt, writeFixtureExercise } from './media.ts';
import { skipWithoutFfmpeg } from '../src/ffmpeg.ts';

const tools = { ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' };
const near = (a: number[], b: number[], tol = 40) => a.every((v, i) => Math.abs(v - b[i]!) <= tol);

/** Counts calls into a provider, to prove what a request did or did not touch. */
function counting(inner: DeliveryProvider) {
  const calls = { upload: 0, status: 0 };
  const p: DeliveryProvider = {
    kind: inner.kind,
    upload: (f, m) => {
      calls.upload++;
      return inner.upload(f, m);
    },
    status: (id) => {
      calls.status++;
      return inner.status(id);
    },
    close: () => inner.close(),
  };
  return { p, calls };
}

describe('composer: rendering, cache and delivery on real media', { skip: skipWithoutFfmpeg() }, () => {
  let t: ComposerTest;
  const slug = 'cmp-squat';
  before(async () => {
    t = await startComposerTest();
    await writeFixtureExercise(t.assetsDir, slug);
    await t.addExercise(slug);
  });
  after(() => t.close());

  it('describes itself like every service: GET /openapi.json and /docs, unsigned', async () => {
    const res = await t.svc.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200, res.body);
    const spec = res.json();
    assert.equal(spec.openapi, '3.1.0');
    assert.ok(spec.paths['/v1/compose']?.post, 'the compose operation is described');
    assert.equal(spec.paths['/v1/compose'].post.operationId, 'compose');
    const docs = await t.svc.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.headers['content-type'] as string, /text\/html/);
  });

  const body = (
    seed: number,
    sets = [
      { side: 'left', reps: 10 },
      { side: 'right', reps: 5 },
    ],
  ) => ({ exercise: slug, language: 'en', sets, seed });
  const recipeOf = async (id: string) =>
    (await t.db.query<{ recipe: Recipe }>('select recipe from exercise_renders where id = $1', [id])).rows[0]!.recipe;
  const sourceOf = (streamVideoId: string) => join((t.config.delivery as { root: string }).root, streamVideoId, 'source.mp4');

  it('bakes the video: expected duration, streams, and every segment in order with its voice-over', async () => {
    const res = await t.compose(body(7));
    assert.equal(res.statusCode, 201, res.body);
    const data = res.json().data;
    assert.equal(data.cached, false);
    assert.equal(data.status, 'processing');
    assert.match(data.recipe_hash, /^[0-9a-f]{64}$/);
    assert.equal(data.playback_hls_url, `http://composer.test/v1/hls/${data.stream_video_id}/index.m3u8`);

    const file = sourceOf(data.stream_video_id);
    const p = await probe(tools, file);
    // intro 2 + two rep blocks 4 + pause 1 + one rep block 2 + outro 1
    assert.ok(Math.abs(p.duration - 10) < 0.15, `duration ${p.duration}`);
    assert.equal(p.video?.codec, 'h264');
    assert.equal(p.audio?.codec, 'mp3');
    assert.ok(Math.abs(data.duration_seconds - p.duration) < 0.01);

    const recipe = await recipeOf(data.id);
    assert.deepEqual(
      recipe.segments.map((s) => s.slot),
      ['intro', 'rep-left', 'pauza', 'rep-right', 'outro'],
    );
    const video = (name: string) => FIXTURE.videos.find((v) => v.file === name)!;
    const tone = (name: string) => FIXTURE.tones.find((x) => x.file === name)!;
    let at = 0;
    for (const s of recipe.segments) {
      const clips = 'blocks' in s ? s.blocks : [s.video];
      const start = at;
      for (const c of clips) {
        const rgb = await colorAt(file, at + video(c).seconds / 2);
        assert.ok(near(rgb, video(c).color), `${c} at ${at}s: got ${rgb}, want ${video(c).color}`);
        at += video(c).seconds;
      }
      const vo = tone('blocks' in s ? s.audio[0]! : s.audio);
      const hz = await toneAt(file, start + 0.2);
      assert.ok(Math.abs(hz - vo.hz) <= 25, `${vo.file} at ${start}s: got ${hz} Hz, want ${vo.hz}`);
      // A voice-over shorter than its segment is followed by silence up to the segment's end.
      if (vo.seconds + 0.4 < at - start) assert.equal(await toneAt(file, start + vo.seconds + 0.1), 0, `silence after ${vo.file}`);
    }

    // The embedded provider segments the video into HLS in the background; then it plays.
    await t.svc.composer.idle();
    const row = (await t.db.query<{ status: string }>('select status from exercise_renders where id = $1', [data.id])).rows[0]!;
    assert.equal(row.status, 'ready');
    const playlist = await t.svc.app.inject({ method: 'GET', url: `/v1/hls/${data.stream_video_id}/index.m3u8` });
    assert.equal(playlist.statusCode, 200);
    assert.equal(playlist.headers['content-type'], 'application/vnd.apple.mpegurl');
    assert.match(playlist.body, /#EXT-X-ENDLIST/);
    const segment = playlist.body.split('\n').find((l) => l.endsWith('.ts'))!;
    const seg = await t.svc.app.inject({ method: 'GET', url: `/v1/hls/${data.stream_video_id}/${segment}` });
    assert.equal(seg.statusCode, 200);
    assert.equal(seg.headers['content-type'], 'video/mp2t');
    assert.equal((await t.svc.app.inject({ method: 'GET', url: `/v1/hls/${data.stream_video_id}/../../x` })).statusCode, 404);
    // A ready render emitted its domain event in the same transaction.
    const ev = await t.db.query<{ n: number }>(
      `select count(*)::int as n from domain_events where type = 'exercise.render_ready' and data->>'render_id' = $1`,
      [data.id],
    );
    assert.equal(ev.rows[0]!.n, 1);
  });

  it('the same seed gives the same recipe hash and a cache hit; another seed may not', async () => {
    const a = (await t.compose(body(7))).json().data;
    assert.equal(a.cached, true);
    const inv = await loadInventory(createLocalAssetStore(t.assetsDir), slug);
    const hashOf = (seed: number) => recipeHash(buildRecipe({ ...body(seed), sets: body(seed).sets as never }, inv));
    assert.equal(hashOf(7), a.recipe_hash);
    assert.equal(hashOf(7), hashOf(7));
    const other = [...Array(50).keys()].find((s) => hashOf(s) !== a.recipe_hash);
    assert.ok(other !== undefined, 'some seed chooses other variants');
    const b = await t.compose(body(other!));
    assert.equal(b.statusCode, 201);
    assert.notEqual(b.json().data.recipe_hash, a.recipe_hash);
  });

  it('a cache hit touches neither ffmpeg nor the delivery provider', async () => {
    // A second instance on the same database whose ffmpeg does not exist and whose provider throws.
    const config = parseComposerConfig({
      NODE_ENV: 'test',
      DATA_DIR: join(t.scratch, 'data2'),
      COMPOSER_CACHE_DIR: join(t.scratch, 'cache2'),
      COMPOSER_ASSETS_DIR: t.assetsDir,
      FFMPEG_PATH: '/nonexistent/ffmpeg',
      FFPROBE_PATH: '/nonexistent/ffprobe',
    });
    const refuse = (): never => {
      throw new Error('provider touched');
    };
    const svc = await buildComposerService(config, {
      db: t.db,
      logger: pino({ level: 'silent' }),
      delivery: { kind: 'stream', upload: refuse, status: refuse, close: async () => {} },
    });
    try {
      const res = await svc.app.inject({ method: 'POST', url: '/v1/compose', payload: body(7) });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.cached, true);
      // A miss on that instance does need ffmpeg: the request fails and nothing is cached as ready.
      const miss = await svc.app.inject({ method: 'POST', url: '/v1/compose', payload: body(7, [{ side: 'right', reps: 20 }]) });
      assert.equal(miss.statusCode, 500);
      assert.equal(miss.json().error.code, 'render_failed');
    } finally {
      await svc.close();
    }
  });

  it('concurrent identical requests render once, within one instance and across two', async () => {
    const one = counting(t.svc.delivery);
    const mk = async (n: number) =>
      buildComposerService(
        parseComposerConfig({
          NODE_ENV: 'test',
          DATA_DIR: join(t.scratch, `d${n}`),
          COMPOSER_CACHE_DIR: join(t.scratch, `c${n}`),
          COMPOSER_ASSETS_DIR: t.assetsDir,
        }),
        { db: t.db, logger: pino({ level: 'silent' }), delivery: one.p },
      );
    const [a, b] = [await mk(1), await mk(2)];
    try {
      const req = body(11, [
        { side: 'left', reps: 20 },
        { side: 'left', reps: 15 },
      ]);
      const results = await Promise.all([a, a, a, b, b, b].map((s) => s.app.inject({ method: 'POST', url: '/v1/compose', payload: req })));
      const statuses = results.map((r) => r.statusCode).sort();
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 201], results.map((r) => r.body).join('\n'));
      assert.equal(new Set(results.map((r) => r.json().data.id)).size, 1);
      assert.equal(one.calls.upload, 1);
      const n = await t.db.query<{ n: number }>(`select count(*)::int as n from exercise_renders where recipe_hash = $1`, [
        results[0]!.json().data.recipe_hash,
      ]);
      assert.equal(n.rows[0]!.n, 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a row of another asset version is a miss; the new version then hits', async () => {
    const first = (await t.compose(body(7))).json().data;
    assert.equal(first.asset_version, 1);
    await t.db.query('update exercises set asset_version = 2 where slug = $1', [slug]);
    const miss = await t.compose(body(7));
    assert.equal(miss.statusCode, 201, miss.body);
    assert.equal(miss.json().data.asset_version, 2);
    assert.equal(miss.json().data.recipe_hash, first.recipe_hash);
    assert.notEqual(miss.json().data.id, first.id);
    const hit = await t.compose(body(7));
    assert.equal(hit.statusCode, 200);
    assert.equal(hit.json().data.id, miss.json().data.id);
    await t.db.query('update exercises set asset_version = 1 where slug = $1', [slug]);
    assert.equal((await t.compose(body(7))).json().data.id, first.id);
  });

  it("primitives that differ in codec parameters: the video is re-encoded at the first video's size, the odd voice-over converted alone", async () => {
    // The rep block is twice the size of the others; the intro voice-over has half the sample rate.
    const mixed = 'cmp-mixed';
    const dir = join(t.assetsDir, mixed);
    await makeVideo(dir, { file: 'intro-video-1.mp4', color: [255, 0, 0], seconds: 2 });
    await makeVideo(dir, { file: 'rep-left-video-1.mp4', color: [0, 0, 255], seconds: 2 }, '320x240');
    await makeVideo(dir, { file: 'outro-video-1.mp4', color: [0, 255, 0], seconds: 1 });
    await makeTone(dir, { file: 'audio/en/intro-vo-1.mp3', hz: 400, seconds: 1.5 }, 22050);
    await makeTone(dir, { file: 'audio/en/rep-left-vo-1.mp3', hz: 1000, seconds: 8 });
    await makeTone(dir, { file: 'audio/en/outro-vo-1.mp3', hz: 1600, seconds: 0.5 });
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ ...FIXTURE.manifest(mixed), languages: ['en'] }));
    await t.addExercise(mixed);

    const res = await t.compose({ exercise: mixed, language: 'en', sets: [{ side: 'left', reps: 5 }], seed: 1 });
    assert.equal(res.statusCode, 201, res.body);
    const file = sourceOf(res.json().data.stream_video_id);
    const p = await probe(tools, file);
    assert.ok(Math.abs(p.duration - 5) < 0.15, `duration ${p.duration}`);
    assert.equal(p.video?.codec, 'h264');
    assert.deepEqual([p.video?.width, p.video?.height], [160, 120]);
    // The audio track stays a stream copy of mp3 at the voice-overs' common rate.
    assert.equal(p.audio?.codec, 'mp3');
    assert.equal(p.audio?.sample_rate, 44100);
    for (const [at, rgb, hz] of [
      [1, [255, 0, 0], 400],
      [3, [0, 0, 255], 1000],
      [4.5, [0, 255, 0], 1600],
    ] as const) {
      const got = await colorAt(file, at);
      assert.ok(near(got, [...rgb]), `colour at ${at}s: got ${got}, want ${rgb}`);
      const tone = await toneAt(file, at - 0.4);
      assert.ok(Math.abs(tone - hz) <= 25, `tone at ${at - 0.4}s: got ${tone} Hz, want ${hz}`);
    }
    // The intro voice-over (1.5 s of 2 s) is still followed by silence.
    assert.equal(await toneAt(file, 1.65), 0);
    // The conversion is kept beside the local copy for the next render of this asset version.
    assert.ok((await readdir(join(t.config.cacheDir, 'primitives', 'v1', mixed, 'audio', 'en'))).includes('intro-vo-1.mp3.as-44100-1.mp3'));
  });

  it('after a render the other variants are prepared; an instance trusting its memory survives an emptied cache folder', async () => {
    await t.svc.composer.idle();
    // Every primitive of the fixture (all languages) has a local copy and its probe.
    const local = join(t.config.cacheDir, 'primitives', 'v1', slug);
    for (const f of [...FIXTURE.videos.map((v) => v.file), ...FIXTURE.tones.map((x) => x.file)]) {
      assert.ok(await readdir(join(local, f, '..')).then((names) => names.includes(`${f.split('/').pop()}.probe.json`)), `${f} prepared`);
    }

    // An instance that trusts local copies for a minute, its cache folder emptied between renders.
    const cacheDir = join(t.scratch, 'cache-ttl');
    const config = parseComposerConfig({
      NODE_ENV: 'test',
      DATA_DIR: join(t.scratch, 'data-ttl'),
      COMPOSER_CACHE_DIR: cacheDir,
      COMPOSER_ASSETS_DIR: t.assetsDir,
      COMPOSER_INVENTORY_TTL_SECONDS: '60',
    });
    const svc = await buildComposerService(config, { db: t.db, logger: pino({ level: 'silent' }) });
    try {
      const compose = (seed: number) =>
        svc.app.inject({ method: 'POST', url: '/v1/compose', payload: body(seed, [{ side: 'right', reps: 10 }]) });
      const seeds = [...Array(40).keys()].map((n) => 1000 + n);
      const first = await compose(seeds[0]!);
      assert.equal(first.statusCode, 201, first.body);
      await svc.composer.idle();
      await rm(cacheDir, { recursive: true, force: true });
      const hashes = new Set([first.json().data.recipe_hash]);
      for (const seed of seeds.slice(1)) {
        const res = await compose(seed);
        if (res.statusCode === 200) continue; // the same variants as an earlier seed
        assert.equal(res.statusCode, 201, res.body);
        assert.ok(!hashes.has(res.json().data.recipe_hash));
        const p = await probe(tools, join((config.delivery as { root: string }).root, res.json().data.stream_video_id, 'source.mp4'));
        assert.ok(Math.abs(p.duration - 7) < 0.15, `duration ${p.duration}`);
        break;
      }
    } finally {
      await svc.close();
    }
  });

  it('temporary files are removed after renders, failed ones included', async () => {
    await t.svc.composer.idle();
    assert.deepEqual(await readdir(t.config.workDir), []);
  });
});
