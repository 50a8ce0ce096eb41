import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Enrollment in treatment plans (spec 3.5): pinned to a published version until staff migrate
 * it, a schedule (plan day n is the n-th date from the start on the weekdays, pauses left out), pause, resume and
 * cancel with reasons, at most one live enrollment per patient and plan (a unique index), and the organizations'
 * own treatment_specific_* consent purposes that plans require.
 */

const hex = () => randomBytes(4).toString('hex');

describe('treatment plan enrollments', () => {
  let t: TestApp;
  let org: { id: string };
  let other: { id: string };
  let admin: { token: string; userId: string };
  let dr: { token: string; userId: string };
  let support: string;
  let otherAdmin: string;
  let patient: { token: string; userId: string };
  let patientId: string;
  let patient2: { token: string; userId: string };
  let patient2Id: string;
  let squat: string;
  let today: string;

  const as = (token: string, method: string, url: string, body?: unknown, orgId = org.id) =>
    t.call(method, url, { token, org: orgId, ...(body !== undefined ? { body } : {}) });
  const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
  const phases = (days: number, reps = 10) => [
    { name: 'Week 1', days: Array.from({ length: days }, () => ({ items: [{ exercise_id: squat, sets: [{ side: 'left', reps }] }] })) },
  ];
  const publishedPlan = async (days = 5, extra: Record<string, unknown> = {}) => {
    const plan = dataOf(await as(dr.token, 'POST', '/v1/treatment-plans', { name: `Plan ${hex()}`, phases: phases(days), ...extra }), 201);
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${plan.id}/publish`));
    return plan.id as string;
  };
  const enroll = (planId: string, body: Record<string, unknown> = {}, token = dr.token) =>
    as(token, 'POST', `/v1/treatment-plans/${planId}/enrollments`, { patient_id: patientId, time_zone: 'UTC', ...body });
  const enrolled = async (planId: string, body: Record<string, unknown> = {}) => dataOf(await enroll(planId, body), 201);
  const eventsOf = async (id: string) =>
    (
      await t.db.query<{ type: string; data: any }>(
        `select type, data from domain_events where data->>'id' = $1 order by occurred_at, id`,
        [id],
      )
    ).rows;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg({ name: 'Enrollment clinic' });
    other = await t.createOrg({ name: 'Other clinic' });
    admin = await t.addMember(org.id, uniqueEmail('en-admin'), 'admin');
    dr = await t.addMember(org.id, uniqueEmail('en-dr'), 'specialist');
    support = (await t.addMember(org.id, uniqueEmail('en-desk'), 'customer_support')).token;
    otherAdmin = (await t.addMember(other.id, uniqueEmail('en-other'), 'admin')).token;
    const idOf = async (userId: string) =>
      (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, userId])).rows[0]!
        .id;
    patient = await t.addPatient(org.id, uniqueEmail('en-patient'));
    patientId = await idOf(patient.userId);
    patient2 = await t.addPatient(org.id, uniqueEmail('en-patient2'));
    patient2Id = await idOf(patient2.userId);
    squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    today = (await t.db.query<{ d: string }>(`select to_char((now() at time zone 'UTC')::date, 'YYYY-MM-DD') as d`)).rows[0]!.d;
  });
  after(() => t.close());

  it('enrolls in the latest published version, pinned until staff migrate it', async () => {
    const draft = dataOf(await as(dr.token, 'POST', '/v1/treatment-plans', { name: 'Draft only', phases: phases(3) }), 201);
    assertError(await enroll(draft.id), 409, 'plan_not_published');
    const planId = await publishedPlan(3);
    for (const token of [support, patient.token]) assertError(await enroll(planId, {}, token), 403, 'forbidden');
    const e = await enrolled(planId);
    assert.deepEqual([e.plan_version, e.status, e.start_date, e.weekdays, e.time_zone], [1, 'active', today, [1, 2, 3, 4, 5, 6, 7], 'UTC']);
    assert.deepEqual(e.schedule, { today, total_days: 3, days_due: 0, today_plan_day: 1, finished: false });
    // A new version changes nothing for the enrollment...
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${planId}/rollback`, { version: 1 }));
    dataOf(await as(dr.token, 'PATCH', `/v1/treatment-plans/${planId}`, { phases: phases(4) }));
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${planId}/publish`));
    const still = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/enrollments/${e.id}`));
    assert.deepEqual([still.plan_version, still.schedule.total_days, still.plan.phases[0].days.length], [1, 3, 3]);
    // ...until staff migrate it.
    assertError(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${e.id}/migrate`, { version: 9 }), 404, 'not_found');
    assertError(await as(patient.token, 'POST', `/v1/treatment-plans/enrollments/${e.id}/migrate`, { version: 2 }), 403, 'forbidden');
    const moved = dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${e.id}/migrate`, { version: 2 }));
    assert.deepEqual([moved.plan_version, moved.schedule.total_days], [2, 4]);
    assert.deepEqual(
      (await eventsOf(e.id)).map((x) => x.type),
      ['enrollment.created', 'enrollment.migrated'],
    );
    const migrated = (await eventsOf(e.id))[1]!.data;
    assert.deepEqual([migrated.from_version, migrated.to_version], [1, 2]);
  });

  it('numbers plan days by scheduled dates: the start, the weekdays, the end of the plan', async () => {
    const planId = await publishedPlan(5);
    const e = await enrolled(planId, { start_date: day(-3) });
    assert.deepEqual(e.schedule, { today, total_days: 5, days_due: 3, today_plan_day: 4, finished: false });
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${e.id}/cancel`, { reason: 'next case' }));
    // Weekdays without today's: today is no plan day.
    const isoToday = ((new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7) + 1;
    const others = [1, 2, 3, 4, 5, 6, 7].filter((d) => d !== isoToday);
    const f = await enrolled(planId, { start_date: day(-7), weekdays: others });
    assert.deepEqual([f.schedule.today_plan_day, f.schedule.days_due], [null, 5]);
    assert.equal(f.schedule.finished, true, 'six dates before today cover the five plan days');
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${f.id}/cancel`, { reason: 'next case' }));
    // A start in the future: nothing is due yet.
    const g = await enrolled(planId, { start_date: day(2), weekdays: [7, 1, 3] });
    assert.deepEqual([g.schedule.days_due, g.schedule.today_plan_day, g.weekdays], [0, null, [1, 3, 7]]);
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${g.id}/cancel`, { reason: 'next case' }));
  });

  it('refuses bad dates and zones, and a patient plan for another patient', async () => {
    const planId = await publishedPlan(2);
    for (const body of [
      { start_date: '2025-02-30' },
      { start_date: day(-400) },
      { time_zone: 'Mars/Olympus' },
      { patient_id: MISSING_UUID },
    ]) {
      const err = assertError(await enroll(planId, body), 400, 'validation_error');
      assert.ok(Object.keys(err.fields).length >= 1, JSON.stringify(body));
    }
    const mine = dataOf(await as(dr.token, 'POST', '/v1/treatment-plans', { name: 'Hers', patient_id: patientId, phases: phases(2) }), 201);
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${mine.id}/publish`));
    assert.ok(assertError(await enroll(mine.id, { patient_id: patient2Id }), 400, 'validation_error').fields.patient_id);
    const e = await enrolled(mine.id);
    assert.equal(e.patient_id, patientId);
    // The organization's default zone when none is given.
    const z = dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${planId}/enrollments`, { patient_id: patient2Id }), 201);
    assert.equal(z.time_zone, 'UTC');
  });

  it('keeps one live enrollment per patient and plan, even when enrollments race', async () => {
    const planId = await publishedPlan(2);
    const answers = await Promise.all(Array.from({ length: 5 }, () => enroll(planId)));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409, 409]);
    for (const r of answers.filter((a) => a.statusCode === 409)) assertError(r, 409, 'already_enrolled');
    const live = answers.find((r) => r.statusCode === 201)!.json().data;
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${live.id}/cancel`, { reason: 'changed plan' }));
    dataOf(await enroll(planId), 201);
  });

  it('pauses, resumes and cancels with reasons; the patient pauses and resumes its own', async () => {
    const planId = await publishedPlan(10);
    const e = await enrolled(planId, { start_date: day(-3) });
    const path = (what: string) => `/v1/treatment-plans/enrollments/${e.id}/${what}`;
    assertError(await as(patient.token, 'POST', path('resume'), {}), 409, 'invalid_transition');
    assertError(await as(patient.token, 'POST', path('pause'), { reason: '   ' }), 400, 'validation_error');
    const paused = dataOf(await as(patient.token, 'POST', path('pause'), { reason: 'flu' }));
    assert.equal(paused.status, 'paused');
    assert.deepEqual([paused.schedule.today_plan_day, paused.schedule.days_due], [null, 3], 'from today no date is scheduled');
    assert.deepEqual(
      paused.pauses.map((p: { paused_on: string; resumed_on: string | null; pause_reason: string }) => [
        p.paused_on,
        p.resumed_on,
        p.pause_reason,
      ]),
      [[today, null, 'flu']],
    );
    assertError(await as(patient.token, 'POST', path('pause'), { reason: 'again' }), 409, 'invalid_transition');
    assertError(await as(patient2.token, 'POST', path('resume'), {}), 404, 'not_found');
    assertError(await as(patient.token, 'POST', path('cancel'), { reason: 'bored' }), 403, 'forbidden');
    const resumed = dataOf(await as(patient.token, 'POST', path('resume'), { reason: 'better' }));
    assert.equal(resumed.status, 'active');
    assert.equal(resumed.schedule.today_plan_day, 4, 'a pause opened and closed today covers no date');
    // A pause over two past dates: those dates are not plan days.
    await t.db.query(
      `insert into treatment_enrollment_pauses (organization_id, enrollment_id, paused_on, resumed_on, pause_reason, paused_by_principal_id,
         resumed_at, resumed_by_principal_id)
       values ($1, $2, $3, $4, 'holiday', $5, now(), $5)`,
      [org.id, e.id, day(-2), day(0), dr.userId],
    );
    const later = dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/enrollments/${e.id}`));
    assert.deepEqual([later.schedule.days_due, later.schedule.today_plan_day], [1, 2]);
    const cancelled = dataOf(await as(dr.token, 'POST', path('cancel'), { reason: 'moved away' }));
    assert.deepEqual(
      [cancelled.status, cancelled.cancel_reason, cancelled.cancelled_by_principal_id],
      ['cancelled', 'moved away', dr.userId],
    );
    for (const what of ['pause', 'resume', 'cancel'])
      assertError(await as(dr.token, 'POST', path(what), { reason: 'x' }), 409, 'invalid_transition');
    assertError(await as(dr.token, 'POST', path('migrate'), { version: 1 }), 409, 'invalid_transition');
    assert.deepEqual(
      (await eventsOf(e.id)).map((x) => x.type),
      ['enrollment.created', 'enrollment.paused', 'enrollment.resumed', 'enrollment.cancelled'],
    );
    // Cancelling a paused enrollment closes its pause.
    const f = await enrolled(planId);
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${f.id}/pause`, { reason: 'surgery' }));
    const done = dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${f.id}/cancel`, { reason: 'surgery went badly' }));
    assert.equal(done.pauses[0].resumed_on, today);
  });

  it('keeps "paused" and an open pause together in the database', async () => {
    const planId = await publishedPlan(2);
    const e = await enrolled(planId, {});
    await assert.rejects(
      t.db.transaction((tx) => tx.query(`update treatment_enrollments set status = 'paused' where id = $1`, [e.id])),
      /paused exactly while a pause is open/,
    );
    await assert.rejects(
      t.db.query(
        `insert into treatment_enrollment_pauses (organization_id, enrollment_id, paused_on, pause_reason, paused_by_principal_id) values ($1, $2, $3, 'x', $4)`,
        [org.id, e.id, today, dr.userId],
      ),
      /paused exactly while a pause is open/,
    );
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${e.id}/cancel`, { reason: 'test over' }));
  });

  it('lists the clinic enrollments for staff and its own for a patient, and logs staff reads', async () => {
    const planId = await publishedPlan(2);
    const a = await enrolled(planId);
    const b = await enrolled(planId, { patient_id: patient2Id });
    const ids = async (token: string, qs = '') =>
      dataOf(await as(token, 'GET', `/v1/treatment-plans/enrollments?treatment_plan_id=${planId}&${qs}`)).map((e: { id: string }) => e.id);
    assert.deepEqual(await ids(dr.token, 'sort=created_at'), [a.id, b.id]);
    assert.deepEqual(await ids(patient.token), [a.id]);
    assert.deepEqual(await ids(patient2.token), [b.id]);
    assert.deepEqual(await ids(dr.token, `patient_id=${patient2Id}`), [b.id]);
    assert.deepEqual(await ids(dr.token, 'status=cancelled'), []);
    assertError(await as(dr.token, 'GET', '/v1/treatment-plans/enrollments?status=done'), 422, 'validation_failed');
    assertError(await as(dr.token, 'GET', '/v1/treatment-plans/enrollments?patient_id=nope'), 422, 'validation_failed');
    assertError(await as(support, 'GET', '/v1/treatment-plans/enrollments'), 403, 'forbidden');
    assertError(await as(patient2.token, 'GET', `/v1/treatment-plans/enrollments/${a.id}`), 404, 'not_found');
    assertError(await as(otherAdmin, 'GET', `/v1/treatment-plans/enrollments/${a.id}`, undefined, other.id), 404, 'not_found');
    // The patient reads the version it follows: its prescription.
    const mine = dataOf(await as(patient.token, 'GET', `/v1/treatment-plans/enrollments/${a.id}`));
    assert.equal(mine.plan.phases[0].days.length, 2);
    dataOf(await as(dr.token, 'GET', `/v1/treatment-plans/enrollments/${b.id}`));
    const log = await t.db.query<{ action: string }>(
      `select action from patient_access_log where $1 = any(patient_ids) and actor_user_id = $2 and action = 'enrollment.read'`,
      [patient2Id, dr.userId],
    );
    assert.ok(log.rows.length >= 1);
  });

  it('keeps a plan with live enrollments from being deleted', async () => {
    const planId = await publishedPlan(2);
    const e = await enrolled(planId);
    assertError(await as(admin.token, 'DELETE', `/v1/treatment-plans/${planId}`), 409, 'plan_in_use');
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/enrollments/${e.id}/cancel`, { reason: 'done' }));
    assert.equal((await as(admin.token, 'DELETE', `/v1/treatment-plans/${planId}`)).statusCode, 204);
  });

  it('lets an organization create its own treatment_specific_* purposes, which are its alone', async () => {
    const code = `treatment_specific_knee_${hex()}`;
    const path = `/v1/organizations/${org.id}/consent-purposes`;
    const body = { code, name: 'Knee rehabilitation', description: 'Exercises and movement tracking for your knee.' };
    assertError(await as(dr.token, 'POST', path, body), 403, 'forbidden');
    assertError(await as(admin.token, 'POST', path, { ...body, code: 'marketing_pigeon' }), 400, 'validation_error');
    const created = dataOf(await as(admin.token, 'POST', path, body), 201);
    assert.deepEqual(
      [created.code, created.scope, created.legal_basis, created.required, created.organization_id],
      [code, 'org', 'consent', false, org.id],
    );
    assertError(await as(admin.token, 'POST', path, body), 409, 'purpose_code_taken');
    // This clinic's plans may require it; another clinic's may not, nor does it see it.
    const planId = await publishedPlan(1, { required_consents: [code] });
    assert.ok(planId);
    const otherPlan = await as(
      otherAdmin,
      'POST',
      '/v1/treatment-plans',
      { name: 'X', phases: phases(1), required_consents: [code] },
      other.id,
    );
    assert.ok(assertError(otherPlan, 400, 'validation_error').fields.required_consents);
    const catalog = async (token: string, orgId: string) =>
      (dataOf(await as(token, 'GET', '/v1/consent-purposes', undefined, orgId)) as { code: string }[]).map((p) => p.code);
    assert.ok((await catalog(patient.token, org.id)).includes(code));
    assert.ok(!(await catalog(otherAdmin, other.id)).includes(code));
    // Its text is the clinic's; the platform publishes none, another clinic none.
    const text = { body_translations: { en: 'Knee programme consent.' } };
    const v = dataOf(await as(admin.token, 'POST', `${path}/${code}/versions`, text), 201);
    assertError(
      await t.call('POST', `/v1/admin/consent-purposes/${code}/versions`, { token: await t.superadmin(), body: text }),
      409,
      'purpose_of_organization',
    );
    // The patient grants it at this clinic only.
    const grant = (orgId: string) => [{ organization_id: orgId, purpose_code: code, purpose_version: v.version, source: 'self_toggle' }];
    assertError(await as(patient.token, 'POST', '/v1/me/consents', { grants: grant(other.id) }), 400, 'validation_error');
    dataOf(await as(patient.token, 'POST', '/v1/me/consents', { grants: grant(org.id) }), 201);
    const mine = dataOf(await as(patient.token, 'GET', '/v1/me/consents')) as {
      organization_id: string;
      purpose_code: string;
      current: unknown;
    }[];
    const rows = mine.filter((g) => g.purpose_code === code);
    assert.deepEqual(
      rows.map((g) => [g.organization_id, g.current !== null]),
      [[org.id, true]],
    );
    await assert.rejects(
      t.db.query(
        `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id)
         values ($1, $2, $3, 1, 'api', $2)`,
        [other.id, patient.userId, code],
      ),
      /belongs to another organization/,
    );
  });
});
