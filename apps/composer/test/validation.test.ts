import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { signRequest } from '../src/auth.ts';
import { ComposerConfigError, parseComposerConfig } from '../src/config.ts';
import { startComposerTest, type ComposerTest } from './helpers.ts';
import { writeFixtureExercise } from './media.ts';
import { skipWithoutFfmpeg } from '../src/ffmpeg.ts';

const SECRET = 'a'.repeat(40);
const NEXT_SECRET = 'b'.repeat(40);

function assertError(res: { statusCode: number; body: string; json: () => any }, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  const err = res.json().error;
  assert.equal(err.code, code, res.body);
  assert.ok(err.message.length > 0);
  return err;
}

describe('compose validation and service authentication', { skip: skipWithoutFfmpeg() }, () => {
  let t: ComposerTest;
  before(async () => {
    t = await startComposerTest({ env: { COMPOSER_AUTH_SECRETS: `${SECRET},${NEXT_SECRET}` } });
    // Only what validation needs: no rep-right video at all, English voice-overs of every slot.
    await writeFixtureExercise(t.assetsDir, 'cmp-lunge', {
      videos: ['intro-video-1.mp4', 'pauza-video-1.mp4', 'outro-video-1.mp4', 'rep-left-video-1.mp4'],
      tones: [
        'audio/en/intro-vo-1.mp3',
        'audio/en/pauza-vo-1.mp3',
        'audio/en/outro-vo-1.mp3',
        'audio/en/rep-left-vo-1.mp3',
        'audio/en/rep-right-vo-1.mp3',
        'audio/ro/intro-vo-1.mp3',
      ],
    });
    await t.addExercise('cmp-lunge');
    await t.addExercise('cmp-no-assets');
    await t.addExercise('cmp-plank', { kind: 'duration_based' });
    await mkdir(join(t.assetsDir, 'cmp-bad-manifest'), { recursive: true });
    await writeFile(join(t.assetsDir, 'cmp-bad-manifest', 'manifest.json'), '{"exercise":"cmp-bad-manifest","sides":["left"]}');
    await t.addExercise('cmp-bad-manifest');
  });
  after(() => t.close());

  const signed = (body: unknown, secret = SECRET, now = Date.now()) => {
    const raw = JSON.stringify(body);
    return { raw, headers: { authorization: signRequest(secret, 'POST', '/v1/compose', raw, now) } };
  };
  const call = (body: unknown) => {
    const s = signed(body);
    return t.compose(s.raw, s.headers);
  };
  const ok = { exercise: 'cmp-lunge', language: 'en', sets: [{ side: 'left', reps: 5 }], seed: 1 };
  const renders = async () => (await t.db.query<{ n: number }>('select count(*)::int as n from exercise_renders')).rows[0]!.n;

  it('refuses unsigned, badly signed, expired and replayed-elsewhere calls with 401', async () => {
    assertError(await t.compose(ok), 401, 'unauthorized');
    assertError(await t.compose(ok, { authorization: `Bearer ${SECRET}` }), 401, 'unauthorized');
    assertError(await t.compose(JSON.stringify(ok), signed(ok, 'c'.repeat(40)).headers), 401, 'unauthorized');
    assertError(await t.compose(JSON.stringify(ok), signed(ok, SECRET, Date.now() - 10 * 60_000).headers), 401, 'unauthorized');
    // A signature is bound to the body: the same header with another body fails.
    assertError(await t.compose({ ...ok, seed: 2 }, signed(ok).headers), 401, 'unauthorized');
    // Authentication comes before validation: an unsigned bad body learns only 401.
    assertError(await t.compose({ nonsense: true }), 401, 'unauthorized');
    // ... also when the body is not JSON at all, or not declared as JSON: the signature is checked first.
    const raw = (payload: string, headers: Record<string, string>) =>
      t.svc.app.inject({ method: 'POST', url: '/v1/compose', payload, headers }).then((res) => ({
        statusCode: res.statusCode,
        body: res.body,
        json: () => res.json(),
      }));
    assertError(await raw('{not json', { 'content-type': 'application/json' }), 401, 'unauthorized');
    assertError(await raw('exercise=cmp-lunge', { 'content-type': 'text/plain' }), 401, 'unauthorized');
    assertError(await raw('exercise=cmp-lunge', { 'content-type': 'application/x-www-form-urlencoded' }), 401, 'unauthorized');
    assertError(await raw('{}', {}), 401, 'unauthorized');
    // A signed caller still learns what is wrong with the body.
    const sign = (payload: string) => signRequest(SECRET, 'POST', '/v1/compose', payload, Date.now());
    assertError(await raw('{not json', { 'content-type': 'application/json', authorization: sign('{not json') }), 400, 'invalid_body');
    assertError(
      await raw('exercise=cmp-lunge', { 'content-type': 'text/plain', authorization: sign('exercise=cmp-lunge') }),
      415,
      'unsupported_media_type',
    );
    assert.equal(await renders(), 0);
  });

  it('accepts both secrets during a rotation', async () => {
    const body = { ...ok, exercise: 'cmp-missing-one' };
    for (const secret of [SECRET, NEXT_SECRET]) {
      const s = signed(body, secret);
      assertError(await t.compose(s.raw, s.headers), 400, 'validation_error');
    }
  });

  it('every validation rule answers 400 in the envelope and changes nothing', async () => {
    const cases: Array<[unknown, string]> = [
      [{ ...ok, exercise: 'cmp-no-such-exercise' }, 'exercise'],
      [{ ...ok, exercise: 'cmp-no-assets' }, 'exercise'], // missing manifest
      [{ ...ok, exercise: 'cmp-bad-manifest' }, 'exercise'],
      [{ ...ok, exercise: 'cmp-plank' }, 'exercise'], // duration-based: imported, not composed
      [{ ...ok, language: 'de' }, 'language'], // not listed in the manifest
      [{ ...ok, language: 'ro' }, 'language'], // listed, but no rep-left voice-over in ro
      [{ ...ok, sets: [{ side: 'right', reps: 5 }] }, 'exercise'], // rep-right has zero video variants
      [{ ...ok, sets: [{ side: 'left', reps: 7 }] }, 'sets.0.reps'],
      [{ ...ok, sets: [{ side: 'left', reps: 25 }] }, 'sets.0.reps'],
      [{ ...ok, sets: [{ side: 'left', reps: 0 }] }, 'sets.0.reps'],
      [{ ...ok, sets: [{ side: 'up', reps: 5 }] }, 'sets.0.side'],
      [{ ...ok, sets: [{ side: 'left', reps: 5, tempo: 2 }] }, 'sets.0.tempo'],
      [{ ...ok, sets: [] }, 'sets'],
      [{ ...ok, sets: Array(11).fill({ side: 'left', reps: 5 }) }, 'sets'], // COMPOSER_MAX_SETS
      [{ ...ok, seed: 1.5 }, 'seed'],
      [{ ...ok, seed: undefined }, 'seed'],
      [{ ...ok, extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const err = assertError(await call(body), 400, 'validation_error');
      assert.ok(err.fields && field in err.fields, `${JSON.stringify(body)}: fields ${JSON.stringify(err.fields)} lack ${field}`);
    }
    const raw = '{"exercise":';
    assertError(await t.compose(raw, { authorization: signRequest(SECRET, 'POST', '/v1/compose', raw) }), 400, 'invalid_body');
    assert.equal(await renders(), 0);
  });

  it('a signed valid request renders', async () => {
    const res = await call(ok);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(await renders(), 1);
  });

  it('production refuses to start without a secret, and refuses plain-http delivery endpoints', () => {
    assert.throws(() => parseComposerConfig({ NODE_ENV: 'production' }), ComposerConfigError);
    assert.throws(() => parseComposerConfig({ NODE_ENV: 'production', COMPOSER_AUTH_SECRETS: 'short' }), ComposerConfigError);
    const prod = {
      NODE_ENV: 'production',
      COMPOSER_AUTH_SECRETS: SECRET,
      COMPOSER_DELIVERY: 'stream',
      STREAM_ACCOUNT_ID: 'acc',
      STREAM_API_TOKEN: 'tok',
    };
    assert.equal(parseComposerConfig(prod).delivery.kind, 'stream');
    assert.throws(() => parseComposerConfig({ ...prod, STREAM_API_URL: 'http://127.0.0.1:9/client/v4' }), ComposerConfigError);
    assert.throws(() => parseComposerConfig({ ...prod, STREAM_ACCOUNT_ID: '' }), ComposerConfigError);
    // Development: anonymous calls allowed by default, loopback http allowed for a test server.
    assert.equal(parseComposerConfig({}).authSecrets, null);
    assert.equal(
      parseComposerConfig({ ...prod, NODE_ENV: 'development', STREAM_API_URL: 'http://127.0.0.1:9/client/v4' }).delivery.kind,
      'stream',
    );
  });
});
