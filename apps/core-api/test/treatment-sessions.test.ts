import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { signRequest } from '@clinic/composer';
import { buildTelemetryApp, createSessionTokenVerifier } from '@clinic/telemetry';
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { encodeBatchGzip } from '../../telemetry/src/pose/format.ts';
import { generateSession, toBatches } from '../../telemetry/src/synthetic/generator.ts';
import { sessionSigner } from '../src/modules/exercise-sessions/token.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Plan sessions: today's plan, start (the exercise session of spec 4.11 with its telemetry
 * token, and the item's video composed with its sets and a stable seed by a signed call to the composer),
 * complete (the telemetry results written at session end, with the algorithm's version and the software's
 * labelling), skip with a reason, caregivers acting for a patient, and the results withheld where telerehab is
 * not enabled. The composer is a fake HTTP server that checks the signature and records a render row as the
 * composer does; telemetry is the real service on the same database, fed by the synthetic pose generator.
 */

const hex = () => randomBytes(4).toString('hex');
const SECRET = 'a-composer-secret-that-is-long-enough-1234';

interface Composed {
  body: { exercise: string; language: string; sets: { side: string; reps: number }[]; seed: number };
  signed: boolean;
}

describe('plan sessions', () => {
  let t: TestApp;
  let telemetry: FastifyInstance;
  let composer: Server;
  let composerMode: 'ok' | 'fail' = 'ok';
  const composed: Composed[] = [];
  let org: { id: string };
  let admin: { token: string; userId: string };
  let dr: { token: string; userId: string };
  let patient: { token: string; userId: string };
  let patientId: string;
  let other: { token: string; userId: string };
  let squat: string;
  let plank: string;
  let today: string;
  const versions: Record<string, number> = {};

  const as = (token: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}) =>
    t.call(method, url, { token, org: org.id, headers, ...(body !== undefined ? { body } : {}) });
  const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
  const items = () => [
    {
      exercise_id: squat,
      sets: [
        { side: 'left', reps: 5 },
        { side: 'right', reps: 5 },
      ],
    },
    { exercise_id: plank, duration_seconds: 30 },
  ];
  async function enrolled(opts: { patient?: string; plan?: Record<string, unknown>; enroll?: Record<string, unknown> } = {}) {
    const body = { name: `Sessions ${hex()}`, phases: [{ name: 'W1', days: [{ items: items() }, { items: items() }] }], ...opts.plan };
    const plan = dataOf(await as(dr.token, 'POST', '/v1/treatment-plans', body), 201);
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${plan.id}/publish`));
    const e = await as(dr.token, 'POST', `/v1/treatment-plans/${plan.id}/enrollments`, {
      patient_id: opts.patient ?? patientId,
      time_zone: 'UTC',
      ...opts.enroll,
    });
    return dataOf(e, 201).id as string;
  }
  const start = (enrollmentId: string, item_index = 0, token = patient.token, headers: Record<string, string> = {}) =>
    as(token, 'POST', `/v1/treatment-plans/enrollments/${enrollmentId}/sessions`, { item_index }, headers);
  async function grant(code: string, token = patient.token) {
    if (!versions[code]) {
      const su = await t.superadmin();
      const v = await t.call('POST', `/v1/admin/consent-purposes/${code}/versions`, {
        token: su,
        body: { body_translations: { en: `${code} text` } },
      });
      versions[code] = dataOf(v, 201).version;
    }
    dataOf(
      await t.call('POST', '/v1/me/consents', {
        token,
        body: { grants: [{ organization_id: org.id, purpose_code: code, purpose_version: versions[code], source: 'self_toggle' }] },
      }),
      201,
    );
  }
  /** Sends `reps` synthetic squats as pose batches to telemetry, then ends the session. */
  async function exercise(sessionToken: string, sessionId: string, reps: number) {
    const auth = { authorization: `Bearer ${sessionToken}` };
    const g = generateSession({ kind: 'squat', scenario: 'clean', reps, seed: 7 });
    for (const batch of toBatches(g)) {
      const res = await telemetry.inject({
        method: 'POST',
        url: '/v1/pose/frames',
        headers: { ...auth, 'content-type': 'application/octet-stream' },
        payload: encodeBatchGzip(batch),
      });
      assert.equal(res.statusCode, 201, res.body);
    }
    const end = await telemetry.inject({ method: 'POST', url: `/v1/sessions/${sessionId}/end`, headers: auth });
    assert.equal(end.statusCode, 200, end.body);
  }

  before(async () => {
    // The fake composer: checks the signature, records a render row as the composer would, answers like it.
    composer = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const auth = String(req.headers.authorization ?? '');
        const m = /t=(\d+)/.exec(auth);
        const signed = !!m && signRequest(SECRET, 'POST', '/v1/compose', raw, Number(m[1]) * 1000) === auth;
        const body = JSON.parse(raw) as Composed['body'];
        composed.push({ body, signed });
        if (composerMode === 'fail' || !signed) {
          res.writeHead(signed ? 503 : 401, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { code: signed ? 'render_busy' : 'unauthorized', message: 'no' } }));
          return;
        }
        const hash = createHash('sha256').update(JSON.stringify(body.sets)).digest('hex');
        const { rows } = await t.db.query<{ id: string; asset_version: number }>(
          `insert into exercise_renders (exercise_id, organization_id, recipe_hash, language, asset_version, recipe, status, stream_video_id, playback_hls_url, duration_seconds)
           select e.id, e.organization_id, $2, $3, e.asset_version, $4::jsonb, 'processing', 'vid-' || $2, 'https://video.test/' || $2 || '.m3u8', 61
           from exercises e where e.slug = $1
           on conflict (exercise_id, recipe_hash, language, asset_version) do update set updated_at = now() returning id, asset_version`,
          [body.exercise, hash, body.language, JSON.stringify(body.sets)],
        );
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            data: {
              id: rows[0]!.id,
              exercise: body.exercise,
              language: body.language,
              recipe_hash: hash,
              asset_version: rows[0]!.asset_version,
              status: 'processing',
              stream_video_id: `vid-${hash}`,
              playback_hls_url: `https://video.test/${hash}.m3u8`,
              duration_seconds: 61,
              cached: false,
            },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => composer.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(composer.address() as AddressInfo).port}`;
    t = await startTestApp({ env: { COMPOSER_URL: url, COMPOSER_AUTH_SECRETS: SECRET, RATELIMIT_API_LIMIT: '100000' } });
    const signer = await sessionSigner(t.config);
    telemetry = await buildTelemetryApp({
      db: t.db,
      assets: t.rt.assets,
      logger: t.rt.logger,
      userTokens: t.rt.verifier,
      sessionTokens: createSessionTokenVerifier(signer.keys),
      redis: t.rt.redis,
      redisKeyPrefix: t.config.redisKeyPrefix,
    });
    org = await t.createOrg({ name: 'Session clinic' });
    admin = await t.addMember(org.id, uniqueEmail('ps-admin'), 'admin');
    dr = await t.addMember(org.id, uniqueEmail('ps-dr'), 'specialist');
    patient = await t.addPatient(org.id, uniqueEmail('ps-patient'));
    other = await t.addPatient(org.id, uniqueEmail('ps-other'));
    patientId = (
      await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, patient.userId])
    ).rows[0]!.id;
    squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    plank = dataOf(
      await as(admin.token, 'POST', '/v1/exercises', { slug: `plank-${hex()}`, name: 'Plank', kind: 'duration_based' }),
      201,
    ).id;
    dataOf(await as(admin.token, 'PUT', `/v1/exercises/${plank}/status`, { status: 'published' }));
    today = (await t.db.query<{ d: string }>(`select to_char((now() at time zone 'UTC')::date, 'YYYY-MM-DD') as d`)).rows[0]!.d;
  });
  after(async () => {
    await telemetry?.close();
    await t?.close();
    await new Promise((resolve) => composer?.close(resolve));
  });

  it("shows today's plan with what is missing before a session can start", async () => {
    const e = await enrolled();
    const plan = dataOf(await as(patient.token, 'GET', '/v1/treatment-plans/today'));
    const mine = plan.enrollments.find((x: { enrollment: { id: string } }) => x.enrollment.id === e);
    assert.equal(mine.plan_day, 1);
    assert.deepEqual(
      mine.items.map((i: { item_index: number; status: string; exercise: { kind: string } }) => [i.item_index, i.status, i.exercise.kind]),
      [
        [0, 'pending', 'reps_based'],
        [1, 'pending', 'duration_based'],
      ],
    );
    assert.deepEqual(mine.missing_consents, ['biometric']);
    // Staff name the patient; without one it is 422.
    assertError(await as(dr.token, 'GET', '/v1/treatment-plans/today'), 422, 'validation_failed');
    const staff = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/today?patient_id=${patientId}`));
    assert.ok(staff.enrollments.some((x: { enrollment: { id: string } }) => x.enrollment.id === e));
  });

  it('needs the biometric consent for a scored item and every consent the plan requires', async () => {
    const e = await enrolled({ plan: { required_consents: ['treatment_specific_home_exercise'] } });
    const first = assertError(await start(e), 403, 'consent_required');
    assert.equal(first.missing_purpose, 'biometric');
    await grant('biometric');
    const second = assertError(await start(e), 403, 'consent_required');
    assert.equal(second.missing_purpose, 'treatment_specific_home_exercise');
    await grant('treatment_specific_home_exercise');
    dataOf(await start(e), 201);
    // Staff do not start sessions: they are the patient's acts.
    assertError(await start(e, 0, dr.token), 403, 'forbidden');
    assertError(await start(e, 0, other.token), 404, 'not_found');
  });

  it('starts with a telemetry token and a video composed from the item with a stable seed; completes with the telemetry results', async () => {
    await grant('biometric').catch(() => undefined);
    const e = await enrolled({ plan: { self_report: { pain: true, effort: false } } });
    const before = composed.length;
    const started = dataOf(await start(e), 201);
    assert.ok(started.telemetry.session_token);
    assert.equal(decodeJwt(started.telemetry.session_token).sub, patient.userId);
    assert.equal(started.session.status, 'started');
    assert.equal(started.session.plan_day, 1);
    assert.equal(started.session.scheduled_on, today);
    assert.deepEqual(started.exercise.slug, 'squat');
    const call = composed[before]!;
    assert.equal(call.signed, true, 'the compose request is signed');
    assert.deepEqual(call.body.sets, items()[0]!.sets);
    assert.deepEqual([call.body.exercise, call.body.language], ['squat', 'en']);
    assert.ok(started.video.playback_hls_url.startsWith('https://video.test/'));
    assert.equal(started.session.render_id, started.video.render_id);
    assert.equal(started.labelling.version, t.config.systemInfo.version);
    // Starting again (the app crashed): a new exercise session, the same seed, so the same video.
    const again = dataOf(await start(e), 201);
    assert.equal(again.session.id, started.session.id);
    assert.equal(again.session.starts, 2);
    assert.notEqual(again.telemetry.session_id, started.telemetry.session_id);
    assert.equal(composed[before + 1]!.body.seed, call.body.seed);
    assert.equal(again.video.render_id, started.video.render_id);

    const sessionId = again.session.id;
    assertError(
      await as(patient.token, 'POST', `/v1/treatment-plans/sessions/${sessionId}/complete`, { pain: 2 }),
      409,
      'session_not_ended',
    );
    await exercise(again.telemetry.session_token, again.telemetry.session_id, 5);
    const missing = assertError(
      await as(patient.token, 'POST', `/v1/treatment-plans/sessions/${sessionId}/complete`, {}),
      400,
      'validation_error',
    );
    assert.ok(missing.fields.pain);
    const done = dataOf(await as(patient.token, 'POST', `/v1/treatment-plans/sessions/${sessionId}/complete`, { pain: 2, note: ' fine ' }));
    assert.equal(done.status, 'completed');
    assert.equal(done.pain, 2);
    assert.equal(done.patient_note, 'fine');
    // Telerehab is not enabled at this clinic yet: the results are stored, not served.
    assert.deepEqual([done.results, done.results_withheld], [null, true]);
    const stored = await t.db.query<{ rep_count: number; algorithm_version: string; software_version: string; form_score: number }>(
      'select rep_count, algorithm_version, software_version, form_score from plan_sessions where id = $1',
      [sessionId],
    );
    assert.equal(stored.rows[0]!.rep_count, 5);
    assert.equal(stored.rows[0]!.algorithm_version, 'pose-score/1');
    assert.equal(stored.rows[0]!.software_version, t.config.systemInfo.version);
    dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: true, accept_intended_use: true }));
    try {
      const read = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/sessions/${sessionId}`));
      assert.equal(read.results.rep_count, 5);
      assert.equal(read.results.algorithm_version, 'pose-score/1');
      assert.ok(read.results.form_score >= 0 && read.results.form_score <= 100);
      assert.ok(read.results.rom.left_knee);
      assert.equal(read.results_withheld, false);
      assert.deepEqual(read.labelling, {
        manufacturer_name: t.config.systemInfo.manufacturer_name,
        product_name: t.config.systemInfo.product_name,
        version: t.config.systemInfo.version,
        udi_di: t.config.systemInfo.udi_di,
        intended_use_version: 'telerehab-intended-use/1',
      });
    } finally {
      dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: false }));
    }
    assertError(
      await as(patient.token, 'POST', `/v1/treatment-plans/sessions/${sessionId}/complete`, { pain: 2 }),
      409,
      'plan_session_closed',
    );
    assertError(await start(e), 409, 'plan_session_closed');
    // A completed session is a record: the database refuses to change it.
    await assert.rejects(t.db.query('update plan_sessions set pain = 9 where id = $1', [sessionId]), /does not change/);
    const events = await t.db.query<{ type: string; data: any }>(
      `select type, data from domain_events where data->>'id' = $1 order by occurred_at, id`,
      [sessionId],
    );
    assert.deepEqual(
      events.rows.map((x) => x.type),
      ['plan_session.started', 'plan_session.started', 'plan_session.completed'],
    );
    assert.equal(events.rows[2]!.data.scored, true);
    assert.equal(events.rows[2]!.data.form_score, undefined, 'no scores in events');
  });

  it("plays a duration-based item's imported video at the current asset version only, and completes it without telemetry", async () => {
    const e = await enrolled();
    const first = dataOf(await start(e, 1), 201);
    assert.equal(first.telemetry, null);
    assert.equal(first.video, null);
    assert.match(first.video_unavailable_reason, /imported video/);
    const render = await t.db.query<{ id: string }>(
      `insert into exercise_renders (exercise_id, organization_id, recipe_hash, language, asset_version, status, stream_video_id, playback_hls_url)
       values ($1, $2, '_imported', 'en', 1, 'ready', 'plank-video', 'https://video.test/plank.m3u8') returning id`,
      [plank, org.id],
    );
    const second = dataOf(await start(e, 1), 201);
    assert.equal(second.video.render_id, render.rows[0]!.id);
    assert.equal(second.video.status, 'ready');
    // New primitives (spec 9.6): the old imported video no longer matches.
    dataOf(await as(admin.token, 'POST', `/v1/exercises/${plank}/asset-version`));
    const third = dataOf(await start(e, 1), 201);
    assert.equal(third.video, null);
    const done = dataOf(await as(patient.token, 'POST', `/v1/treatment-plans/sessions/${third.session.id}/complete`, {}));
    assert.deepEqual([done.status, done.results, done.results_withheld], ['completed', null, false]);
  });

  it('starts without a video when the composer fails, and skips with a reason', async () => {
    await grant('biometric').catch(() => undefined);
    const e = await enrolled();
    composerMode = 'fail';
    try {
      const s = dataOf(await start(e), 201);
      assert.equal(s.video, null);
      assert.match(s.video_unavailable_reason, /503/);
      assert.ok(s.telemetry.session_token, 'the session starts all the same');
    } finally {
      composerMode = 'ok';
    }
    assertError(
      await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${e}/skip`, { item_index: 5, reason: 'x' }),
      400,
      'validation_error',
    );
    const skipped = dataOf(
      await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${e}/skip`, { item_index: 0, reason: 'knee hurts' }),
    );
    assert.deepEqual([skipped.status, skipped.skip_reason], ['skipped', 'knee hurts']);
    assertError(
      await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${e}/skip`, { item_index: 0, reason: 'again' }),
      409,
      'plan_session_closed',
    );
    assertError(await start(e), 409, 'plan_session_closed');
    const later = dataOf(await as(patient.token, 'GET', '/v1/treatment-plans/today'));
    const mine = later.enrollments.find((x: { enrollment: { id: string } }) => x.enrollment.id === e);
    assert.deepEqual(
      mine.items.map((i: { status: string }) => i.status),
      ['skipped', 'pending'],
    );
  });

  it('starts nothing on a day that is not a plan day or in an enrollment that is not active', async () => {
    const isoToday = ((new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7) + 1;
    const notToday = await enrolled({ enroll: { weekdays: [isoToday === 1 ? 2 : 1] } });
    assertError(await start(notToday), 409, 'not_a_plan_day');
    const future = await enrolled({ enroll: { start_date: day(3) } });
    assertError(await start(future), 409, 'not_a_plan_day');
    const paused = await enrolled();
    dataOf(await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${paused}/pause`, { reason: 'away' }));
    assertError(await start(paused), 409, 'enrollment_not_active');
    assertError(
      await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${paused}/skip`, { item_index: 0, reason: 'x' }),
      409,
      'enrollment_not_active',
    );
  });

  it('lets a caregiver start a session for the patient: the exercise session and its token are the patient’s', async () => {
    const child = await t.addPatient(org.id, uniqueEmail('ps-child'));
    const childId = (
      await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, child.userId])
    ).rows[0]!.id;
    const parentEmail = uniqueEmail('ps-parent');
    dataOf(
      await t.call('POST', `/v1/patients/${childId}/caregivers`, { token: child.token, org: org.id, body: { email: parentEmail } }),
      201,
    );
    await grant('biometric', child.token);
    const e = await enrolled({ patient: childId });
    const parent = await t.token(parentEmail);
    const started = dataOf(await start(e, 0, parent, { 'x-patient-id': childId }), 201);
    assert.equal(decodeJwt(started.telemetry.session_token).sub, child.userId);
    const row = await t.db.query<{ patient_user_id: string }>('select patient_user_id from exercise_sessions where id = $1', [
      started.telemetry.session_id,
    ]);
    assert.equal(row.rows[0]!.patient_user_id, child.userId);
    // Without the header the caregiver acts for nobody: the enrollment is not theirs.
    assertError(await start(e, 0, parent), 404, 'not_found');
  });

  it('lists sessions for staff and the patient, and records staff reads', async () => {
    const e = await enrolled();
    const s = dataOf(await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${e}/skip`, { item_index: 1, reason: 'tired' }));
    const ids = async (token: string, qs: string) =>
      dataOf(await as(token, 'GET', `/v1/treatment-plans/sessions?${qs}`)).map((x: { id: string }) => x.id);
    assert.deepEqual(await ids(dr.token, `enrollment_id=${e}`), [s.id]);
    assert.deepEqual(await ids(patient.token, `enrollment_id=${e}&status=skipped`), [s.id]);
    assert.deepEqual(await ids(other.token, `enrollment_id=${e}`), []);
    assert.deepEqual(await ids(dr.token, `enrollment_id=${e}&scheduled_on_after=${day(1)}`), []);
    assert.deepEqual(await ids(dr.token, `enrollment_id=${e}&scheduled_on_before=${today}`), [s.id]);
    assertError(await as(dr.token, 'GET', '/v1/treatment-plans/sessions?status=done'), 422, 'validation_failed');
    assertError(await as(dr.token, 'GET', '/v1/treatment-plans/sessions?sort=pain'), 422, 'validation_failed');
    const list = await as(dr.token, 'GET', `/v1/treatment-plans/sessions?enrollment_id=${e}`);
    assert.equal(list.json().labelling.version, t.config.systemInfo.version);
    assertError(await as(other.token, 'GET', `/v1/treatment-plans/sessions/${s.id}`), 404, 'not_found');
    const log = await t.db.query(
      `select 1 from patient_access_log where $1 = any(patient_ids) and actor_user_id = $2 and action = 'plan_session.read'`,
      [patientId, dr.userId],
    );
    assert.ok(log.rows.length >= 1);
  });

  it('answers a repeated start with the same Idempotency-Key once', async () => {
    await grant('biometric').catch(() => undefined);
    const e = await enrolled();
    const key = `start-${hex()}`;
    const a = dataOf(await start(e, 0, patient.token, { 'idempotency-key': key }), 201);
    const b = dataOf(await start(e, 0, patient.token, { 'idempotency-key': key }), 201);
    assert.equal(b.telemetry.session_id, a.telemetry.session_id);
    assert.equal(b.session.starts, 1);
  });
});
