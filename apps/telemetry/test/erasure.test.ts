import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { handleSessionEnded, sweepOrphanReplays } from '../../core-api/src/modules/exercise-sessions/jobs.ts';
import { uniqueEmail } from '../../core-api/test/helpers.ts';
import { generateSession, toBatches } from '../src/synthetic/generator.ts';
import { startWorld, type World } from './support.ts';

/**
 * Erasure reaches telemetry (migration 0059): the person's exercise sessions with their scores and
 * raw batches, the replay blobs, and their media playbacks go; nobody else's do. Replay blobs that no
 * session names any more are swept. And the audit trail keeps ids, never emails or file names.
 */
describe('GDPR erasure and telemetry', () => {
  let w: World;
  before(async () => {
    w = await startWorld();
  });
  after(() => w.close());

  const count = async (table: string, userId: string) =>
    (await w.t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where patient_user_id = $1`, [userId])).rows[0]!.n;
  const grant = (token: string, purpose: 'biometric' | 'analytics') =>
    w.t.call('POST', '/v1/me/consents', {
      token,
      body: { grants: [{ organization_id: w.orgId, purpose_code: purpose, purpose_version: w.versions[purpose], source: 'self_toggle' }] },
    });

  /** A patient with one ended exercise session (scored, replay written) and one media playback. */
  const patientWithTelemetry = async (label: string) => {
    const p = await w.t.addPatient(w.orgId, uniqueEmail(label));
    for (const purpose of ['biometric', 'analytics'] as const) assert.equal((await grant(p.token, purpose)).statusCode, 201);
    const s = await w.start(p.token);
    for (const b of toBatches(generateSession({ kind: 'squat', scenario: 'clean', reps: 2, seed: 4 }))) {
      assert.equal((await w.pose(w.a, s.token, b)).statusCode, 201);
    }
    const end = await w.a.inject({ method: 'POST', url: `/v1/sessions/${s.id}/end`, headers: { authorization: `Bearer ${s.token}` } });
    assert.equal(end.statusCode, 200, end.body);
    // The core's consumer of exercise_session.ended writes the scores and the exercise log.
    const { rows: events } = await w.t.db.query<any>(
      `select * from domain_events where type = 'exercise_session.ended' and data ->> 'session_id' = $1`,
      [s.id],
    );
    await handleSessionEnded({ db: w.t.db }, { ...events[0], occurred_at: String(events[0].occurred_at) });
    const media = await w.a.inject({
      method: 'POST',
      url: '/v1/media/events',
      headers: { authorization: `Bearer ${p.token}`, 'x-organization-id': w.orgId, 'content-type': 'application/json' },
      payload: JSON.stringify({
        media_session_id: '01900000-0000-7000-8000-00000000beef',
        events: [{ seq: 1, at: new Date().toISOString(), kind: 'milestone', percent: 25 }],
      }),
    });
    assert.equal(media.statusCode, 200, media.body);
    const { rows } = await w.t.db.query<{ replay_key: string }>('select replay_key from exercise_sessions where id = $1', [s.id]);
    return { ...p, sessionId: s.id, replayKey: rows[0]!.replay_key };
  };

  it("erasing a person removes their sessions, scores, batches, replays and playbacks, and nobody else's", async () => {
    const erased = await patientWithTelemetry('erased');
    const kept = await patientWithTelemetry('kept');
    assert.ok(await w.assets.get(erased.replayKey), 'the replay was written');
    assert.equal(await count('exercise_sessions', erased.userId), 1);
    assert.equal(await count('pose_session_metrics', erased.userId), 1);
    assert.equal(await count('media_session_metrics', erased.userId), 1);
    assert.equal(await count('patient_exercise_log', erased.userId), 1);

    const res = await w.t.call('POST', '/v1/gdpr/erase', { token: erased.token, body: {} });
    assert.equal(res.statusCode, 200, res.body);

    for (const table of [
      'exercise_sessions',
      'pose_session_metrics',
      'pose_rep_metrics',
      'media_session_metrics',
      'media_events',
      'patient_exercise_log',
    ]) {
      assert.equal(await count(table, erased.userId), 0, `${table} keeps nothing of the erased person`);
    }
    assert.equal(await w.assets.get(erased.replayKey), null, 'the replay blob is deleted after commit');
    const audit = await w.t.db.query<{ data: any }>(`select data from audit_logs where action = 'gdpr.erased' and entity_id = $1`, [
      erased.userId,
    ]);
    assert.deepEqual([audit.rows[0]!.data.exercise_sessions_removed, audit.rows[0]!.data.media_sessions_removed], [1, 1]);

    // The other patient's telemetry is untouched.
    assert.equal(await count('exercise_sessions', kept.userId), 1);
    assert.equal(await count('media_session_metrics', kept.userId), 1);
    assert.ok(await w.assets.get(kept.replayKey));
  });

  it('replay blobs no session names are swept once past the grace period; named and young ones stay', async () => {
    const day = 24 * 3600 * 1000;
    const keyAt = (ms: number) => {
      const t = ms.toString(16).padStart(12, '0');
      const r = randomBytes(8).toString('hex');
      return `telemetry/replays/${w.orgId}/${t.slice(0, 8)}-${t.slice(8)}-7${r.slice(0, 3)}-8${r.slice(3, 6)}-${r.slice(4, 16)}.pose.gz`;
    };
    const oldOrphan = keyAt(Date.now() - 3 * day);
    const youngOrphan = keyAt(Date.now() - 60_000);
    const oldNamed = keyAt(Date.now() - 3 * day);
    for (const key of [oldOrphan, youngOrphan, oldNamed]) await w.assets.put(key, Buffer.from('gz'), { contentType: 'application/gzip' });
    const owner = await patientWithTelemetry('named');
    await w.t.db.query('update exercise_sessions set replay_key = $2 where id = $1', [owner.sessionId, oldNamed]);

    const deps = { db: w.t.db, assets: w.assets, logger: w.t.rt.logger };
    assert.deepEqual(await sweepOrphanReplays(deps), [oldOrphan]);
    assert.equal(await w.assets.get(oldOrphan), null);
    assert.ok(await w.assets.get(youngOrphan));
    assert.ok(await w.assets.get(oldNamed));
    assert.deepEqual(await sweepOrphanReplays(deps), [], 'idempotent');
  });

  it('member changes are audited by id: no email in the audit trail', async () => {
    const admin = await w.t.addMember(w.orgId, uniqueEmail('admin'), 'admin');
    const email = uniqueEmail('audited-member');
    const call = (method: string, url: string, body?: unknown) => w.t.call(method, url, { token: admin.token, org: w.orgId, body });
    const added = await call('POST', `/v1/organizations/${w.orgId}/members`, { email, role_code: 'specialist' });
    assert.equal(added.statusCode, 201, added.body);
    const userId = added.json().data.user_id;
    assert.equal((await call('POST', `/v1/organizations/${w.orgId}/members`, { email, role_code: 'customer_support' })).statusCode, 200);
    assert.equal((await call('DELETE', `/v1/organizations/${w.orgId}/members/${userId}`)).statusCode, 204);
    const { rows } = await w.t.db.query<{ action: string; data: string }>(
      'select action, data::text as data from audit_logs where entity_id = $1 order by chain_seq',
      [userId],
    );
    assert.deepEqual(
      rows.map((r) => r.action),
      ['member.added', 'member.role_changed', 'member.removed'],
    );
    for (const r of rows) assert.ok(!r.data.includes(email), `${r.action} carries the email: ${r.data}`);
  });
});
