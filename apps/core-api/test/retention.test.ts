import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { readAll } from '@clinic/assets';
import { ConfigError, parseConfig, RETENTION_DEFAULTS } from '../src/config.ts';
import { applyRetention } from '../src/modules/exercise-sessions/jobs.ts';
import { startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

/**
 * The telemetry retention of spec 8 (`telemetry.retention` on the worker) at its boundaries, on a clock
 * the test moves: a row exactly as old as its period stays, one millisecond older goes. Media session
 * metrics 2 years, replay blobs 6 months (the blob goes, the session stays), pose aggregates 7 years
 * (the session with its pose metrics).
 */
describe('telemetry retention at its boundaries', () => {
  let t: TestApp;
  let org: string;
  let patient: string;
  let exercise: string;
  // An instant in the past: rows made by other tests (now) are far younger than every run below.
  const E = '2020-01-15T10:00:00.000Z';
  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    patient = (await t.addPatient(org, uniqueEmail('patient'))).userId;
    exercise = (await t.db.query<{ id: string }>("select id from exercises where slug = 'squat' and organization_id is null")).rows[0]!.id;
  });
  after(() => t?.close());

  const deps = () => ({ db: t.db, assets: t.rt.assets, logger: t.rt.logger });
  /** E plus an interval, computed by the database as the sweep's own arithmetic is (calendar months and years). */
  const plus = async (interval: string, ms = 0) =>
    new Date(
      new Date((await t.db.query<{ at: Date }>('select $1::timestamptz + $2::interval as at', [E, interval])).rows[0]!.at).getTime() + ms,
    );
  const count = async (sql: string, params: unknown[]) => (await t.db.query<{ n: number }>(sql, params)).rows[0]!.n;

  async function endedSession(withReplay: boolean): Promise<{ id: string; key: string | null }> {
    const id = randomUUID();
    const key = withReplay ? `telemetry/replays/${org}/${id}.pose.gz` : null;
    if (key) await t.rt.assets.put(key, Buffer.from('replay'));
    await t.db.query(
      `insert into exercise_sessions (id, organization_id, patient_user_id, exercise_id, movement, status, started_at, ended_at, replay_key)
       values ($1, $2, $3, $4, '{}', 'completed', $5::timestamptz - interval '10 minutes', $5, $6)`,
      [id, org, patient, exercise, E, key],
    );
    return { id, key };
  }

  it('media session metrics: kept at exactly 2 years, gone a millisecond later', async () => {
    assert.equal(RETENTION_DEFAULTS.mediaMetricsMonths, 24);
    assert.equal(parseConfig({}).retention.mediaMetricsMonths, 24);
    const id = randomUUID();
    await t.db.query(
      'insert into media_session_metrics (media_session_id, organization_id, patient_user_id, exercise_id, created_at) values ($1, $2, $3, $4, $5)',
      [id, org, patient, exercise, E],
    );
    const exists = () => count('select count(*)::int as n from media_session_metrics where media_session_id = $1', [id]);
    assert.equal((await applyRetention(deps(), await plus('2 years'))).media, 0);
    assert.equal(await exists(), 1);
    assert.equal((await applyRetention(deps(), await plus('2 years', 1))).media, 1);
    assert.equal(await exists(), 0);
  });

  it('replay blobs: kept at exactly 6 months, the blob gone a millisecond later while the session stays', async () => {
    assert.equal(RETENTION_DEFAULTS.replayBlobsMonths, 6);
    const s = await endedSession(true);
    assert.equal((await applyRetention(deps(), await plus('6 months'))).replays, 0);
    assert.equal((await readAll((await t.rt.assets.get(s.key!))!)).toString(), 'replay');
    assert.equal((await applyRetention(deps(), await plus('6 months', 1))).replays, 1);
    assert.equal(await t.rt.assets.get(s.key!), null, 'the blob is deleted');
    const row = (await t.db.query<any>('select replay_key, replay_deleted_at from exercise_sessions where id = $1', [s.id])).rows[0];
    assert.equal(row.replay_key, null);
    assert.ok(row.replay_deleted_at, 'the session says when its replay went');
  });

  it('pose aggregates: the session kept at exactly 7 years, gone a millisecond later', async () => {
    assert.equal(RETENTION_DEFAULTS.poseAggregatesMonths, 84);
    const s = await endedSession(false);
    const exists = () => count('select count(*)::int as n from exercise_sessions where id = $1', [s.id]);
    await applyRetention(deps(), await plus('7 years'));
    assert.equal(await exists(), 1);
    const r = await applyRetention(deps(), await plus('7 years', 1));
    assert.ok(r.sessions >= 1);
    assert.equal(await exists(), 0);
  });

  it('a changed setting moves the boundary: TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS=3 deletes at 3 months, not 2 years', async () => {
    const { retention } = parseConfig({ TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS: '3' });
    assert.equal(retention.mediaMetricsMonths, 3);
    assert.equal(retention.poseAggregatesMonths, 84, 'the others keep their defaults');
    const id = randomUUID();
    await t.db.query(
      'insert into media_session_metrics (media_session_id, organization_id, patient_user_id, exercise_id, created_at) values ($1, $2, $3, $4, $5)',
      [id, org, patient, exercise, E],
    );
    const exists = () => count('select count(*)::int as n from media_session_metrics where media_session_id = $1', [id]);
    // Under the default this row would stay for 2 years; with the setting it is kept at exactly 3 months...
    assert.equal((await applyRetention({ ...deps(), retention }, await plus('3 months'))).media, 0);
    assert.equal(await exists(), 1);
    // ...and gone a millisecond later.
    assert.equal((await applyRetention({ ...deps(), retention }, await plus('3 months', 1))).media, 1);
    assert.equal(await exists(), 0);
  });

  it('retention settings are checked at start with a message naming the setting', () => {
    const refused = (env: Record<string, string>, pattern: RegExp) =>
      assert.throws(
        () => parseConfig(env),
        (err: Error) => err instanceof ConfigError && pattern.test(err.message),
      );
    refused(
      { TELEMETRY_POSE_RETENTION_MONTHS: '0' },
      /TELEMETRY_POSE_RETENTION_MONTHS must be a whole number of calendar months from 1 to 1200 \(got 0\)/,
    );
    refused({ TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS: '2y' }, /TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS/);
    refused({ AUDIT_RETENTION_MONTHS: '6' }, /AUDIT_RETENTION_MONTHS must be .* from 12 to 1200 \(got 6\).*72 is 6 years/);
    refused(
      { TELEMETRY_REPLAY_RETENTION_MONTHS: '90' },
      /TELEMETRY_REPLAY_RETENTION_MONTHS \(90\) may not exceed TELEMETRY_POSE_RETENTION_MONTHS \(84\)/,
    );
    assert.equal(parseConfig({ AUDIT_RETENTION_MONTHS: '120' }).retention.auditMonths, 120);
    assert.equal(parseConfig({}).retention.auditMonths, 72);
  });
});
