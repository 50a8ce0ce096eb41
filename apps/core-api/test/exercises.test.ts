import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, MISSING_UUID, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/*
 * The exercise library (spec 2.12, 3.5, 9.6): update and delete, the asset version bump,
 * the status moves (409 invalid_transition), the platform library that every organization reads, and the
 * propagation of a platform exercise into organizations as their own copies, audited with action_context
 * template_propagate (spec 6.2).
 */

const hex = () => randomBytes(4).toString('hex');
const MOVEMENT = {
  tracked_joints: ['left_knee', 'right_knee'],
  primary_joints: ['left_knee', 'right_knee'],
  rest_angle: 170,
  target_angle: 100,
  tempo_s: { min: 1, max: 4 },
};

describe('exercise library', () => {
  let t: TestApp;
  let su: string;
  let org: { id: string };
  let other: { id: string };
  let admin: string;
  let specialist: string;
  let otherAdmin: string;
  let patient: { token: string; userId: string };

  const create = async (body: Record<string, unknown>, token = admin, orgId: string | undefined = org.id) =>
    t.call('POST', '/v1/exercises', {
      token,
      ...(orgId ? { org: orgId } : {}),
      body: { slug: `ex-${hex()}`, name: 'Exercise', kind: 'reps_based', ...body },
    });
  const exercise = async (body: Record<string, unknown> = {}, token = admin, orgId: string | undefined = org.id) =>
    dataOf(await create(body, token, orgId), 201);
  const auditOf = async (id: string) =>
    (
      await t.db.query<{ action: string; organization_id: string | null; action_context: string | null; data: any }>(
        'select action, organization_id, action_context, data from audit_logs where entity_id = $1 order by created_at, id',
        [id],
      )
    ).rows;

  before(async () => {
    t = await startTestApp();
    su = await t.superadmin();
    org = await t.createOrg({ name: 'Library clinic' });
    other = await t.createOrg({ name: 'Other clinic' });
    admin = (await t.addMember(org.id, uniqueEmail('lib-admin'), 'admin')).token;
    specialist = (await t.addMember(org.id, uniqueEmail('lib-spec'), 'specialist')).token;
    otherAdmin = (await t.addMember(other.id, uniqueEmail('lib-other'), 'admin')).token;
    patient = await t.addPatient(org.id, uniqueEmail('lib-patient'));
  });
  after(() => t.close());

  it('renames an exercise and sets its movement definition; no-ops record nothing', async () => {
    const ex = await exercise();
    assert.equal(ex.movement, null);
    const res = await t.call('PATCH', `/v1/exercises/${ex.id}`, {
      token: admin,
      org: org.id,
      body: { name: '  Knee bend ', movement: MOVEMENT },
    });
    const updated = dataOf(res);
    assert.equal(updated.name, 'Knee bend');
    assert.deepEqual(updated.movement, MOVEMENT);
    const again = dataOf(await t.call('PATCH', `/v1/exercises/${ex.id}`, { token: admin, org: org.id, body: { name: 'Knee bend' } }));
    assert.equal(again.updated_at, updated.updated_at);
    const trail = (await auditOf(ex.id)).map((a) => a.action);
    assert.deepEqual(trail, ['exercise.created', 'exercise.updated']);
  });

  it('refuses bad updates: blank names, movements of duration-based exercises, empty bodies, the slug', async () => {
    const ex = await exercise();
    assertError(
      await t.call('PATCH', `/v1/exercises/${ex.id}`, { token: admin, org: org.id, body: { name: '   ' } }),
      400,
      'validation_error',
    );
    assertError(await t.call('PATCH', `/v1/exercises/${ex.id}`, { token: admin, org: org.id, body: {} }), 400, 'validation_error');
    assertError(
      await t.call('PATCH', `/v1/exercises/${ex.id}`, { token: admin, org: org.id, body: { slug: 'x' } }),
      400,
      'validation_error',
    );
    const timed = await exercise({ kind: 'duration_based' });
    const err = assertError(
      await t.call('PATCH', `/v1/exercises/${timed.id}`, { token: admin, org: org.id, body: { movement: MOVEMENT } }),
      400,
      'validation_error',
    );
    assert.ok(err.fields.movement);
  });

  it('only exercises.manage_org of the exercise organization changes it; platform exercises only superadmins', async () => {
    const ex = await exercise();
    assertError(await t.call('PATCH', `/v1/exercises/${ex.id}`, { token: specialist, org: org.id, body: { name: 'X' } }), 403, 'forbidden');
    assertError(
      await t.call('PATCH', `/v1/exercises/${ex.id}`, { token: otherAdmin, org: other.id, body: { name: 'X' } }),
      404,
      'not_found',
    );
    assertError(await t.call('DELETE', `/v1/exercises/${ex.id}`, { token: otherAdmin, org: other.id }), 404, 'not_found');
    assertError(await t.call('POST', `/v1/exercises/${ex.id}/asset-version`, { token: otherAdmin, org: other.id }), 404, 'not_found');
    const squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    assertError(await t.call('PATCH', `/v1/exercises/${squat}`, { token: admin, org: org.id, body: { name: 'Mine' } }), 403, 'forbidden');
    assertError(await t.call('POST', `/v1/exercises/${squat}/asset-version`, { token: admin, org: org.id }), 403, 'forbidden');
    assertError(await t.call('DELETE', `/v1/exercises/${squat}`, { token: admin, org: org.id }), 403, 'forbidden');
    assertError(
      await t.call('PATCH', `/v1/exercises/${MISSING_UUID}`, { token: admin, org: org.id, body: { name: 'X' } }),
      404,
      'not_found',
    );
  });

  it('bumps the asset version (spec 9.6), recorded with both numbers', async () => {
    const ex = await exercise();
    assert.equal(ex.asset_version, 1);
    const bumped = dataOf(await t.call('POST', `/v1/exercises/${ex.id}/asset-version`, { token: admin, org: org.id }));
    assert.equal(bumped.asset_version, 2);
    assert.equal(dataOf(await t.call('POST', `/v1/exercises/${ex.id}/asset-version`, { token: admin, org: org.id })).asset_version, 3);
    const entry = (await auditOf(ex.id)).find((a) => a.action === 'exercise.asset_version_bumped')!;
    assert.deepEqual(entry.data.asset_version, { from: 1, to: 2 });
  });

  it('moves between statuses, and refuses the others with 409 invalid_transition', async () => {
    const ex = await exercise();
    const put = (status: string) => t.call('PUT', `/v1/exercises/${ex.id}/status`, { token: admin, org: org.id, body: { status } });
    assert.equal(dataOf(await put('published')).status, 'published');
    assertError(await put('draft'), 409, 'invalid_transition');
    assert.equal(dataOf(await put('archived')).status, 'archived');
    assertError(await put('draft'), 409, 'invalid_transition');
    assert.equal(dataOf(await put('published')).status, 'published');
    assert.equal(dataOf(await put('published')).status, 'published', 'the same status is no move');
  });

  it('deletes an unused exercise, and refuses one that exercise sessions use (409 exercise_in_use)', async () => {
    const unused = await exercise({ movement: MOVEMENT });
    assert.equal((await t.call('DELETE', `/v1/exercises/${unused.id}`, { token: admin, org: org.id })).statusCode, 204);
    assertError(await t.call('GET', `/v1/exercises/${unused.id}`, { token: admin, org: org.id }), 404, 'not_found');
    assert.ok((await auditOf(unused.id)).some((a) => a.action === 'exercise.deleted'));

    const used = await exercise({ movement: MOVEMENT });
    await t.db.query(
      `insert into exercise_sessions (organization_id, patient_user_id, exercise_id, movement) values ($1, $2, $3, $4::jsonb)`,
      [org.id, patient.userId, used.id, JSON.stringify(MOVEMENT)],
    );
    assertError(await t.call('DELETE', `/v1/exercises/${used.id}`, { token: admin, org: org.id }), 409, 'exercise_in_use');
    assert.equal(dataOf(await t.call('GET', `/v1/exercises/${used.id}`, { token: admin, org: org.id })).id, used.id);
  });

  it('keeps a platform library: superadmins add to it, every organization reads it once published', async () => {
    assertError(await create({ platform: true }, admin), 403, 'forbidden');
    const p = await exercise({ platform: true, movement: MOVEMENT }, su, undefined);
    assert.equal(p.organization_id, null);
    assertError(await t.call('GET', `/v1/exercises/${p.id}`, { token: patient.token, org: org.id }), 404, 'not_found');
    dataOf(await t.call('PUT', `/v1/exercises/${p.id}/status`, { token: su, body: { status: 'published' } }));
    for (const [token, orgId] of [
      [patient.token, org.id],
      [otherAdmin, other.id],
    ] as const) {
      assert.equal(dataOf(await t.call('GET', `/v1/exercises/${p.id}`, { token, org: orgId })).id, p.id);
      const list = dataOf(await t.call('GET', '/v1/exercises?limit=500', { token, org: orgId }));
      assert.ok(list.some((e: { id: string }) => e.id === p.id));
    }
  });

  it('propagates a platform exercise into organizations as their own copies, audited as template_propagate', async () => {
    const template = await exercise({ platform: true, movement: MOVEMENT, name: 'Wall sit' }, su, undefined);
    const propagate = (body: unknown, token = su) => t.call('POST', `/v1/exercises/${template.id}/propagate`, { token, body });
    assertError(await propagate({ organization_ids: [org.id] }), 409, 'not_published');
    dataOf(await t.call('PUT', `/v1/exercises/${template.id}/status`, { token: su, body: { status: 'published' } }));
    assertError(await propagate({ organization_ids: [org.id] }, admin), 403, 'forbidden');
    assertError(await propagate({ organization_ids: [MISSING_UUID] }), 400, 'validation_error');

    const first = dataOf(await propagate({ organization_ids: [org.id, other.id] }));
    assert.equal(first.created.length, 2);
    assert.deepEqual(first.updated, []);
    for (const c of first.created as { organization_id: string; exercise_id: string }[]) {
      const token = c.organization_id === org.id ? admin : otherAdmin;
      const copy = dataOf(await t.call('GET', `/v1/exercises/${c.exercise_id}`, { token, org: c.organization_id }));
      assert.equal(copy.organization_id, c.organization_id);
      assert.equal(copy.template_exercise_id, template.id);
      assert.equal(copy.status, 'published');
      assert.equal(copy.name, 'Wall sit');
      assert.deepEqual(copy.movement, MOVEMENT);
      const [entry] = await auditOf(c.exercise_id);
      assert.equal(entry!.action, 'exercise.propagated');
      assert.equal(entry!.organization_id, c.organization_id);
      assert.equal(entry!.action_context, 'template_propagate');
    }
    // The clinic edits its copy; propagating again refreshes it from the template, and makes no second copy.
    const mine = first.created.find((c: { organization_id: string }) => c.organization_id === org.id).exercise_id;
    dataOf(await t.call('PATCH', `/v1/exercises/${mine}`, { token: admin, org: org.id, body: { name: 'Our wall sit' } }));
    dataOf(await t.call('POST', `/v1/exercises/${template.id}/asset-version`, { token: su }));
    const second = dataOf(await propagate({ organization_ids: [org.id] }));
    assert.deepEqual(second.created, []);
    assert.deepEqual(second.updated, [{ organization_id: org.id, exercise_id: mine }]);
    const refreshed = dataOf(await t.call('GET', `/v1/exercises/${mine}`, { token: admin, org: org.id }));
    assert.equal(refreshed.name, 'Wall sit');
    assert.equal(refreshed.asset_version, 2);
    const copies = await t.db.query('select 1 from exercises where template_exercise_id = $1', [template.id]);
    assert.equal(copies.rows.length, 2);
    // An organization's own exercise is no template.
    const own = await exercise();
    assertError(await t.call('POST', `/v1/exercises/${own.id}/propagate`, { token: su, body: {} }), 409, 'not_a_platform_exercise');
  });

  it('one copy per template and organization, whatever races: the database refuses a second', async () => {
    const template = await exercise({ platform: true }, su, undefined);
    await t.db.query(
      `insert into exercises (organization_id, slug, name, kind, template_exercise_id) values ($1, $2, 'A', 'reps_based', $3)`,
      [org.id, `copy-${hex()}`, template.id],
    );
    await assert.rejects(
      t.db.query(`insert into exercises (organization_id, slug, name, kind, template_exercise_id) values ($1, $2, 'B', 'reps_based', $3)`, [
        org.id,
        `copy-${hex()}`,
        template.id,
      ]),
      /exercises_template_key/,
    );
  });
});
