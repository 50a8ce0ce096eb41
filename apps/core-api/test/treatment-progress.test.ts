import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Progress and the clinic dashboard (docs/telerehab.md "Progress and analytics definitions"), behind the
 * regulatory boundary: 403 telerehab_disabled until the organization enables telerehab; every answer carries the
 * device labelling and the algorithm versions behind its numbers; every read is in the access log. The history
 * of sessions is written directly (as the completed sessions of past days would be).
 */

const hex = () => randomBytes(4).toString('hex');

describe('treatment progress and analytics', () => {
  let t: TestApp;
  let org: { id: string };
  let admin: { token: string; userId: string };
  let dr: { token: string; userId: string };
  let support: string;
  let today: string;
  let squat: string;
  let plank: string;
  let planId: string;
  const patients: { token: string; userId: string; id: string; enrollment: string }[] = [];

  const as = (token: string, method: string, url: string, body?: unknown) =>
    t.call(method, url, { token, org: org.id, ...(body !== undefined ? { body } : {}) });
  const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);

  async function newPatient(startOffset: number) {
    const p = await t.addPatient(org.id, uniqueEmail('pr-patient'));
    const id = (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, p.userId]))
      .rows[0]!.id;
    const e = dataOf(
      await as(dr.token, 'POST', `/v1/treatment-plans/${planId}/enrollments`, {
        patient_id: id,
        time_zone: 'UTC',
        start_date: day(startOffset),
      }),
      201,
    );
    const entry = { ...p, id, enrollment: e.id as string };
    patients.push(entry);
    return entry;
  }

  /** A past day's row: completed (with results for the squat) or skipped. */
  async function session(
    p: { id: string; enrollment: string },
    offset: number,
    planDay: number,
    item: 0 | 1,
    r: { skipped?: boolean; form?: number; reps?: number; range?: number; pain?: number } = {},
  ) {
    const scored = item === 0 && !r.skipped;
    await t.db.query(
      `insert into plan_sessions (organization_id, enrollment_id, patient_id, treatment_plan_id, plan_version, plan_day, scheduled_on, item_index,
         exercise_id, status, started_at, completed_at, skipped_at, skip_reason, rep_count, form_score, rom, algorithm_version, software_version, pain)
       values ($1, $2, $3, $4, 1, $5, $6::date, $7, $8, $9, $6::date + time '10:00', $10::timestamptz, $11::timestamptz, $12, $13, $14, $15::jsonb, $16, '0.1.0', $17)`,
      [
        org.id,
        p.enrollment,
        p.id,
        planId,
        planDay,
        day(offset),
        item,
        item === 0 ? squat : plank,
        r.skipped ? 'skipped' : 'completed',
        r.skipped ? null : `${day(offset)}T10:20:00Z`,
        r.skipped ? `${day(offset)}T10:20:00Z` : null,
        r.skipped ? 'tired' : null,
        scored ? (r.reps ?? 10) : null,
        scored ? (r.form ?? 90) : null,
        scored
          ? JSON.stringify({ left_knee: { min_deg: 100, max_deg: 100 + (r.range ?? 70), range_deg: r.range ?? 70, valid_frames: 300 } })
          : null,
        scored ? 'pose-score/1' : null,
        r.skipped ? null : (r.pain ?? null),
      ],
    );
  }

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg({ name: 'Progress clinic' });
    admin = await t.addMember(org.id, uniqueEmail('pr-admin'), 'admin');
    dr = await t.addMember(org.id, uniqueEmail('pr-dr'), 'specialist');
    support = (await t.addMember(org.id, uniqueEmail('pr-desk'), 'customer_support')).token;
    today = (await t.db.query<{ d: string }>(`select to_char((now() at time zone 'UTC')::date, 'YYYY-MM-DD') as d`)).rows[0]!.d;
    squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    plank = dataOf(
      await as(admin.token, 'POST', '/v1/exercises', { slug: `pr-plank-${hex()}`, name: 'Plank', kind: 'duration_based' }),
      201,
    ).id;
    dataOf(await as(admin.token, 'PUT', `/v1/exercises/${plank}/status`, { status: 'published' }));
    const items = [
      { exercise_id: squat, sets: [{ side: 'left', reps: 10 }] },
      { exercise_id: plank, duration_seconds: 30 },
    ];
    const plan = dataOf(
      await as(dr.token, 'POST', '/v1/treatment-plans', {
        name: 'Knee programme',
        phases: [{ name: 'Weeks 1-2', days: Array.from({ length: 14 }, () => ({ items })) }],
        self_report: { pain: true, effort: false },
      }),
      201,
    );
    planId = plan.id;
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${planId}/publish`));
    // Behind and worsening: started 9 days ago; days 1-5 done with a falling form score and a growing range,
    // day 6 half done (the plank skipped), days 7-9 nothing.
    const behind = await newPatient(-9);
    for (let d = 0; d < 5; d++) {
      await session(behind, -9 + d, d + 1, 0, { form: 90 - 2 * d, range: 70 + 2 * d, pain: 3 - Math.floor(d / 2) });
      await session(behind, -9 + d, d + 1, 1);
    }
    await session(behind, -4, 6, 0, { form: 80, range: 80 });
    await session(behind, -4, 6, 1, { skipped: true });
    // On track: started 6 days ago, every day done, a steady form.
    const steady = await newPatient(-6);
    for (let d = 0; d < 6; d++) {
      await session(steady, -6 + d, d + 1, 0, { form: 85, range: 75 });
      await session(steady, -6 + d, d + 1, 1);
    }
    // Starts today: nothing due yet.
    await newPatient(0);
  });
  after(() => t.close());

  it('serves no progress or analytics until the organization enables telerehab', async () => {
    assertError(
      await as(patients[0]!.token, 'GET', `/v1/treatment-plans/enrollments/${patients[0]!.enrollment}/progress`),
      403,
      'telerehab_disabled',
    );
    assertError(await as(dr.token, 'GET', '/v1/treatment-plans/analytics'), 403, 'telerehab_disabled');
    dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: true, accept_intended_use: true }));
  });

  it("computes an enrollment's adherence, series and trends, for the patient and for staff with telemetry.view_org", async () => {
    const p = patients[0]!;
    const mine = dataOf(await as(p.token, 'GET', `/v1/treatment-plans/enrollments/${p.enrollment}/progress`));
    assert.deepEqual(mine.adherence, {
      days_due: 9,
      days_completed: 5,
      day_rate: 0.556,
      items_due: 18,
      items_completed: 11,
      items_skipped: 1,
      item_rate: 0.611,
    });
    const sq = mine.exercises.find((x: { exercise_id: string }) => x.exercise_id === squat);
    assert.deepEqual([sq.sessions, sq.total_reps, sq.name], [6, 60, 'Squat']);
    assert.deepEqual(
      sq.series.map((s: { date: string; form_score: number }) => [s.date, s.form_score]),
      [
        [day(-9), 90],
        [day(-8), 88],
        [day(-7), 86],
        [day(-6), 84],
        [day(-5), 82],
        [day(-4), 80],
      ],
    );
    assert.equal(sq.form_score_trend, -2);
    assert.deepEqual(sq.rom_trend.left_knee, { first_deg: 70, last_deg: 80, trend_deg_per_day: 2 });
    assert.equal(sq.series[0].rom.left_knee, 70);
    assert.equal(sq.series[0].algorithm_version, 'pose-score/1');
    const pk = mine.exercises.find((x: { exercise_id: string }) => x.exercise_id === plank);
    assert.deepEqual([pk.sessions, pk.form_score_mean, pk.form_score_trend], [5, null, null]);
    assert.deepEqual(
      mine.self_reports.pain.map((x: { value: number }) => x.value),
      [3, 3, 2, 2, 1],
    );
    assert.deepEqual(mine.algorithm_versions, ['pose-score/1']);
    assert.equal(mine.labelling.version, t.config.systemInfo.version);
    assert.equal(mine.labelling.udi_di, t.config.systemInfo.udi_di);
    // Staff with telemetry.view_org read the same; the front desk does not; another patient finds nothing.
    assert.deepEqual(
      dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/enrollments/${p.enrollment}/progress`)).adherence,
      mine.adherence,
    );
    assertError(await as(support, 'GET', `/v1/treatment-plans/enrollments/${p.enrollment}/progress`), 403, 'forbidden');
    assertError(await as(patients[1]!.token, 'GET', `/v1/treatment-plans/enrollments/${p.enrollment}/progress`), 404, 'not_found');
    const log = await t.db.query(
      `select 1 from patient_access_log where $1 = any(patient_ids) and actor_user_id = $2 and action = 'treatment_progress.read'`,
      [p.id, dr.userId],
    );
    assert.ok(log.rows.length >= 1, 'a staff read of progress is in the access log');
    // Today counts once its items are all done.
    const fresh = patients[2]!;
    assert.equal(
      dataOf(await as(fresh.token, 'GET', `/v1/treatment-plans/enrollments/${fresh.enrollment}/progress`)).adherence.days_due,
      0,
    );
    await session(fresh, 0, 1, 0, { form: 70 });
    await session(fresh, 0, 1, 1);
    const done = dataOf(await as(fresh.token, 'GET', `/v1/treatment-plans/enrollments/${fresh.enrollment}/progress`)).adherence;
    assert.deepEqual([done.days_due, done.days_completed, done.day_rate], [1, 1, 1]);
  });

  it('leaves paused dates out of what is due', async () => {
    const p = await newPatient(-4);
    await t.db.query(
      `insert into treatment_enrollment_pauses (organization_id, enrollment_id, paused_on, resumed_on, pause_reason, paused_by_principal_id, resumed_at, resumed_by_principal_id)
       values ($1, $2, $3, $4, 'flu', $5, now(), $5)`,
      [org.id, p.enrollment, day(-3), day(-1), dr.userId],
    );
    const a = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/enrollments/${p.enrollment}/progress`)).adherence;
    assert.equal(a.days_due, 2, 'days -4 and -1; -3 and -2 were paused');
    await t.db.query(`update treatment_enrollments set status = 'cancelled', cancelled_at = now(), cancel_reason = 'test' where id = $1`, [
      p.enrollment,
    ]);
  });

  it('lists the clinic dashboard worst first, with the flags, filters and a summary', async () => {
    const [behind, steady, fresh] = patients;
    const res = await as(dr.token, 'GET', `/v1/treatment-plans/analytics?treatment_plan_id=${planId}`);
    const d = res.json();
    assert.equal(res.statusCode, 200, res.body);
    const byId = new Map(d.data.map((x: { enrollment_id: string }) => [x.enrollment_id, x]));
    const b = byId.get(behind!.enrollment) as Record<string, unknown>;
    assert.deepEqual(
      [b.days_due, b.days_completed, b.adherence, b.falling_behind, b.worsening_form, b.scored_sessions],
      [9, 5, 0.556, true, true, 6],
    );
    assert.equal(b.form_trend, -2);
    assert.equal(b.plan_name, 'Knee programme');
    const s = byId.get(steady!.enrollment) as Record<string, unknown>;
    assert.deepEqual([s.days_due, s.days_completed, s.adherence, s.falling_behind, s.worsening_form], [6, 6, 1, false, false]);
    const f = byId.get(fresh!.enrollment) as Record<string, unknown>;
    assert.deepEqual([f.days_due, f.adherence, f.falling_behind], [0, null, false]);
    assert.equal(d.data[0].enrollment_id, behind!.enrollment, 'worst adherence first');
    assert.deepEqual([d.summary.enrollments, d.summary.falling_behind, d.summary.worsening_form, d.summary.window_days], [3, 1, 1, 14]);
    assert.equal(d.labelling.product_name, t.config.systemInfo.product_name);
    const ids = async (qs: string) =>
      dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/analytics?treatment_plan_id=${planId}&${qs}`)).map(
        (x: { enrollment_id: string }) => x.enrollment_id,
      );
    assert.deepEqual(await ids('falling_behind=true'), [behind!.enrollment]);
    assert.deepEqual(await ids('worsening_form=true'), [behind!.enrollment]);
    assert.deepEqual((await ids('falling_behind=false')).sort(), [steady!.enrollment, fresh!.enrollment].sort());
    // A window of the last 3 days: only days 7-9 of the first patient, none done.
    const narrow = await as(dr.token, 'GET', `/v1/treatment-plans/analytics?treatment_plan_id=${planId}&window_days=7`);
    assert.equal(narrow.statusCode, 200);
    const page2 = await as(dr.token, 'GET', `/v1/treatment-plans/analytics?treatment_plan_id=${planId}&limit=1&page=2`);
    assert.deepEqual([page2.json().data.length, page2.json().pagination.total], [1, 3]);
    const past = await as(dr.token, 'GET', `/v1/treatment-plans/analytics?treatment_plan_id=${planId}&limit=1&page=9`);
    assert.deepEqual([past.json().data.length, past.json().summary.enrollments], [0, 3], 'the summary is there past the last page');
    for (const qs of ['window_days=3', 'window_days=x', 'falling_behind=maybe', 'treatment_plan_id=nope', 'sort=name']) {
      assertError(await as(dr.token, 'GET', `/v1/treatment-plans/analytics?${qs}`), 422, 'validation_failed');
    }
    assertError(await as(support, 'GET', '/v1/treatment-plans/analytics'), 403, 'forbidden');
    assertError(await as(behind!.token, 'GET', '/v1/treatment-plans/analytics'), 403, 'forbidden');
    const log = await t.db.query(`select 1 from patient_access_log where $1 = any(patient_ids) and action = 'treatment_analytics.read'`, [
      behind!.id,
    ]);
    assert.ok(log.rows.length >= 1);
  });

  it("counts the dashboard's window in plan days: after pauses before and inside it, and not past the plan's end", async () => {
    // Started 20 days ago, every weekday; paused on days -18 and -17 and on day -8. Plan days 1-2 fall on -20 and
    // -19, 3-10 on -16 to -9, 11-14 on -7 to -4: the 14-day window (-14 to -1) holds plan days 5 to 14, ten dates,
    // and nothing after -4, where the plan ended. Days 5-9 done.
    const p = await newPatient(-20);
    for (const [from, to] of [
      [-18, -16],
      [-8, -7],
    ] as const) {
      await t.db.query(
        `insert into treatment_enrollment_pauses (organization_id, enrollment_id, paused_on, resumed_on, pause_reason, paused_by_principal_id, resumed_at, resumed_by_principal_id)
         values ($1, $2, $3, $4, 'flu', $5, now(), $5)`,
        [org.id, p.enrollment, day(from), day(to), dr.userId],
      );
    }
    for (let d = 0; d < 5; d++) {
      await session(p, -14 + d, 5 + d, 0, { form: 80 });
      await session(p, -14 + d, 5 + d, 1);
    }
    const rows = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/analytics?treatment_plan_id=${planId}&limit=100`));
    const mine = rows.find((x: { enrollment_id: string }) => x.enrollment_id === p.enrollment);
    assert.deepEqual(
      [mine.days_due, mine.days_completed, mine.items_due, mine.items_completed, mine.adherence, mine.falling_behind, mine.scored_sessions],
      [10, 5, 20, 10, 0.5, true, 5],
    );
    const progress = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/enrollments/${p.enrollment}/progress`));
    assert.deepEqual([progress.adherence.days_due, progress.adherence.days_completed], [14, 5], 'the whole plan is due by now');
    assert.equal(progress.enrollment.schedule.finished, true);
  });
});
