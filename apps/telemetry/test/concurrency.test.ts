import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { readAll } from '@clinic/assets';
import { assertError, MODE } from '../../core-api/test/helpers.ts';
import { buildTelemetryApp } from '../src/app.ts';
import { ingestPose } from '../src/db.ts';
import { decodeReplay, encodeBatchGzip } from '../src/pose/format.ts';
import { createSessionTokenVerifier } from '../src/tokens.ts';
import { sessionSigner } from '../../core-api/src/modules/exercise-sessions/token.ts';
import { generateSession, toBatches } from '../src/synthetic/generator.ts';
import { startWorld, type World } from './support.ts';

/*
 * Ending a session while batches are in flight (docs/telemetry.md "Ending"): a batch answered 2xx is
 * never lost. A batch holds its session's advisory lock SHARED while it checks and stores (migration
 * 0054); ending takes it EXCLUSIVE, so it waits for batches in flight, and batches after it see the
 * session `ending` (409).
 */
describe('telemetry: end against ingest', () => {
  let w: World;
  before(async () => {
    w = await startWorld();
    await w.grant('biometric');
  });
  after(() => w.close());

  const batchesOf = (reps: number, seed: number) => toBatches(generateSession({ kind: 'squat', scenario: 'clean', reps, seed }));
  const end = (app: World['a'], s: { id: string; token: string }) =>
    app.inject({ method: 'POST', url: `/v1/sessions/${s.id}/end`, headers: { authorization: `Bearer ${s.token}` } });
  const replaySeqs = async (sessionId: string) => {
    const blob = await w.assets.get(`telemetry/replays/${w.orgId}/${sessionId}.pose.gz`);
    return blob ? decodeReplay(await readAll(blob)).map((b) => b.seq) : [];
  };
  const leftover = async (sessionId: string) =>
    (await w.t.db.query<{ n: number }>('select count(*)::int as n from pose_batches where session_id = $1', [sessionId])).rows[0]!.n;

  it('a batch with bytes after its gzip data is refused, so the replay keeps every accepted batch', async () => {
    const s = await w.start();
    const batches = batchesOf(5, 11).slice(0, 5);
    assert.equal(batches.length, 5);
    const accepted: number[] = [];
    for (const [i, b] of batches.entries()) {
      const gz = encodeBatchGzip(b);
      // The third arrives with zero padding (and, retried, with garbage): before the fix it was
      // stored, and in the concatenated replay it ended the stream, losing the batches after it.
      if (i === 2) {
        for (const [tail, reason] of [
          [Buffer.alloc(16), /16 bytes follow the gzip data/],
          [Buffer.from('trailing'), /corrupt/],
        ] as const) {
          const err = assertError(<any>await w.pose(w.a, s.token, Buffer.concat([gz, tail])), 400, 'validation_error');
          assert.match(err.fields.body, reason);
        }
        continue;
      }
      assert.equal((await w.pose(w.a, s.token, gz)).statusCode, 201);
      accepted.push(b.seq);
    }
    assert.equal((await end(w.a, s)).statusCode, 200);
    assert.deepEqual(await replaySeqs(s.id), accepted, 'the replay holds exactly the acknowledged batches');
  });

  it('a session ended while batches race in on two instances keeps exactly the acknowledged ones', async () => {
    for (let round = 0; round < 3; round++) {
      const s = await w.start();
      const batches = batchesOf(8, 20 + round);
      const first = batches.slice(0, 3);
      for (const b of first) assert.equal((await w.pose(w.a, s.token, b)).statusCode, 201);
      // The rest at once, alternating instances, with the end in the middle of them.
      const rest = batches.slice(3);
      const sends = rest.map((b, k) =>
        w
          .pose(k % 2 ? w.b : w.a, s.token, b)
          .then((r) => ({ seq: b.seq, frames: b.timestamps.length, status: r.statusCode, body: r.body })),
      );
      const ending = end(round % 2 ? w.a : w.b, s);
      const answers = await Promise.all(sends);
      const ended = await ending;
      assert.equal(ended.statusCode, 200, ended.body);
      for (const a of answers) assert.ok(a.status === 201 || a.status === 409, `seq ${a.seq}: ${a.status} ${a.body}`);
      const acked = [...first.map((b) => b.seq), ...answers.filter((a) => a.status === 201).map((a) => a.seq)].sort((x, y) => x - y);
      assert.deepEqual(await replaySeqs(s.id), acked, 'the replay holds exactly the acknowledged batches');
      const frames =
        first.reduce((n, b) => n + b.timestamps.length, 0) + answers.filter((a) => a.status === 201).reduce((n, a) => n + a.frames, 0);
      assert.equal(ended.json().data.result.frames, frames, 'every acknowledged frame was scored');
      assert.equal(await leftover(s.id), 0, 'no batch landed after the end read them');
    }
  });

  it('ending waits for a batch whose transaction is still open, and scores it', {
    skip: MODE !== 'services' && 'PGlite runs one transaction at a time',
  }, async () => {
    const s = await w.start();
    const [b0, b1, b2] = batchesOf(2, 31);
    assert.equal((await w.pose(w.a, s.token, b0!)).statusCode, 201);
    // A batch in flight: the ingest statement has run (stored, lock taken), its transaction not yet committed.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let ran!: () => void;
    const didRun = new Promise<void>((r) => (ran = r));
    const inflight = w.t.db.transaction(async (tx) => {
      const status = await ingestPose(
        { ...w.t.db, query: (text, params, o) => tx.query(text, params, o) },
        {
          sessionId: s.id,
          userId: w.patient.userId,
          orgId: w.orgId,
          seq: b1!.seq,
          frames: b1!.timestamps.length,
          tFirst: b1!.timestamps[0]!,
          tLast: b1!.timestamps.at(-1)!,
          payload: encodeBatchGzip(b1!),
        },
      );
      assert.equal(status, 'stored');
      ran();
      await held;
    });
    await didRun;
    let done = false;
    const ending = end(w.b, s).then((r) => {
      done = true;
      return r;
    });
    // Ending must be seen waiting on the lock; polled in the database, never judged by a clock.
    for (;;) {
      const { rows } = await w.t.db.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%telemetry_begin_end%'`,
      );
      if (rows[0]!.n > 0) break;
      assert.equal(done, false, 'ending did not wait for the batch in flight');
      await sleep(10);
    }
    release();
    await inflight;
    const ended = await ending;
    assert.equal(ended.statusCode, 200, ended.body);
    assert.deepEqual(await replaySeqs(s.id), [b0!.seq, b1!.seq]);
    assert.equal(ended.json().data.result.frames, b0!.timestamps.length + b1!.timestamps.length);
    assertError(<any>await w.pose(w.a, s.token, b2!), 409, 'session_closed');
  });

  it('deleting a session deletes its raw batches (the cascade of the dropped foreign key)', async () => {
    const s = await w.start();
    const [b0] = batchesOf(1, 51);
    assert.equal((await w.pose(w.a, s.token, b0!)).statusCode, 201);
    assert.equal(await leftover(s.id), 1);
    await w.t.db.query('delete from exercise_sessions where id = $1', [s.id]);
    assert.equal(await leftover(s.id), 0);
  });

  it('limits pose batches per session (429 rate_limited with X-RateLimit-*)', async () => {
    const signer = await sessionSigner(w.t.rt.config);
    const app = await buildTelemetryApp({
      db: w.t.db,
      assets: w.assets,
      logger: w.t.rt.logger,
      userTokens: w.t.rt.verifier,
      sessionTokens: createSessionTokenVerifier(signer.keys),
      poseRateLimit: { limit: 3, windowSeconds: 60 },
    });
    try {
      const s = await w.start();
      const batches = batchesOf(3, 41);
      for (const b of batches.slice(0, 3)) {
        const res = await w.pose(app, s.token, b);
        assert.equal(res.statusCode, 201, res.body);
        assert.equal(res.headers['x-ratelimit-limit'], '3');
      }
      const refused = await w.pose(app, s.token, batches[3]!);
      assertError(<any>refused, 429, 'rate_limited');
      assert.equal(refused.headers['x-ratelimit-remaining'], '0');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.equal(await leftover(s.id), 3, 'the refused batch is not stored');
      // Another session of the same patient has its own budget.
      const other = await w.start();
      assert.equal((await w.pose(app, other.token, batches[0]!)).statusCode, 201);
    } finally {
      await app.close();
    }
  });
});
