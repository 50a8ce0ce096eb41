import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { readAll } from '@clinic/assets';
import { assertError, uniqueEmail } from '../../core-api/test/helpers.ts';
import { applyRetention, handleSessionEnded, sweepSilentSessions } from '../../core-api/src/modules/exercise-sessions/jobs.ts';
import { decodeReplay, encodeBatch, encodeBatchGzip } from '../src/pose/format.ts';
import { generateSession, toBatches } from '../src/synthetic/generator.ts';
import { startWorld, type World } from './support.ts';

describe('telemetry service', () => {
  let w: World;
  before(async () => {
    w = await startWorld();
  });
  after(() => w.close());

  it("counts pose batches in Redis under the deployment's REDIS_KEY_PREFIX", {
    skip: process.env.TEST_MODE !== 'services' && 'embedded: the counters are in memory',
  }, async () => {
    const redis = w.t.rt.redis!;
    const prefix = w.t.rt.config.redisKeyPrefix;
    assert.ok(prefix, 'the test app has a prefix of its own');
    await w.grant('biometric');
    const s = await w.start();
    const { batches } = batchesOf(2);
    const first = await w.pose(w.a, s.token, batches[0]!);
    assert.equal(first.statusCode, 201);
    const limit = Number(first.headers['x-ratelimit-limit']);
    assert.equal(Number(first.headers['x-ratelimit-remaining']), limit - 1);
    const keys = async (pattern: string) => {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        found.push(...batch);
      } while (cursor !== '0');
      return found;
    };
    const mine = await keys(`${prefix}telemetry:pose:*${s.id}*`);
    assert.equal(mine.length, 1, 'the session counter carries the prefix');
    assert.deepEqual(await keys(`telemetry:pose:*${s.id}*`), [], 'no counter outside the prefix');
    // Another deployment on the same Redis (its own prefix) counts the same session id apart.
    const otherPrefix = `other-${randomUUID()}:`;
    const other = await w.instance({ redisKeyPrefix: otherPrefix });
    try {
      const second = await w.pose(other, s.token, batches[1]!);
      assert.equal(second.statusCode, 201, second.body);
      assert.equal(Number(second.headers['x-ratelimit-remaining']), limit - 1, "the other deployment's counter starts afresh");
      assert.equal((await keys(`${otherPrefix}telemetry:pose:*${s.id}*`)).length, 1);
      assert.equal((await keys(`${prefix}telemetry:pose:*${s.id}*`)).length, 1);
    } finally {
      const left = await keys(`${otherPrefix}*`);
      if (left.length) await redis.del(...left);
    }
  });

  it('describes itself like every service: GET /openapi.json and /docs, no credentials needed', async () => {
    const res = await w.a.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200, res.body);
    const spec = res.json();
    assert.equal(spec.openapi, '3.1.0');
    const ops = Object.values<any>(spec.paths).flatMap((m) => Object.values<any>(m).map((o) => o.operationId));
    assert.deepEqual(ops.sort(), ['endExerciseSession', 'getHealth', 'ingestMediaEvents', 'ingestPoseFrames']);
    const docs = await w.a.inject({ method: 'GET', url: '/docs/' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.headers['content-type'] as string, /text\/html/);
  });

  const batchesOf = (reps: number, seed = 7) => {
    const g = generateSession({ kind: 'squat', scenario: 'clean', reps, seed });
    return { g, batches: toBatches(g) };
  };
  const stored = async (sessionId: string) =>
    (await w.t.db.query<{ n: number }>('select count(*)::int as n from pose_batches where session_id = $1', [sessionId])).rows[0]!.n;
  const endedEvent = async (sessionId: string) => {
    const { rows } = await w.t.db.query<any>(
      `select * from domain_events where type = 'exercise_session.ended' and data ->> 'session_id' = $1`,
      [sessionId],
    );
    return rows;
  };

  it('starting needs an active biometric consent (403 consent_required, missing_purpose)', async () => {
    const other = await w.t.addPatient(w.orgId, uniqueEmail('noconsent'));
    const res = await w.t.call('POST', '/v1/exercise-sessions', {
      token: other.token,
      org: w.orgId,
      body: { exercise_id: await w.exerciseId('squat') },
    });
    const err = assertError(res, 403, 'consent_required');
    assert.equal(err.missing_purpose, 'biometric');
  });

  it('stores batches on any instance, once per sequence number, then scores at end, idempotently', async () => {
    await w.grant('biometric');
    const s = await w.start();
    const { g, batches } = batchesOf(6);
    for (const b of batches) {
      const res = await w.pose(b.seq % 2 ? w.b : w.a, s.token, b);
      assert.equal(res.statusCode, 201, res.body);
    }
    // A retried batch, to the other instance: acknowledged, not stored twice.
    const retry = await w.pose(w.b, s.token, batches[0]!);
    assert.equal(retry.statusCode, 200, retry.body);
    assert.equal(retry.json().data.duplicate, true);
    assert.equal(await stored(s.id), batches.length);

    const end = await w.a.inject({ method: 'POST', url: `/v1/sessions/${s.id}/end`, headers: { authorization: `Bearer ${s.token}` } });
    assert.equal(end.statusCode, 200, end.body);
    const data = end.json().data;
    assert.equal(data.status, 'completed');
    assert.equal(data.result.rep_count, g.trueReps);
    assert.ok(data.result.form_score >= 0 && data.result.form_score <= 100);
    assert.equal(data.result.algorithm_version, 'pose-score/1');
    assert.equal(await stored(s.id), 0, 'raw batches are dropped once the replay holds them');

    // Ending twice (another instance) answers the same and publishes nothing new.
    const again = await w.b.inject({ method: 'POST', url: `/v1/sessions/${s.id}/end`, headers: { authorization: `Bearer ${s.token}` } });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json().data.result, data.result);
    const events = await endedEvent(s.id);
    assert.equal(events.length, 1);
    // A batch after the end is refused.
    assertError(<any>await w.pose(w.a, s.token, { ...batches[0]!, seq: 999 }), 409, 'session_closed');

    // The core's consumer writes the aggregates; a redelivered event changes nothing.
    const event = { ...events[0], occurred_at: String(events[0].occurred_at) };
    await handleSessionEnded({ db: w.t.db }, event);
    await handleSessionEnded({ db: w.t.db }, event);
    const view = await w.t.call('GET', `/v1/exercise-sessions/${s.id}`, { token: w.patient.token, org: w.orgId });
    assert.equal(view.statusCode, 200, view.body);
    assert.equal(view.json().data.metrics.rep_count, g.trueReps);
    assert.equal(view.json().data.metrics.reps.length, g.trueReps);
    const log = await w.t.db.query<any>('select sessions, total_reps from patient_exercise_log where patient_user_id = $1', [
      w.patient.userId,
    ]);
    assert.deepEqual(log.rows[0], { sessions: 1, total_reps: g.trueReps });

    // Staff: telemetry.view_org (admin, specialist) reads it; customer_support does not; another patient gets 404.
    const admin = await w.t.addMember(w.orgId, uniqueEmail('admin'), 'admin');
    const specialist = await w.t.addMember(w.orgId, uniqueEmail('spec'), 'specialist');
    const support = await w.t.addMember(w.orgId, uniqueEmail('support'), 'customer_support');
    const stranger = await w.t.addPatient(w.orgId, uniqueEmail('stranger'));
    for (const tok of [admin.token, specialist.token])
      assert.equal((await w.t.call('GET', `/v1/exercise-sessions/${s.id}`, { token: tok, org: w.orgId })).statusCode, 200);
    assertError(await w.t.call('GET', `/v1/exercise-sessions/${s.id}`, { token: support.token, org: w.orgId }), 403, 'forbidden');
    assertError(await w.t.call('GET', `/v1/exercise-sessions/${s.id}`, { token: stranger.token, org: w.orgId }), 404, 'not_found');

    // The replay: an expiring signed URL to the blob, which decodes back to every frame.
    const replay = await w.t.call('GET', `/v1/exercise-sessions/${s.id}/replay`, { token: w.patient.token, org: w.orgId });
    assert.equal(replay.statusCode, 200, replay.body);
    const url = new URL(replay.json().data.url);
    const blob = await w.t.app.inject({ method: 'GET', url: url.pathname + url.search });
    assert.equal(blob.statusCode, 200, blob.body + url.pathname);
    const frames = decodeReplay(blob.rawPayload).reduce((n, b) => n + b.timestamps.length, 0);
    assert.equal(frames, g.timestamps.length);
    const forged = await w.t.app.inject({ method: 'GET', url: `${url.pathname}?token=${url.searchParams.get('token')!.slice(0, -3)}abc` });
    assertError(forged as any, 403, 'forbidden');
    assert.ok(await readAll((await w.assets.get(`telemetry/replays/${w.orgId}/${s.id}.pose.gz`))!));
  });

  it('a withdrawal between two batches makes the next one 403, on every instance', async () => {
    const consent = await w.grant('biometric');
    const s = await w.start();
    const { batches } = batchesOf(2, 11);
    assert.equal((await w.pose(w.a, s.token, batches[0]!)).statusCode, 201);
    await w.withdraw(consent);
    for (const app of [w.b, w.a]) {
      const err = assertError(<any>await w.pose(app, s.token, batches[1]!), 403, 'consent_required');
      assert.equal(err.missing_purpose, 'biometric');
    }
    assert.equal(await stored(s.id), 1);
    // Ending is processing too: refused while the consent is withdrawn.
    assertError(
      (await w.a.inject({ method: 'POST', url: `/v1/sessions/${s.id}/end`, headers: { authorization: `Bearer ${s.token}` } })) as any,
      403,
      'consent_required',
    );
    // Ten minutes later the sweep closes it without scoring and drops the frames.
    await sweepSilentSessions({ db: w.t.db, assets: w.assets, logger: w.t.rt.logger }, new Date(Date.now() + 11 * 60_000));
    const { rows } = await w.t.db.query<any>('select status, end_reason, result from exercise_sessions where id = $1', [s.id]);
    assert.deepEqual(rows[0], { status: 'incomplete', end_reason: 'consent_withdrawn', result: null });
    assert.equal(await stored(s.id), 0);
  });

  it('rejects malformed, truncated and non-finite batches with 400 and stores nothing', async () => {
    await w.grant('biometric');
    const s = await w.start();
    const good = batchesOf(1, 3).batches[0]!;
    const raw = encodeBatch(good);
    const nan = Buffer.from(raw);
    nan.writeFloatLE(Number.NaN, 24 + 4 * good.timestamps.length + 8);
    const inf = Buffer.from(raw);
    inf.writeFloatLE(Number.POSITIVE_INFINITY, raw.length - 8);
    const magic = Buffer.from(raw);
    magic.write('XXXX', 0);
    const cases: Array<[string, Buffer]> = [
      ['truncated', gzipSync(raw.subarray(0, raw.length - 100))],
      ['trailing', gzipSync(Buffer.concat([raw, Buffer.alloc(4)]))],
      ['NaN', gzipSync(nan)],
      ['Infinity', gzipSync(inf)],
      ['magic', gzipSync(magic)],
      ['not gzip', raw],
      ['corrupt gzip', encodeBatchGzip(good).subarray(0, 40)],
      ['zip bomb', gzipSync(Buffer.alloc(5_000_000))],
    ];
    for (const [name, body] of cases) {
      const err = assertError(<any>await w.pose(w.a, s.token, body), 400, 'validation_error');
      assert.ok(err.fields?.body, `${name}: fields.body says why`);
    }
    assert.equal(await stored(s.id), 0);
    assertError(
      (await w.a.inject({
        method: 'POST',
        url: '/v1/pose/frames',
        payload: encodeBatchGzip(good),
        headers: { 'content-type': 'application/octet-stream' },
      })) as any,
      401,
      'unauthorized',
    );
    assertError(<any>await w.pose(w.a, w.patient.token, good), 401, 'unauthorized');
    const other = await w.start();
    assertError(
      (await w.a.inject({ method: 'POST', url: `/v1/sessions/${other.id}/end`, headers: { authorization: `Bearer ${s.token}` } })) as any,
      403,
      'forbidden',
    );
  });

  it('media events need analytics consent, are validated strictly and counted once', async () => {
    const media = randomUUID();
    const at = new Date().toISOString();
    const events = [
      { seq: 0, at, kind: 'session_start', load_time_ms: 850, connection: { effective_type: '4g', downlink_mbps: 12.5, rtt_ms: 60 } },
      { seq: 1, at, kind: 'heartbeat', position_s: 10, buffering: false, bitrate_kbps: 2400, quality: '720p', dropped_frames: 2 },
      { seq: 2, at, kind: 'milestone', percent: 25 },
      {
        seq: 3,
        at,
        kind: 'session_end',
        position_s: 60,
        watched_percent: 97,
        completion_status: 'completed',
        total_buffering_ms: 300,
        dropped_frames: 2,
        avg_bitrate_kbps: 2400,
      },
    ];
    const send = (body: unknown, token = w.patient.token) =>
      w.b.inject({
        method: 'POST',
        url: '/v1/media/events',
        headers: { authorization: `Bearer ${token}`, 'x-organization-id': w.orgId, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    const refused = assertError((await send({ media_session_id: media, events })) as any, 403, 'consent_required');
    assert.equal(refused.missing_purpose, 'analytics');
    const consent = await w.grant('analytics');
    const ok = await send({ media_session_id: media, events });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json().data, { media_session_id: media, accepted: 4, duplicates: 0 });
    const retried = await send({ media_session_id: media, events });
    assert.deepEqual(retried.json().data, { media_session_id: media, accepted: 0, duplicates: 4 });
    const { rows } = await w.t.db.query<any>(
      'select heartbeats, load_time_ms, completion_status, milestones, dropped_frames::int as dropped from media_session_metrics where media_session_id = $1',
      [media],
    );
    assert.deepEqual(rows[0], { heartbeats: 1, load_time_ms: 850, completion_status: 'completed', milestones: [25], dropped: 2 });
    assertError(
      (await send({ media_session_id: media, events: [{ seq: 9, at, kind: 'milestone', percent: 30 }] })) as any,
      400,
      'validation_error',
    );
    assertError((await send({ media_session_id: media, events: [{ seq: 9, at, kind: 'teleport' }] })) as any, 400, 'validation_error');
    // A playback is (organization, patient, id): another person using the same id, in this clinic or
    // as a patient of another, starts a playback of their own and learns nothing about this one.
    const milestone = { seq: 10, at, kind: 'milestone', percent: 50 };
    const other = await w.t.addPatient(w.orgId, uniqueEmail('media'));
    await w.grant('analytics', other.token);
    const theirs = await send({ media_session_id: media, events: [milestone] }, other.token);
    assert.equal(theirs.statusCode, 200, theirs.body);
    assert.deepEqual(theirs.json().data, { media_session_id: media, accepted: 1, duplicates: 0 });
    const otherClinic = await w.t.createOrg();
    const elsewhere = await w.t.addPatient(otherClinic.id, uniqueEmail('media-elsewhere'));
    const grantThere = await w.t.call('POST', '/v1/me/consents', {
      token: elsewhere.token,
      body: {
        grants: [
          { organization_id: otherClinic.id, purpose_code: 'analytics', purpose_version: w.versions.analytics, source: 'self_toggle' },
        ],
      },
    });
    assert.equal(grantThere.statusCode, 201, grantThere.body);
    const there = await w.b.inject({
      method: 'POST',
      url: '/v1/media/events',
      headers: { authorization: `Bearer ${elsewhere.token}`, 'x-organization-id': otherClinic.id, 'content-type': 'application/json' },
      payload: JSON.stringify({ media_session_id: media, events: [milestone] }),
    });
    assert.equal(there.statusCode, 200, there.body);
    const playbacks = await w.t.db.query<{ organization_id: string; milestones: number[] }>(
      'select organization_id, milestones from media_session_metrics where media_session_id = $1 order by created_at',
      [media],
    );
    assert.deepEqual(
      playbacks.rows.map((r) => [r.organization_id, r.milestones]),
      [
        [w.orgId, [25]],
        [w.orgId, [50]],
        [otherClinic.id, [50]],
      ],
      "each person's playback counts only their own events",
    );
    await w.withdraw(consent);
    assertError(
      (await send({ media_session_id: media, events: [{ seq: 11, at, kind: 'milestone', percent: 50 }] })) as any,
      403,
      'consent_required',
    );
  });

  it('the silence sweep finalizes a session silent for 10 minutes as incomplete, scored', async () => {
    await w.grant('biometric');
    const s = await w.start();
    const { batches } = batchesOf(3, 5);
    for (const b of batches) assert.equal((await w.pose(w.a, s.token, b)).statusCode, 201);
    const deps = { db: w.t.db, assets: w.assets, logger: w.t.rt.logger };
    assert.equal(await sweepSilentSessions(deps, new Date(Date.now() + 5 * 60_000)), 0, 'not silent long enough');
    assert.ok((await sweepSilentSessions(deps, new Date(Date.now() + 11 * 60_000))) >= 1);
    const { rows } = await w.t.db.query<any>(
      `select status, end_reason, result -> 'rep_count' as reps from exercise_sessions where id = $1`,
      [s.id],
    );
    assert.deepEqual(rows[0], { status: 'incomplete', end_reason: 'silence', reps: 3 });
  });
  it('retention (spec 8): replays go after 6 months, media metrics after 2 years, ended sessions after 7 years', async () => {
    const deps = { db: w.t.db, assets: w.assets, logger: w.t.rt.logger };
    const count = async (sql: string) => (await w.t.db.query<{ n: number }>(sql)).rows[0]!.n;
    const day = 86_400_000;
    const replays = await count('select count(*)::int as n from exercise_sessions where replay_key is not null');
    const media = await count('select count(*)::int as n from media_session_metrics');
    const ended = await count('select count(*)::int as n from exercise_sessions where ended_at is not null');
    assert.ok(replays > 0 && media > 0 && ended > 0, 'the earlier tests left a replay, media metrics and ended sessions');

    const at7Months = await applyRetention(deps, new Date(Date.now() + 215 * day));
    assert.deepEqual(at7Months, { media: 0, sessions: 0, replays });
    assert.equal(await count('select count(*)::int as n from exercise_sessions where replay_key is not null'), 0);
    const at3Years = await applyRetention(deps, new Date(Date.now() + 3 * 366 * day));
    assert.deepEqual(at3Years, { media, sessions: 0, replays: 0 });
    const at8Years = await applyRetention(deps, new Date(Date.now() + 8 * 366 * day));
    assert.deepEqual(at8Years, { media: 0, sessions: ended, replays: 0 });
  });
});
