import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

/*
 * GDPR and telerehab (migration 0085; docs/decisions.md "Telerehab"): the export holds the
 * person's enrollments (with the version followed and the pauses), plan sessions with their results and the
 * versions that produced them, and, in the clinic's copy, the plans written for the person; erasure removes all
 * of it (the programme rests on consent, as the telemetry it scores), announces live enrollments as cancelled,
 * keeps library plans (a plan promoted from the person's loses only its source link), and the audit trail,
 * which outlives erasure, never held the person's reasons or the content of its plan.
 */

interface Person {
  token: string;
  userId: string;
  id: string;
}

interface Seeded {
  person: Person;
  libraryEnrollment: string;
  patientPlan: string;
  patientEnrollment: string;
  promoted: string;
  sessions: string[];
}

const PLAN_NOTE = 'Operated on the left knee three weeks ago';
const SKIP_REASON = 'Knee swollen this morning';
const PAUSE_REASON = 'Away at my sister';
const SELF_NOTE = 'It pulled a bit at the end';

describe('gdpr: telerehab enrollments, plan sessions and patient plans', () => {
  let t: TestApp;
  let org: { id: string };
  let admin: { token: string; userId: string };
  let dr: { token: string; userId: string };
  let today: string;
  let squat: string;
  let library: string;
  let bystander: Person;
  let bystanderEnrollment: string;

  const as = (token: string, method: string, url: string, body?: unknown) =>
    t.call(method, url, { token, org: org.id, ...(body !== undefined ? { body } : {}) });
  const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
  const count = async (sql: string, params: unknown[]) => (await t.db.query(sql, params)).rows.length;

  async function newPatient(label: string): Promise<Person> {
    const p = await t.addPatient(org.id, uniqueEmail(label));
    await t.acceptOrgPurposes(org.id, p.userId);
    const id = (await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, p.userId]))
      .rows[0]!.id;
    return { ...p, id };
  }

  async function waitExport(token: string, orgId: string | undefined, body: unknown) {
    const opts = orgId ? { org: orgId } : {};
    const queued = dataOf(await t.call('POST', '/v1/gdpr/export', { token, body, ...opts }), 202);
    for (let i = 0; i < 300; i++) {
      const job = dataOf(await t.call('GET', `/v1/gdpr/exports/${queued.id}`, { token, ...opts }));
      if (job.status === 'done') return JSON.parse((await t.call('GET', job.download_url, { token, ...opts })).body);
      assert.notEqual(job.status, 'failed', JSON.stringify(job));
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('export did not finish');
  }

  const enroll = async (planId: string, patientId: string, start: string) =>
    dataOf(
      await as(dr.token, 'POST', `/v1/treatment-plans/${planId}/enrollments`, {
        patient_id: patientId,
        time_zone: 'UTC',
        start_date: start,
      }),
      201,
    ).id as string;

  /** A completed, scored session of an earlier plan day, as the complete route stores it. */
  async function completed(p: Person, enrollment: string, planId: string, offset: number, planDay: number) {
    const { rows } = await t.db.query<{ id: string }>(
      `insert into plan_sessions (organization_id, enrollment_id, patient_id, treatment_plan_id, plan_version, plan_day, scheduled_on, item_index,
         exercise_id, status, starts, started_at, completed_at, rep_count, form_score, rom, duration_s, algorithm_version, software_version, udi_di,
         pain, patient_note, acted_by_principal_id)
       values ($1, $2, $3, $4, 1, $5, $6::date, 0, $7, 'completed', 1, $6::date + time '10:00', $6::date + time '10:05', 12, 87,
               '{"left_knee": {"min_deg": 95, "max_deg": 170, "range_deg": 75, "valid_frames": 300}}', 61.5, 'pose-score/1', '0.1.0',
               '(01)00000000000000', 3, $8, $9)
       returning id`,
      [org.id, enrollment, p.id, planId, planDay, day(offset), squat, SELF_NOTE, p.userId],
    );
    return rows[0]!.id;
  }

  /**
   * The person's telerehab: enrolled in the library plan two days ago (day 1 completed and scored, today's item
   * skipped with a reason), and in a plan written for it (a note about its knee) that it paused with a reason;
   * that plan was promoted into the library.
   */
  async function seed(person: Person): Promise<Seeded> {
    const libraryEnrollment = await enroll(library, person.id, day(-2));
    const done = await completed(person, libraryEnrollment, library, -2, 1);
    const skipped = dataOf(
      await as(person.token, 'POST', `/v1/treatment-plans/enrollments/${libraryEnrollment}/skip`, { item_index: 0, reason: SKIP_REASON }),
    ).id as string;

    const patientPlan = dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${library}/clone`, { patient_id: person.id }), 201)
      .id as string;
    dataOf(await as(dr.token, 'PATCH', `/v1/treatment-plans/${patientPlan}`, { description: PLAN_NOTE }));
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${patientPlan}/publish`));
    const patientEnrollment = await enroll(patientPlan, person.id, day(0));
    dataOf(await as(person.token, 'POST', `/v1/treatment-plans/enrollments/${patientEnrollment}/pause`, { reason: PAUSE_REASON }));
    const promoted = dataOf(
      await as(admin.token, 'POST', `/v1/treatment-plans/${patientPlan}/promote`, { name: 'Knee, after surgery' }),
      201,
    ).id as string;
    return { person, libraryEnrollment, patientPlan, patientEnrollment, promoted, sessions: [done, skipped] };
  }

  /** What must be true once the person's part of the clinic is erased. */
  async function assertErased(s: Seeded) {
    const enrollments = [s.libraryEnrollment, s.patientEnrollment];
    assert.equal(await count('select 1 from plan_sessions where patient_id = $1', [s.person.id]), 0, 'plan sessions go');
    assert.equal(await count('select 1 from treatment_enrollments where patient_id = $1', [s.person.id]), 0, 'enrollments go');
    assert.equal(await count('select 1 from treatment_enrollment_pauses where enrollment_id = any($1::uuid[])', [enrollments]), 0);
    assert.equal(await count('select 1 from treatment_plans where patient_id = $1', [s.person.id]), 0, "the person's plan goes");
    assert.equal(
      await count('select 1 from treatment_plan_versions where treatment_plan_id = $1', [s.patientPlan]),
      0,
      'with its versions',
    );
    // The library keeps its plans; the promoted copy loses only the link to its source.
    const promoted = dataOf(await as(admin.token, 'GET', `/v1/treatment-plans/${s.promoted}`));
    assert.deepEqual([promoted.kind, promoted.source_plan_id, promoted.source_kind], ['library', null, 'promote']);
    assert.equal(dataOf(await as(admin.token, 'GET', `/v1/treatment-plans/${library}`)).version, 1);
    assert.equal((await as(admin.token, 'GET', `/v1/treatment-plans/${s.patientPlan}`)).statusCode, 404);
    // Live enrollments are announced as cancelled, so that receivers stop following them.
    const events = await t.db.query<{ data: any }>(
      "select data from domain_events where type = 'enrollment.cancelled' and data->>'id' = any($1::text[]) order by data->>'id'",
      [enrollments],
    );
    assert.deepEqual(
      events.rows.map((e) => e.data.id),
      [...enrollments].sort(),
    );
    // The bystander's programme is untouched.
    assert.equal(dataOf(await as(admin.token, 'GET', `/v1/treatment-plans/enrollments/${bystanderEnrollment}`)).status, 'active');
    assert.equal(await count('select 1 from plan_sessions where patient_id = $1', [bystander.id]), 1);
  }

  /** The trail outlives erasure: it names the person's programme by ids only. */
  async function assertTrailHasNoText() {
    const trail = JSON.stringify(
      (await t.db.query('select action, data from audit_logs where organization_id = $1 order by created_at, id', [org.id])).rows,
    );
    for (const text of [PLAN_NOTE, SKIP_REASON, PAUSE_REASON, SELF_NOTE]) assert.ok(!trail.includes(text), text);
  }

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg({ name: 'Telerehab GDPR clinic' });
    admin = await t.addMember(org.id, uniqueEmail('gt-admin'), 'admin');
    dr = await t.addMember(org.id, uniqueEmail('gt-dr'), 'specialist');
    today = (await t.db.query<{ d: string }>(`select to_char((now() at time zone 'UTC')::date, 'YYYY-MM-DD') as d`)).rows[0]!.d;
    squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    const items = [{ exercise_id: squat, sets: [{ side: 'left', reps: 10 }] }];
    library = dataOf(
      await as(dr.token, 'POST', '/v1/treatment-plans', {
        name: 'Knee programme',
        phases: [{ name: 'Weeks 1-2', days: Array.from({ length: 14 }, () => ({ items })) }],
        self_report: { pain: true, effort: false },
      }),
      201,
    ).id;
    dataOf(await as(dr.token, 'POST', `/v1/treatment-plans/${library}/publish`));
    bystander = await newPatient('gt-bystander');
    bystanderEnrollment = await enroll(library, bystander.id, day(-2));
    await completed(bystander, bystanderEnrollment, library, -2, 1);
  });
  after(() => t?.close());

  it("export: the clinic's copy holds the person's plans, enrollments with pauses and sessions with results and versions; the person's own leaves out staff ids and plan drafts", async () => {
    const person = await newPatient('gt-export');
    const s = await seed(person);

    const clinic = await waitExport(admin.token, org.id, { patient_id: person.id });
    assert.deepEqual(
      clinic.treatment_plans.map((p: any) => [p.id, p.description, p.version, p.source_kind]),
      [[s.patientPlan, PLAN_NOTE, 1, 'clone']],
    );
    assert.equal(clinic.treatment_plans[0].phases[0].days.length, 14);
    const byId = (xs: any[], id: string) => xs.find((x) => x.id === id);
    const lib = byId(clinic.treatment_enrollments, s.libraryEnrollment);
    assert.deepEqual(
      [lib.plan_name, lib.plan_version, lib.status, lib.start_date, lib.time_zone, lib.pauses],
      ['Knee programme', 1, 'active', day(-2), 'UTC', []],
    );
    assert.equal(lib.plan_version_content.phases[0].days[0].items[0].exercise_id, squat);
    assert.equal(lib.enrolled_by_principal_id, dr.userId);
    const own = byId(clinic.treatment_enrollments, s.patientEnrollment);
    assert.deepEqual(
      [own.status, own.pauses.map((p: any) => [p.paused_on, p.pause_reason, p.paused_by_principal_id])],
      ['paused', [[day(0), PAUSE_REASON, person.userId]]],
    );
    assert.equal(clinic.treatment_enrollments.length, 2);
    assert.deepEqual(
      clinic.plan_sessions.map((x: any) => [x.id, x.scheduled_on, x.status, x.exercise_name]),
      [
        [s.sessions[0], day(-2), 'completed', 'Squat'],
        [s.sessions[1], day(0), 'skipped', 'Squat'],
      ],
    );
    const result = clinic.plan_sessions[0];
    assert.deepEqual(
      [
        result.rep_count,
        result.form_score,
        result.rom.left_knee.range_deg,
        result.algorithm_version,
        result.software_version,
        result.udi_di,
      ],
      [12, 87, 75, 'pose-score/1', '0.1.0', '(01)00000000000000'],
      'every result with the algorithm and software versions that produced it',
    );
    assert.deepEqual([result.pain, result.patient_note, result.acted_by_principal_id], [3, SELF_NOTE, person.userId]);
    assert.equal(clinic.plan_sessions[1].skip_reason, SKIP_REASON);
    const actions = clinic.audit_entries.filter((e: any) => e.organization_id === org.id).map((e: any) => e.action);
    for (const a of ['treatment_plan.created', 'enrollment.created', 'enrollment.paused', 'plan_session.skipped'])
      assert.ok(actions.includes(a), a);

    const mine = await waitExport(person.token, undefined, {});
    assert.deepEqual(mine.treatment_plans, [], 'no plan drafts: what the person follows is in its enrollments');
    assert.deepEqual(mine.treatment_enrollments.map((e: any) => e.id).sort(), [s.libraryEnrollment, s.patientEnrollment].sort());
    const followed = byId(mine.treatment_enrollments, s.patientEnrollment);
    assert.equal(followed.plan_version_content.description, PLAN_NOTE, 'the version the person follows');
    assert.deepEqual(followed.pauses[0].pause_reason, PAUSE_REASON);
    for (const k of ['enrolled_by_principal_id', 'cancelled_by_principal_id']) assert.ok(!(k in followed), k);
    assert.ok(!('paused_by_principal_id' in followed.pauses[0]));
    assert.deepEqual(
      mine.plan_sessions.map((x: any) => [x.id, x.rep_count, x.algorithm_version]),
      [
        [s.sessions[0], 12, 'pose-score/1'],
        [s.sessions[1], null, null],
      ],
    );
    assert.ok(!('acted_by_principal_id' in mine.plan_sessions[0]));
    assert.ok(!JSON.stringify(mine).includes(bystanderEnrollment), "another patient's programme is not in it");
    await assertTrailHasNoText();
  });

  it('clinic erasure: sessions, enrollments and the plans written for the person go; live enrollments are announced as cancelled; the library stays', async () => {
    const person = await newPatient('gt-erase');
    const s = await seed(person);
    dataOf(await t.call('POST', '/v1/gdpr/erase', { token: admin.token, org: org.id, body: { patient_id: person.id } }));
    await assertErased(s);
    const entry = (
      await t.db.query<{ data: any }>(
        "select data from audit_logs where action = 'gdpr.erased' and entity_id = $1 order by created_at desc limit 1",
        [person.userId],
      )
    ).rows[0]!;
    assert.deepEqual(
      [entry.data.plan_sessions_removed, entry.data.treatment_enrollments_removed, entry.data.treatment_plans_removed],
      [2, 2, 1],
    );
    await assertTrailHasNoText();
  });

  it('account deletion (DELETE /v1/me) erases the same', async () => {
    const person = await newPatient('gt-delete');
    const s = await seed(person);
    assert.equal((await t.call('DELETE', '/v1/me', { token: person.token, org: org.id })).statusCode, 204);
    await assertErased(s);
  });
});
