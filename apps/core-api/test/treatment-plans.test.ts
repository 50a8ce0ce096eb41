import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * Treatment plans (spec 3.5, 9.6): drafts, the versioned lifecycle shared with custom fields
 * and form templates (publish, versions, rollback), "only drafts may be updated", approval by a second
 * clinician where the organization requires it (the database refuses the version otherwise), duplicate,
 * clone (library -> patient), promote (patient -> library), soft delete, lists, and the telerehab settings.
 */

const hex = () => randomBytes(4).toString('hex');

describe('treatment plans', () => {
  let t: TestApp;
  let org: { id: string };
  let other: { id: string };
  let admin: { token: string; userId: string };
  let drA: { token: string; userId: string };
  let drB: { token: string; userId: string };
  let support: string;
  let patient: { token: string; userId: string };
  let patientId: string;
  let otherAdmin: string;
  let squat: string;
  let plank: string;
  let draftExercise: string;
  let otherExercise: string;

  const as = (token: string, method: string, url: string, body?: unknown, orgId = org.id) =>
    t.call(method, url, { token, org: orgId, ...(body !== undefined ? { body } : {}) });
  const sets = (reps = 10) => [
    { side: 'left', reps },
    { side: 'right', reps },
  ];
  const phases = (n = 2) => [
    {
      name: 'Week 1',
      days: Array.from({ length: n }, () => ({
        items: [
          { exercise_id: squat, sets: sets() },
          { exercise_id: plank, duration_seconds: 30 },
        ],
      })),
    },
  ];
  const createPlan = async (body: Record<string, unknown> = {}, token = drA.token) =>
    dataOf(await as(token, 'POST', '/v1/treatment-plans', { name: `Knee ${hex()}`, phases: phases(), ...body }), 201);
  const publish = (id: string, token = drA.token) => as(token, 'POST', `/v1/treatment-plans/${id}/publish`);
  const auditOf = async (id: string) =>
    (
      await t.db.query<{ action: string; actor_user_id: string; data: any }>(
        'select action, actor_user_id, data from audit_logs where entity_id = $1 order by created_at, id',
        [id],
      )
    ).rows;
  const eventsOf = async (id: string) =>
    (
      await t.db.query<{ type: string; data: any }>(
        `select type, data from domain_events where data->>'id' = $1 order by occurred_at, id`,
        [id],
      )
    ).rows;

  before(async () => {
    t = await startTestApp();
    org = await t.createOrg({ name: 'Rehab clinic' });
    other = await t.createOrg({ name: 'Other clinic' });
    admin = await t.addMember(org.id, uniqueEmail('tp-admin'), 'admin');
    drA = await t.addMember(org.id, uniqueEmail('tp-dr-a'), 'specialist');
    drB = await t.addMember(org.id, uniqueEmail('tp-dr-b'), 'specialist');
    support = (await t.addMember(org.id, uniqueEmail('tp-desk'), 'customer_support')).token;
    otherAdmin = (await t.addMember(other.id, uniqueEmail('tp-other'), 'admin')).token;
    patient = await t.addPatient(org.id, uniqueEmail('tp-patient'));
    patientId = (
      await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [org.id, patient.userId])
    ).rows[0]!.id;
    squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    const mk = async (kind: string, token = admin.token, orgId = org.id) =>
      dataOf(await as(token, 'POST', '/v1/exercises', { slug: `tp-${hex()}`, name: 'Exercise', kind }, orgId), 201).id as string;
    plank = await mk('duration_based');
    dataOf(await as(admin.token, 'PUT', `/v1/exercises/${plank}/status`, { status: 'published' }));
    draftExercise = await mk('reps_based');
    otherExercise = await mk('reps_based', otherAdmin, other.id);
    dataOf(await as(otherAdmin, 'PUT', `/v1/exercises/${otherExercise}/status`, { status: 'published' }, other.id));
  });
  after(() => t.close());

  it('creates a library plan as a draft with its defaults filled, audited and announced', async () => {
    const plan = await createPlan({ description: '  Six weeks after ACL repair ', self_report: { pain: true, effort: false } });
    assert.equal(plan.kind, 'library');
    assert.equal(plan.patient_id, null);
    assert.equal(plan.version, 0);
    assert.equal(plan.published, false);
    assert.equal(plan.published_at, null);
    assert.equal(plan.total_days, 2);
    assert.equal(plan.description, 'Six weeks after ACL repair');
    assert.equal(plan.draft_author_principal_id, drA.userId);
    assert.deepEqual(plan.phases[0].days[0].items[0], {
      exercise_id: squat,
      sets: sets(),
      rest_seconds: 60,
      target_rom: null,
      notes: null,
      video_language: 'en',
    });
    assert.deepEqual(plan.self_report, { pain: true, effort: false });
    assert.deepEqual(
      (await auditOf(plan.id)).map((a) => a.action),
      ['treatment_plan.created'],
    );
    assert.deepEqual(
      (await eventsOf(plan.id)).map((e) => e.type),
      ['treatment_plan.created'],
    );
    for (const token of [support, patient.token])
      assertError(await as(token, 'POST', '/v1/treatment-plans', { name: 'X', phases: phases() }), 403, 'forbidden');
  });

  it('checks the content against what it names, and names every problem', async () => {
    const bad = async (items: unknown[], extra: Record<string, unknown> = {}) =>
      assertError(
        await as(drA.token, 'POST', '/v1/treatment-plans', { name: 'Bad', phases: [{ name: 'P', days: [{ items }] }], ...extra }),
        400,
        'validation_error',
      ).fields as Record<string, string>;
    const f = await bad([
      { exercise_id: MISSING_UUID, sets: sets() },
      { exercise_id: draftExercise, sets: sets() },
      { exercise_id: squat, duration_seconds: 30 },
      { exercise_id: plank, sets: sets() },
      { exercise_id: squat, sets: sets(), target_rom: { joint: 'left_elbow', min_deg: 10, max_deg: 90 } },
      { exercise_id: squat, sets: sets(), target_rom: { joint: 'left_knee', min_deg: 100, max_deg: 90 } },
      { exercise_id: otherExercise, sets: sets() },
    ]);
    assert.ok(f['phases.0.days.0.items.0.exercise_id']);
    assert.match(f['phases.0.days.0.items.1.exercise_id']!, /draft/);
    assert.ok(f['phases.0.days.0.items.2']);
    assert.ok(f['phases.0.days.0.items.3']);
    assert.ok(f['phases.0.days.0.items.4.target_rom.joint']);
    assert.ok(f['phases.0.days.0.items.5.target_rom']);
    assert.ok(f['phases.0.days.0.items.6.exercise_id'], "another clinic's exercise is not visible");
    assert.ok((await bad([{ exercise_id: squat, sets: sets() }], { required_consents: ['treatment_specific_nothing'] })).required_consents);
    assert.ok((await bad([{ exercise_id: squat, sets: sets() }], { name: '   ' })).name);
    // The composer's rule (spec 4.12): reps a multiple of 5 from 5 to 20.
    assertError(
      await as(drA.token, 'POST', '/v1/treatment-plans', {
        name: 'X',
        phases: [{ name: 'P', days: [{ items: [{ exercise_id: squat, sets: sets(8) }] }] }],
      }),
      400,
      'validation_error',
    );
    // A patient plan names a live patient record of the organization.
    assertError(
      await as(drA.token, 'POST', '/v1/treatment-plans', { name: 'X', phases: phases(), patient_id: MISSING_UUID }),
      400,
      'validation_error',
    );
    const ok = await createPlan({ required_consents: ['treatment_specific_home_exercise'] });
    assert.deepEqual(ok.required_consents, ['treatment_specific_home_exercise']);
  });

  it('publishes versions, changes only drafts (spec 3.5) and rolls back into a new draft', async () => {
    const plan = await createPlan();
    const edited = dataOf(await as(drA.token, 'PATCH', `/v1/treatment-plans/${plan.id}`, { name: 'Knee, week one' }));
    assert.equal(edited.version, 0);
    const v1 = dataOf(await publish(plan.id));
    assert.deepEqual([v1.version, v1.published], [1, true]);
    assert.ok(v1.published_at);
    assertError(await as(drA.token, 'PATCH', `/v1/treatment-plans/${plan.id}`, { name: 'Changed' }), 409, 'plan_not_draft');
    assertError(await publish(plan.id), 409, 'already_published');
    const draft = dataOf(await as(drA.token, 'POST', `/v1/treatment-plans/${plan.id}/rollback`, { version: 1 }));
    assert.deepEqual([draft.version, draft.published], [1, false]);
    dataOf(await as(drA.token, 'PATCH', `/v1/treatment-plans/${plan.id}`, { name: 'Knee, week two', phases: phases(3) }));
    const v2 = dataOf(await publish(plan.id));
    assert.deepEqual([v2.version, v2.total_days], [2, 3]);
    const versions = await as(drA.token, 'GET', `/v1/treatment-plans/${plan.id}/versions`);
    assert.deepEqual(
      dataOf(versions).map((v: { version: number }) => v.version),
      [2, 1],
    );
    const first = dataOf(await as(drA.token, 'GET', `/v1/treatment-plans/${plan.id}/versions/1`));
    assert.equal(first.plan.name, 'Knee, week one');
    assert.equal(first.plan.phases[0].days.length, 2);
    assertError(await as(drA.token, 'POST', `/v1/treatment-plans/${plan.id}/rollback`, { version: 9 }), 404, 'not_found');
    assertError(await as(drA.token, 'GET', `/v1/treatment-plans/${plan.id}/versions/9`), 404, 'not_found');
    const events = (await eventsOf(plan.id)).map((e) => `${e.type}:${e.data.version}`);
    assert.deepEqual(events, [
      'treatment_plan.created:undefined',
      'treatment_plan.updated:0',
      'treatment_plan.published:1',
      'treatment_plan.updated:1',
      'treatment_plan.updated:1',
      'treatment_plan.published:2',
    ]);
  });

  it('keeps versions append-only in the database', async () => {
    const plan = await createPlan();
    dataOf(await publish(plan.id));
    await assert.rejects(
      t.db.query(`update treatment_plan_versions set snapshot = '{}' where treatment_plan_id = $1`, [plan.id]),
      /append-only/,
    );
    await assert.rejects(t.db.query('delete from treatment_plan_versions where treatment_plan_id = $1', [plan.id]), /append-only/);
  });

  it('needs a second clinician where the organization requires it, and the database enforces it', async () => {
    const res = await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { require_plan_approval: true });
    assert.equal(dataOf(res).require_plan_approval, true);
    try {
      const plan = await createPlan();
      assertError(await publish(plan.id), 409, 'approval_required');
      assertError(await as(drA.token, 'POST', `/v1/treatment-plans/${plan.id}/approve`), 403, 'second_clinician_required');
      assertError(await as(support, 'POST', `/v1/treatment-plans/${plan.id}/approve`), 403, 'forbidden');
      const approved = dataOf(await as(drB.token, 'POST', `/v1/treatment-plans/${plan.id}/approve`));
      assert.equal(approved.approved_by_principal_id, drB.userId);
      // A change of the content after approval drops it: the approval was of the content approved.
      const changed = dataOf(await as(drA.token, 'PATCH', `/v1/treatment-plans/${plan.id}`, { name: 'Changed after approval' }));
      assert.equal(changed.approved_by_principal_id, null);
      assertError(await publish(plan.id), 409, 'approval_required');
      dataOf(await as(drB.token, 'POST', `/v1/treatment-plans/${plan.id}/approve`));
      assert.equal(dataOf(await publish(plan.id)).version, 1);
      const row = await t.db.query<{ approved_by_principal_id: string }>(
        'select approved_by_principal_id from treatment_plan_versions where treatment_plan_id = $1',
        [plan.id],
      );
      assert.equal(row.rows[0]!.approved_by_principal_id, drB.userId);
      // The approver edits the next draft: now they are its author, and the first clinician approves.
      dataOf(await as(drB.token, 'POST', `/v1/treatment-plans/${plan.id}/rollback`, { version: 1 }));
      dataOf(await as(drB.token, 'PATCH', `/v1/treatment-plans/${plan.id}`, { name: 'Edited by B' }));
      assertError(await as(drB.token, 'POST', `/v1/treatment-plans/${plan.id}/approve`), 403, 'second_clinician_required');
      dataOf(await as(drA.token, 'POST', `/v1/treatment-plans/${plan.id}/approve`));
      assert.equal(dataOf(await publish(plan.id, drB.token)).version, 2);

      // Past the API: a version of an unapproved draft, and an author approving their own draft.
      const raw = await createPlan();
      await assert.rejects(
        t.db.query(
          `insert into treatment_plan_versions (organization_id, treatment_plan_id, version, snapshot, published_at, published_by_principal_id)
           values ($1, $2, 1, '{}', now(), $3)`,
          [org.id, raw.id, drA.userId],
        ),
        /approval_required/,
      );
      await assert.rejects(
        t.db.query('update treatment_plans set approved_by_principal_id = draft_author_principal_id, approved_at = now() where id = $1', [
          raw.id,
        ]),
        /treatment_plans_second_clinician/,
      );
    } finally {
      dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { require_plan_approval: false }));
    }
  });

  it('duplicates, clones a library plan for a patient, and promotes a patient plan into the library', async () => {
    const lib = await createPlan({ name: 'Shoulder library' });
    const dup = dataOf(await as(drA.token, 'POST', `/v1/treatment-plans/${lib.id}/duplicate`, {}), 201);
    assert.deepEqual(
      [dup.kind, dup.name, dup.source_plan_id, dup.source_version, dup.source_kind, dup.version],
      ['library', 'Shoulder library (copy)', lib.id, null, 'duplicate', 0],
    );
    assertError(await as(drA.token, 'POST', `/v1/treatment-plans/${lib.id}/clone`, { patient_id: patientId }), 409, 'plan_not_published');
    dataOf(await publish(lib.id));
    assertError(await as(drA.token, 'POST', `/v1/treatment-plans/${lib.id}/clone`, { patient_id: MISSING_UUID }), 400, 'validation_error');
    const mine = dataOf(await as(drA.token, 'POST', `/v1/treatment-plans/${lib.id}/clone`, { patient_id: patientId }), 201);
    assert.deepEqual(
      [mine.kind, mine.patient_id, mine.source_kind, mine.source_version, mine.version],
      ['patient', patientId, 'clone', 1, 0],
    );
    assert.deepEqual(mine.phases, lib.phases);
    assertError(await as(drA.token, 'POST', `/v1/treatment-plans/${mine.id}/clone`, { patient_id: patientId }), 409, 'not_a_library_plan');
    assertError(await as(admin.token, 'POST', `/v1/treatment-plans/${mine.id}/promote`, {}), 409, 'plan_not_published');
    dataOf(await publish(mine.id));
    assertError(await as(drA.token, 'POST', `/v1/treatment-plans/${mine.id}/promote`, {}), 403, 'forbidden');
    const promoted = dataOf(
      await as(admin.token, 'POST', `/v1/treatment-plans/${mine.id}/promote`, { name: 'Shoulder, as done for one patient' }),
      201,
    );
    assert.deepEqual(
      [promoted.kind, promoted.patient_id, promoted.source_kind, promoted.source_plan_id],
      ['library', null, 'promote', mine.id],
    );
    assert.equal(dataOf(await as(drA.token, 'GET', `/v1/treatment-plans/${mine.id}`)).kind, 'patient', "the patient's plan stays");
    assertError(await as(admin.token, 'POST', `/v1/treatment-plans/${lib.id}/promote`, {}), 409, 'not_a_patient_plan');
    // Another clinic sees none of it.
    assertError(await as(otherAdmin, 'GET', `/v1/treatment-plans/${lib.id}`, undefined, other.id), 404, 'not_found');
    assertError(await as(otherAdmin, 'POST', `/v1/treatment-plans/${lib.id}/duplicate`, {}, other.id), 404, 'not_found');
  });

  it("records reads of a patient's plan in the access log", async () => {
    const plan = await createPlan({ patient_id: patientId });
    dataOf(await as(drA.token, 'GET', `/v1/treatment-plans/${plan.id}`));
    const { rows } = await t.db.query<{ action: string; target_id: string }>(
      'select action, target_id from patient_access_log where $1 = any(patient_ids) and actor_user_id = $2 order by occurred_at',
      [patientId, drA.userId],
    );
    assert.ok(rows.some((r) => r.action === 'treatment_plan.read' && r.target_id === plan.id));
  });

  it('lists with filters and sorts, and refuses unknown sort fields', async () => {
    const tag = hex();
    const a = await createPlan({ name: `List ${tag} alpha`, patient_id: patientId });
    const b = await createPlan({ name: `List ${tag} beta` });
    dataOf(await publish(b.id));
    const list = async (qs: string) =>
      dataOf(await as(drA.token, 'GET', `/v1/treatment-plans?q=${tag}&${qs}`)).map((p: { id: string }) => p.id);
    assert.deepEqual(await list('sort=name'), [a.id, b.id]);
    assert.deepEqual(await list('sort=-name'), [b.id, a.id]);
    assert.deepEqual(await list('kind=patient'), [a.id]);
    assert.deepEqual(await list(`patient_id=${patientId}`), [a.id]);
    assert.deepEqual(await list('published=true'), [b.id]);
    assertError(await as(drA.token, 'GET', '/v1/treatment-plans?sort=version'), 422, 'validation_failed');
    assertError(await as(drA.token, 'GET', '/v1/treatment-plans?created_at_after=yesterday'), 422, 'validation_failed');
    // 36 characters of hex digits and hyphens that are not a uuid (they passed a looser check and reached the
    // ::uuid cast: 500): refused like any other non-uuid.
    for (const bad of ['-'.repeat(36), 'a'.repeat(36), 'nope']) {
      const err = assertError(await as(drA.token, 'GET', `/v1/treatment-plans?patient_id=${bad}`), 422, 'validation_failed');
      assert.equal(err.fields.patient_id, 'must be a uuid');
    }
    assertError(await as(support, 'GET', '/v1/treatment-plans'), 403, 'forbidden');
  });

  it('deletes softly with treatment_plans.delete', async () => {
    const plan = await createPlan();
    assertError(await as(drA.token, 'DELETE', `/v1/treatment-plans/${plan.id}`), 403, 'forbidden');
    assert.equal((await as(admin.token, 'DELETE', `/v1/treatment-plans/${plan.id}`)).statusCode, 204);
    assertError(await as(drA.token, 'GET', `/v1/treatment-plans/${plan.id}`), 404, 'not_found');
    assert.deepEqual(
      (await eventsOf(plan.id)).map((e) => e.type),
      ['treatment_plan.created', 'treatment_plan.deleted'],
    );
  });

  it('keeps an exercise a plan uses from being deleted (409 exercise_in_use)', async () => {
    const ex = dataOf(
      await as(admin.token, 'POST', '/v1/exercises', { slug: `tp-used-${hex()}`, name: 'Used', kind: 'duration_based' }),
      201,
    );
    dataOf(await as(admin.token, 'PUT', `/v1/exercises/${ex.id}/status`, { status: 'published' }));
    await createPlan({ phases: [{ name: 'P', days: [{ items: [{ exercise_id: ex.id, duration_seconds: 60 }] }] }] });
    assertError(await as(admin.token, 'DELETE', `/v1/exercises/${ex.id}`), 409, 'exercise_in_use');
  });

  it('enables telerehab only with the intended-use statement accepted; organizations.update changes the settings', async () => {
    const before = dataOf(await as(patient.token, 'GET', '/v1/treatment-plans/settings'));
    assert.equal(before.enabled, false);
    assert.match(before.intended_use.text, /do not diagnose/);
    assert.equal(before.intended_use.accepted_at, null);
    assertError(await as(drA.token, 'PUT', '/v1/treatment-plans/settings', { enabled: true, accept_intended_use: true }), 403, 'forbidden');
    const err = assertError(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: true }), 400, 'validation_error');
    assert.ok(err.fields.accept_intended_use);
    const on = dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: true, accept_intended_use: true }));
    assert.equal(on.enabled, true);
    assert.equal(on.intended_use.accepted_version, on.intended_use.version);
    assert.equal(on.intended_use.accepted_by_principal_id, admin.userId);
    // Off and on again: the statement stays accepted.
    dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: false }));
    assert.equal(dataOf(await as(admin.token, 'PUT', '/v1/treatment-plans/settings', { enabled: true })).enabled, true);
    assert.ok((await auditOf(org.id)).some((a) => a.action === 'telerehab_settings.updated'));
    await assert.rejects(
      t.db.query('insert into telerehab_settings (organization_id, enabled) values ($1, true)', [other.id]),
      /check/,
      'enabled without an accepted statement is refused by the database',
    );
  });
});
