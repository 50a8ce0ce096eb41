import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { migrate, openPglite } from '@clinic/db';
import { MIGRATIONS_DIR } from '@clinic/db';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createStreamProvider } from '../src/delivery/stream.ts';
import { DeliveryError } from '../src/delivery/types.ts';
import { importVideo, ImportError } from '../src/import.ts';
import { settleProcessingRenders } from '../src/jobs.ts';
import { startFakeStream } from './fakes/stream-server.ts';
import { startComposerTest, type ComposerTest } from './helpers.ts';
import { makeVideo, writeFixtureExercise } from './media.ts';
import { skipWithoutFfmpeg } from '../src/ffmpeg.ts';

const ACCOUNT = 'acc0123';
const TOKEN = 'stream-token-for-tests';
const tools = { ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' };
const logger = pino({ level: 'silent' });

describe('Cloudflare Stream-compatible delivery against a local server', { skip: skipWithoutFfmpeg() }, () => {
  let fake: Awaited<ReturnType<typeof startFakeStream>>;
  let t: ComposerTest;
  before(async () => {
    fake = await startFakeStream({ accountId: ACCOUNT, token: TOKEN, readyAfterPolls: 2 });
    t = await startComposerTest({
      env: {
        COMPOSER_DELIVERY: 'stream',
        STREAM_API_URL: fake.apiUrl,
        STREAM_ACCOUNT_ID: ACCOUNT,
        STREAM_API_TOKEN: TOKEN,
        STREAM_POLL_INTERVAL_MS: '20',
      },
    });
    await writeFixtureExercise(t.assetsDir, 'cmp-stream');
    await t.addExercise('cmp-stream');
    await makeVideo(t.scratch, { file: 'prebaked.mp4', color: [10, 200, 10], seconds: 3 });
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('uploads, then polls until the video is ready', async () => {
    const p = createStreamProvider({ apiUrl: fake.apiUrl, accountId: ACCOUNT, apiToken: TOKEN });
    const file = join(t.scratch, 'prebaked.mp4');
    const up = await p.upload(file, { name: 'x' });
    assert.equal(up.state, 'processing');
    assert.match(up.streamVideoId, /^[0-9a-f]{32}$/);
    assert.equal(up.playbackHlsUrl, `${fake.apiUrl.replace('/client/v4', '')}/${up.streamVideoId}/manifest/video.m3u8`);
    assert.equal(fake.videos.get(up.streamVideoId)!.bytes.length > 1000, true);
    assert.equal((await p.status(up.streamVideoId)).state, 'processing');
    assert.equal((await p.status(up.streamVideoId)).state, 'ready');
  });

  it('a refused token or an unknown video is a DeliveryError (the token is not in the message)', async () => {
    const bad = createStreamProvider({ apiUrl: fake.apiUrl, accountId: ACCOUNT, apiToken: 'wrong-token' });
    await assert.rejects(
      bad.upload(join(t.scratch, 'prebaked.mp4'), { name: 'x' }),
      (e: Error) => e instanceof DeliveryError && !e.message.includes('wrong-token'),
    );
    const good = createStreamProvider({ apiUrl: fake.apiUrl, accountId: ACCOUNT, apiToken: TOKEN });
    await assert.rejects(good.status('f'.repeat(32)), DeliveryError);
    const down = createStreamProvider({ apiUrl: 'http://127.0.0.1:9/client/v4', accountId: ACCOUNT, apiToken: TOKEN });
    await assert.rejects(down.status('f'.repeat(32)), DeliveryError);
  });

  it('compose uploads through the client; the render turns ready when the provider says so', async () => {
    const before = fake.uploads;
    const res = await t.compose({ exercise: 'cmp-stream', language: 'en', sets: [{ side: 'left', reps: 5 }], seed: 3 });
    assert.equal(res.statusCode, 201, res.body);
    const data = res.json().data;
    assert.equal(data.status, 'processing');
    assert.ok(fake.videos.has(data.stream_video_id));
    assert.equal(data.playback_hls_url, `${fake.apiUrl.replace('/client/v4', '')}/${data.stream_video_id}/manifest/video.m3u8`);
    await t.svc.composer.idle();
    const again = await t.compose({ exercise: 'cmp-stream', language: 'en', sets: [{ side: 'left', reps: 5 }], seed: 3 });
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().data.status, 'ready');
    assert.equal(fake.uploads, before + 1);
  });

  it('the sweep settles rows left processing (a renderer that stopped following up)', async () => {
    const p = createStreamProvider({ apiUrl: fake.apiUrl, accountId: ACCOUNT, apiToken: TOKEN });
    const id = (
      await t.db.query<{ id: string }>(`insert into exercises (slug, name, kind) values ('cmp-sweep', 'x', 'duration_based') returning id`)
    ).rows[0]!.id;
    const up = await p.upload(join(t.scratch, 'prebaked.mp4'), { name: 'x' });
    await t.db.query(
      `insert into exercise_renders (exercise_id, recipe_hash, language, asset_version, status, stream_video_id, playback_hls_url)
      values ($1, '_imported', 'en', 1, 'processing', $2, $3)`,
      [id, up.streamVideoId, up.playbackHlsUrl],
    );
    assert.equal(await settleProcessingRenders({ db: t.db, delivery: p, logger }, { minAgeSeconds: 0 }), 0); // first poll: still in progress
    assert.equal(await settleProcessingRenders({ db: t.db, delivery: p, logger }, { minAgeSeconds: 0 }), 1);
    const row = (await t.db.query<{ status: string }>(`select status from exercise_renders where exercise_id = $1`, [id])).rows[0]!;
    assert.equal(row.status, 'ready');
  });

  it('imports a pre-baked video for a duration-based exercise: recipe hash _imported, no recipe', async () => {
    await t.addExercise('cmp-hold', { kind: 'duration_based' });
    const d = { db: t.db, delivery: createStreamProvider({ apiUrl: fake.apiUrl, accountId: ACCOUNT, apiToken: TOKEN }), tools, logger };
    const row = await importVideo(d, { slug: 'cmp-hold', language: 'en', file: join(t.scratch, 'prebaked.mp4') });
    const stored = (
      await t.db.query<{ recipe_hash: string; recipe: unknown; status: string; duration_seconds: number }>(
        'select recipe_hash, recipe, status, duration_seconds from exercise_renders where id = $1',
        [row.id],
      )
    ).rows[0]!;
    assert.equal(stored.recipe_hash, '_imported');
    assert.equal(stored.recipe, null);
    assert.equal(stored.status, 'processing');
    assert.ok(Math.abs(stored.duration_seconds - 3) < 0.1);
    // Importing again replaces the video of the same row.
    const again = await importVideo(d, { slug: 'cmp-hold', language: 'en', file: join(t.scratch, 'prebaked.mp4') });
    assert.equal(again.id, row.id);
    assert.notEqual(again.stream_video_id, row.stream_video_id);
    await assert.rejects(importVideo(d, { slug: 'cmp-stream', language: 'en', file: join(t.scratch, 'prebaked.mp4') }), ImportError);
    await assert.rejects(
      importVideo(d, { slug: 'cmp-hold', language: 'en', file: join(t.assetsDir, 'cmp-stream', 'manifest.json') }),
      ImportError,
    );
    await assert.rejects(importVideo(d, { slug: 'cmp-nope', language: 'en', file: join(t.scratch, 'prebaked.mp4') }), ImportError);
  });

  it('the import command line works end to end on the embedded default (local HLS)', async () => {
    const dataDir = join(t.scratch, 'cli-data');
    const env = { ...process.env, DATA_DIR: dataDir, NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: '' };
    const runCli = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../src/main.ts'), ...args], { env });
        let out = '';
        let err = '';
        child.stdout.on('data', (c) => (out += c));
        child.stderr.on('data', (c) => (err += c));
        child.on('close', (code) => resolve({ code, out, err }));
      });
    assert.equal((await runCli(['import'])).code, 2);
    const unknown = await runCli(['import', 'cmp-nope', join(t.scratch, 'prebaked.mp4')]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /no exercise with slug/);
    // A duration-based exercise in that data folder, then a real import: uploaded, segmented, ready.
    let db = await openPglite(join(dataDir, 'pgdata'));
    await migrate(db, MIGRATIONS_DIR);
    await db.query(`insert into exercises (slug, name, kind) values ('cmp-cli-hold', 'Hold', 'duration_based')`);
    await db.close();
    const ok = await runCli(['import', 'cmp-cli-hold', join(t.scratch, 'prebaked.mp4'), '--language', 'ro']);
    assert.equal(ok.code, 0, ok.err);
    const printed = JSON.parse(ok.out);
    assert.match(printed.playback_hls_url, /\/v1\/hls\/[0-9a-f-]{36}\/index\.m3u8$/);
    assert.ok((await stat(join(dataDir, 'composer', 'hls', printed.stream_video_id, 'hls', 'index.m3u8'))).size > 0);
    db = await openPglite(join(dataDir, 'pgdata'));
    const row = (
      await db.query<{ status: string; recipe_hash: string; language: string }>(
        'select status, recipe_hash, language from exercise_renders where id = $1',
        [printed.render_id],
      )
    ).rows[0]!;
    await db.close();
    assert.deepEqual(row, { status: 'ready', recipe_hash: '_imported', language: 'ro' });
  });
});
