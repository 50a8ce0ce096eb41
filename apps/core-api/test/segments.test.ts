import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorker, type Worker } from '../src/worker/worker.ts';
import { assertError, dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';
import { type MessagingClinic, type Patient, setUpMessagingClinic } from './support/messaging-clinic.ts';

/*
 * Segments through HTTP: criteria checked against the field catalog and compiled to
 * parameterised SQL (a test tries to splice SQL through values, field names and custom keys), evaluation
 * at once for a small clinic and as a job with progress for a larger one, the members list, a patient's own
 * membership, and the caller's row policies deciding what an evaluation can find.
 */
async function waitFor<T>(probe: () => Promise<T | null | undefined | false>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('segments: criteria, evaluation and members', () => {
  let t: TestApp;
  let worker: Worker;
  let c: MessagingClinic;
  const people: Record<string, Patient> = {};
  let scoreField: string;

  const create = (criteria: unknown, name = `S ${Math.random().toString(36).slice(2, 8)}`) =>
    c.call('POST', '/v1/segments', c.admin, { name, criteria });
  const evaluate = async (criteria: unknown) => {
    const seg = dataOf(await create(criteria), 201);
    const ev = await c.call('POST', `/v1/segments/${seg.id}/evaluate`, c.admin);
    return { seg, ev };
  };
  const membersOf = async (id: string, token = c.admin) =>
    (dataOf(await c.call('GET', `/v1/segments/${id}/members?limit=500`, token)) as { patient_id: string }[])
      .map((m) => m.patient_id)
      .sort();
  const ids = (...names: string[]) => names.map((n) => people[n]!.id).sort();

  before(async () => {
    t = await startTestApp({ env: { SEGMENTS_SYNC_LIMIT: '8', SEGMENTS_CHUNK: '3', WORKER_DISPATCH_INTERVAL_MS: '50' } });
    c = await setUpMessagingClinic(t, 'seg');
    scoreField = dataOf(
      await c.call('POST', '/v1/custom-fields', c.admin, { entity_type: 'patient', key: 'score', label: 'Score', field_type: 'number' }),
      201,
    ).id;
    for (const name of ['Ana', 'Bob', 'Cai', 'Dan', 'Eva']) people[name] = await c.patient(name);
    const set = (name: string, sql: string, params: unknown[]) =>
      t.db.query(`update patients set ${sql} where id = $1`, [people[name]!.id, ...params]);
    await set('Ana', `date_of_birth = '1950-05-01', custom_field_values = jsonb_build_object($2::text, 9)`, [scoreField]);
    await set('Bob', `date_of_birth = '1990-05-01', custom_field_values = jsonb_build_object($2::text, 3)`, [scoreField]);
    await set('Cai', `date_of_birth = '1960-01-01', custom_field_values = jsonb_build_object($2::text, 'not a number')`, [scoreField]);
    await set('Dan', `city = 'Iasi%'`, []);
    // Appointments: Ana and Dan visited (done) in the last 90 days; Bob has one to come.
    for (const [name, hours] of [
      ['Ana', -100],
      ['Dan', -200],
      ['Bob', 48],
    ] as const) {
      await t.db.query(
        `insert into appointments (organization_id, service_id, specialist_id, patient_id, starts_at, ends_at, mode, status, source)
         values ($1, $2, $3, $4, now() + make_interval(hours => $5), now() + make_interval(hours => $5) + interval '30 minutes', 'in_person', $6, 'staff')`,
        [c.org.id, c.service, c.specialist, people[name]!.id, hours, hours < 0 ? 'done' : 'scheduled'],
      );
    }
    await t.db.query(
      `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id) values ($1, $2, 'marketing_email', 1, 'api', $2)`,
      [c.org.id, people.Eva!.userId],
    );
    await t.db.query(`insert into patient_tags (organization_id, patient_id, tag) values ($1, $2, 'vip')`, [c.org.id, people.Bob!.id]);
    worker = await startWorker(t.rt);
  });
  after(async () => {
    await worker?.close();
    await t?.close();
  });

  it('the field catalog names patient fields, the published custom fields by key with their type, history, consents, tags', async () => {
    const fields = dataOf(await c.call('GET', '/v1/segment-fields', c.admin)) as { field: string; type: string; ops: string[] }[];
    const byName = new Map(fields.map((f) => [f.field, f]));
    assert.equal(byName.get('custom.score')?.type, 'number');
    assert.ok(byName.get('custom.score')!.ops.includes('gte'));
    assert.equal(byName.get('patient.date_of_birth')?.type, 'date');
    for (const f of ['appointments', 'consent', 'tag']) assert.ok(byName.has(f), f);
    const specialist = (await t.addMember(c.org.id, uniqueEmail('sp'), 'specialist')).token;
    assertError(await c.call('GET', '/v1/segment-fields', specialist), 403, 'forbidden');
  });

  it('criteria are checked against the catalog: unknown fields and keys, wrong operators and values, too deep', async () => {
    const err = assertError(
      await create({
        and: [
          { field: 'patient.ssn', op: 'eq', value: 'x' },
          { field: 'custom.nope', op: 'eq', value: 1 },
          { field: 'custom.score', op: 'contains', value: 'x' },
          { field: 'custom.score', op: 'gt', value: 'ten' },
          { field: 'appointments', op: 'exists', where: { statuses: ['done', 'lost'] } },
          { not: { not: { not: { not: { not: { not: { field: 'tag', op: 'has', value: 'a' } } } } } } },
        ],
      }),
      400,
      'validation_error',
    );
    assert.match(err.fields['criteria.and.0.field'], /unknown field/);
    assert.match(err.fields['criteria.and.1.field'], /no published custom field/);
    assert.match(err.fields['criteria.and.2.op'], /allowed: eq, ne, gt/);
    assert.equal(err.fields['criteria.and.3.value'], 'a number');
    assert.ok(err.fields['criteria.and.4.where.statuses']);
    assert.match(Object.entries(err.fields).find(([k]) => k.startsWith('criteria.and.5'))![1] as string, /deeper than/);
  });

  it('dates that do not exist, or that PostgreSQL has no year for, are refused (Date.parse let them through to a 500)', async () => {
    const dates = assertError(
      await create({
        and: [
          { field: 'patient.date_of_birth', op: 'before', value: '2024-02-30' },
          { field: 'patient.date_of_birth', op: 'between', value: ['0000-01-01', '2000-01-01'] },
          { field: 'patient.created_at', op: 'after', value: '2023-04-31' },
        ],
      }),
      400,
      'validation_error',
    );
    assert.equal(dates.fields['criteria.and.0.value'], 'a date YYYY-MM-DD');
    assert.equal(dates.fields['criteria.and.1.value'], '[from, to], two dates YYYY-MM-DD');
    assert.equal(dates.fields['criteria.and.2.value'], 'a date YYYY-MM-DD');
    dataOf(await create({ field: 'patient.date_of_birth', op: 'before', value: '2024-02-29' }), 201);
  });

  it('no text of a request reaches the SQL: values are bound, field names and keys must be in the catalog', async () => {
    const before = (await t.db.query<{ n: number }>('select count(*)::int as n from patients')).rows[0]!.n;
    const hostile = "x'); delete from patients; --";
    const { ev, seg } = await evaluate({
      or: [
        { field: 'patient.first_name', op: 'eq', value: hostile },
        { field: 'patient.city', op: 'contains', value: "%' or 1=1 --" },
        { field: 'tag', op: 'has', value: 'vip' },
      ],
    });
    assert.equal(dataOf(ev).status, 'done');
    assert.deepEqual(await membersOf(seg.id), ids('Bob'));
    assert.equal((await t.db.query<{ n: number }>('select count(*)::int as n from patients')).rows[0]!.n, before);
    assertError(await create({ field: "patient.first_name = '' or true --", op: 'eq', value: 'x' }), 400, 'validation_error');
    assertError(await create({ field: "custom.score') or (1=1", op: 'gt', value: 1 }), 400, 'validation_error');
    assertError(await create({ field: 'patient.first_name', op: "eq' or '1'='1", value: 'x' }), 400, 'validation_error');
    // A wildcard in the caller's text matches itself only.
    const lit = await evaluate({ field: 'patient.city', op: 'contains', value: 'i%' });
    assert.deepEqual(await membersOf(lit.seg.id), ids('Dan'));
  });

  it('evaluates and, or, not over patient fields, typed custom values, appointment history, consents and tags', async () => {
    const cases: [unknown, string[]][] = [
      [{ field: 'custom.score', op: 'gte', value: 5 }, ['Ana']],
      [{ field: 'custom.score', op: 'is_set' }, ['Ana', 'Bob']],
      [{ field: 'patient.age', op: 'gt', value: 60 }, ['Ana', 'Cai']],
      [
        { field: 'appointments', op: 'exists', where: { service_ids: [c.service], statuses: ['done'], within_last_days: 90 } },
        ['Ana', 'Dan'],
      ],
      [
        {
          and: [
            { field: 'appointments', op: 'none', where: { statuses: ['done'], within_last_days: 90 } },
            { field: 'tag', op: 'has_not', value: 'vip' },
          ],
        },
        ['Cai', 'Eva'],
      ],
      [{ field: 'appointments', op: 'count_gte', value: 1, where: { within_next_days: 7 } }, ['Bob']],
      [{ field: 'consent', op: 'active', value: 'marketing_email' }, ['Eva']],
      [
        {
          or: [{ field: 'patient.date_of_birth', op: 'before', value: '1955-01-01' }, { not: { field: 'patient.city', op: 'is_not_set' } }],
        },
        ['Ana', 'Dan'],
      ],
    ];
    for (const [criteria, expected] of cases) {
      const { seg, ev } = await evaluate(criteria);
      const e = dataOf(ev);
      assert.equal(e.status, 'done');
      assert.equal(e.member_count, expected.length, JSON.stringify(criteria));
      assert.deepEqual(await membersOf(seg.id), ids(...expected), JSON.stringify(criteria));
      const read = dataOf(await c.call('GET', `/v1/segments/${seg.id}`, c.admin));
      assert.ok(read.evaluated_at);
      assert.equal(read.member_count, expected.length);
    }
  });

  it('members are paginated; a patient sees only its own membership; the front desk reads all, outsiders nothing', async () => {
    const { seg } = await evaluate({ field: 'patient.last_name', op: 'eq', value: 'Example' });
    const page = await c.call('GET', `/v1/segments/${seg.id}/members?limit=2&page=2&sort=patient_id`, c.admin);
    assert.equal(page.json().pagination.total, 5);
    assert.deepEqual(
      dataOf(page).map((m: { patient_id: string }) => m.patient_id),
      ids('Ana', 'Bob', 'Cai', 'Dan', 'Eva').slice(2, 4),
    );
    const own = dataOf(await c.call('GET', `/v1/segments/${seg.id}/members`, people.Ana!.token));
    assert.deepEqual(
      own.map((m: { patient_id: string }) => m.patient_id),
      [people.Ana!.id],
    );
    const vip = await evaluate({ field: 'tag', op: 'has', value: 'vip' });
    assert.deepEqual(dataOf(await c.call('GET', `/v1/segments/${vip.seg.id}/members`, people.Ana!.token)), []);
    assertError(await c.call('GET', `/v1/segments/${vip.seg.id}`, people.Ana!.token), 403, 'forbidden');
    assert.equal(dataOf(await c.call('GET', `/v1/segments/${seg.id}/members`, c.support)).length, 5);
    // An administrator of another clinic naming this one is no member of it (a stranger's first sign-in
    // would instead become this clinic's patient).
    const other = await t.createOrg();
    const outsider = await t.addMember(other.id, uniqueEmail('outsider'), 'admin');
    assertError(await t.call('GET', `/v1/segments/${seg.id}/members`, { token: outsider.token, org: c.org.id }), 403, 'forbidden');
    assertError(await t.call('GET', `/v1/segments/${seg.id}/members`, { token: outsider.token, org: other.id }), 404, 'not_found');
  });

  it("an evaluation runs under the caller's row policies: without patients.view_org it finds nobody", async () => {
    const { rows } = await t.db.query<{ id: string }>(
      `insert into roles (organization_id, code, name) values ($1, 'segmenter', 'Segmenter') returning id`,
      [c.org.id],
    );
    await t.db.query(`insert into role_permissions (role_id, permission_code, organization_id) values ($1, 'segments.manage', $2)`, [
      rows[0]!.id,
      c.org.id,
    ]);
    const member = await t.addMember(c.org.id, uniqueEmail('segmenter'), 'segmenter');
    const seg = dataOf(
      await c.call('POST', '/v1/segments', member.token, { name: 'Blind', criteria: { field: 'patient.last_name', op: 'is_set' } }),
      201,
    );
    const e = dataOf(await c.call('POST', `/v1/segments/${seg.id}/evaluate`, member.token));
    assert.deepEqual([e.status, e.member_count], ['done', 0]);
  });

  it('treatment plan enrollments: in any plan or the given ones, in the given states', async () => {
    const squat = (await t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
    const items = [{ exercise_id: squat, sets: [{ side: 'left', reps: 10 }] }];
    const plan = dataOf(
      await c.call('POST', '/v1/treatment-plans', c.admin, { name: 'Knee', phases: [{ name: 'Week 1', days: [{ items }, { items }] }] }),
      201,
    ).id as string;
    dataOf(await c.call('POST', `/v1/treatment-plans/${plan}/publish`, c.admin));
    const today = new Date().toISOString().slice(0, 10);
    const enroll = async (name: string) =>
      dataOf(
        await c.call('POST', `/v1/treatment-plans/${plan}/enrollments`, c.admin, {
          patient_id: people[name]!.id,
          time_zone: 'UTC',
          start_date: today,
        }),
        201,
      ).id as string;
    await enroll('Cai');
    const paused = await enroll('Eva');
    dataOf(await c.call('POST', `/v1/treatment-plans/enrollments/${paused}/pause`, c.admin, { reason: 'travel' }));
    const cases: [unknown, string[]][] = [
      [{ field: 'enrollments', op: 'exists' }, ['Cai', 'Eva']],
      [{ field: 'enrollments', op: 'exists', where: { statuses: ['active'] } }, ['Cai']],
      [{ field: 'enrollments', op: 'none', where: { treatment_plan_ids: [plan] } }, ['Ana', 'Bob', 'Dan']],
      [
        {
          and: [
            { field: 'enrollments', op: 'exists', where: { statuses: ['paused'] } },
            { field: 'consent', op: 'active', value: 'marketing_email' },
          ],
        },
        ['Eva'],
      ],
    ];
    for (const [criteria, expected] of cases) {
      const { seg, ev } = await evaluate(criteria);
      assert.equal(dataOf(ev).status, 'done');
      assert.deepEqual(await membersOf(seg.id), ids(...expected), JSON.stringify(criteria));
    }
    const err = assertError(
      await create({
        and: [
          { field: 'enrollments', op: 'count_gte', value: 1 },
          { field: 'enrollments', op: 'exists', where: { statuses: ['done'], treatment_plan_ids: ["x' or true"] } },
        ],
      }),
      400,
      'validation_error',
    );
    assert.match(err.fields['criteria.and.0.op'], /allowed: exists, none/);
    assert.match(err.fields['criteria.and.1.where.statuses'], /active, paused, cancelled/);
    assert.equal(err.fields['criteria.and.1.where.treatment_plan_ids'], 'a list of ids');
    const fields = dataOf(await c.call('GET', '/v1/segment-fields', c.admin)) as { field: string; ops: string[] }[];
    assert.deepEqual(fields.find((f) => f.field === 'enrollments')?.ops, ['exists', 'none']);
  });

  it('a larger clinic is evaluated by a background job, in steps, with progress; members switch when it is complete', async () => {
    for (const name of ['Fay', 'Gus', 'Hal', 'Ivy']) people[name] = await c.patient(name);
    await t.addPatient(c.org.id, uniqueEmail('nameless'));
    const seg = dataOf(await create({ field: 'patient.last_name', op: 'eq', value: 'Example' }, 'Everyone'), 201);
    const first = await c.call('POST', `/v1/segments/${seg.id}/evaluate`, c.admin);
    assert.equal(first.statusCode, 202, first.body);
    const started = dataOf(first, 202);
    assert.equal(started.status, 'running');
    assert.equal(started.total, 10);
    const done = await waitFor(async () => {
      const s = dataOf(await c.call('GET', `/v1/segments/${seg.id}`, c.admin));
      return s.last_evaluation?.status === 'done' ? s : null;
    });
    assert.equal(done.last_evaluation.processed, 10);
    assert.equal(done.member_count, 9, 'the patient without a last name is not one');
    assert.equal((await membersOf(seg.id)).length, 9);
    const events = await t.db.query(
      `select 1 from domain_events where organization_id = $1 and type = 'segment.evaluated' and data ->> 'id' = $2`,
      [c.org.id, seg.id],
    );
    assert.equal(events.rows.length, 1);
  });
});
