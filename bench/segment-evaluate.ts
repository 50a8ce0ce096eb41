// Segment evaluation on PostgreSQL (performance target): "Evaluate a three-condition segment over 100,000
// patients with 500,000 appointments: time reported, under 2 s, and >= 0.7x the same SQL run bare."
//   ours:  POST /v1/segments/{id}/evaluate as a clinic admin (app_rls, row policies) -> 202 -> the worker
//          (pg-boss, in this process) evaluates it in steps of SEGMENTS_CHUNK patients, each a transaction
//          under the caller's scope, then switches the segment to the new members; timed from the POST until
//          the evaluation row says done (members materialised, the segment switched).
//   floor: the same criteria compiled by the module's own compiler (compileCriteria), run bare on a plain pg
//          connection as the owner (no row policies): one transaction that makes an evaluation row, inserts
//          the members (insert ... select over patients with the compiled condition) and marks it done.
// The segment: patients born before 1986, who had a done appointment of one service in the last 90 days, and
// whose marketing_email consent is in force. Seeded in SQL: BENCH_PATIENTS (100,000) patients, five
// appointments each (500,000, over the last year and the next month, 10 services), the consent for 60% of
// them (one in six of those withdrawn); 20,000 patients at another organization.
// Rounds alternate floor and ours; medians are printed with the ratio floor / ours (target >= 0.7).
// Run: npx tsx bench/segment-evaluate.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL; loopback
// only). About a minute and a half. BENCH_ROUNDS (5), BENCH_EXPLAIN=1 prints the plan of one step as the
// caller and the floor's plan; SEGMENTS_CHUNK and WORKER_DISPATCH_INTERVAL_MS are the worker's (20000, 200).
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type Queryable } from '@clinic/db';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { compileCriteria } from '../apps/core-api/src/modules/segments/criteria.ts';
import { evaluateStep } from '../apps/core-api/src/modules/segments/queries.ts';
import { compileFor } from '../apps/core-api/src/modules/segments/service.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { startWorker } from '../apps/core-api/src/worker/worker.ts';
import { NO_RATE_LIMITS, benchSuperadmin, injector } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
for (const url of [ADMIN_URL, REDIS_URL]) {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) throw new Error(`${url}: benchmarks run on loopback only`);
}

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
// Closed in reverse order at the end, or when the bench fails, before the database is dropped.
const closers: (() => Promise<unknown>)[] = [];
try {
  const db = testDb.db;
  // A plain connection as the owner, without the pool's statement limit: the bulk load's VACUUM, the floor and the polling.
  const client = new pg.Client({ connectionString: testDb.url! });
  await client.connect();
  closers.push(() => client.end());
  const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
  const config = parseConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    REDIS_URL,
    REDIS_KEY_PREFIX: `bench:${randomBytes(4).toString('hex')}:`,
    ...NO_RATE_LIMITS,
    ...Object.fromEntries(['SEGMENTS_CHUNK', 'WORKER_DISPATCH_INTERVAL_MS'].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : []))),
  });
  const rt = await createRuntime(config, { db, devIssuer: issuer });
  closers.push(() => rt.close());
  const app = await buildApp(rt);
  closers.push(() => app.close());
  await app.ready();

  const su = await benchSuperadmin(db, issuer);
  const inject = injector(app);
  const org = await inject('POST', '/v1/organizations', su, null, { name: 'Big clinic', slug: 'bench-segments' });
  const other = await inject('POST', '/v1/organizations', su, null, { name: 'Other clinic', slug: 'bench-segments-other' });
  // The caller: an administrator of the clinic (segments.manage, patients.view_org), on app_rls like every clinic admin.
  const token = await issuer.sign('bench-admin@example.com');
  const me = await inject('GET', '/v1/me', token, null);
  await db.query(
    `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
    [me.id, org.id],
  );

  await db.transaction(async (tx) => {
    // A bulk load, not a request: the statement limit of the pool does not apply.
    await tx.query('set local statement_timeout = 0');
    for (const [orgId, n, prefix] of [
      [org.id, PATIENTS, 'p'],
      [other.id, 20_000, 'o'],
    ] as const) {
      // Patients with a person each (the consent ledger is the person's), born 1940-2019, one a second.
      await tx.query(
        `with u as (
         insert into users (email, created_at)
         select format('%s-%s@patients.example', $3::text, i), now() - ($2::int - i) * interval '1 second' from generate_series(1, $2::int) i
         returning id, email, created_at
       )
       insert into patients (organization_id, user_id, first_name, last_name, date_of_birth, created_at)
       select $1, u.id, 'First' || (i % 97), 'Last' || (i % 1013), date '1940-01-01' + (i * 37) % 29200, u.created_at
       from u cross join lateral (select split_part(split_part(u.email, '@', 1), '-', 2)::int as i) n`,
        [orgId, n, prefix],
      );
      await tx.query(
        `insert into services (organization_id, name, duration_minutes, price_minor, currency, mode, is_public)
       select $1, 'Service ' || i, 30, 5000, 'EUR', 'in_person', true from generate_series(1, 10) i`,
        [orgId],
      );
      // The rows below are consistent by construction: no per-row foreign key checks (owner, bulk load only).
      await tx.query('set local session_replication_role = replica');
      // Five appointments a patient, spread over the last 365 days and the next 30: done in the past (one in
      // ten cancelled, one in twenty a no-show), scheduled ahead; ten services in turn.
      await tx.query(
        `with p as (select id, row_number() over (order by id) as n from patients where organization_id = $1),
            s as (select id, row_number() over (order by id) - 1 as k from services where organization_id = $1),
            a as (
              select p.id as patient_id, p.n, j,
                     date_trunc('minute', now()) - make_interval(mins => ((p.n * 7919 + j * 104729) % (395 * 1440))::int) + interval '30 days' as starts_at,
                     (p.n + j) % 10 as k, (p.n * 31 + j) % 20 as r
              from p cross join generate_series(1, 5) j
            )
       insert into appointments (organization_id, service_id, patient_id, starts_at, ends_at, mode, status, source)
       select $1, s.id, a.patient_id, a.starts_at, a.starts_at + interval '30 minutes', 'in_person',
              case when a.starts_at > now() then 'scheduled' when a.r < 2 then 'cancelled' when a.r = 2 then 'no_show' else 'done' end, 'staff'
       from a join s on s.k = a.k`,
        [orgId],
      );
      // The marketing_email consent for 60% of the patients, withdrawn by one in six of them.
      await tx.query(
        `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id,
                                   withdrawn_at, withdrawn_by_principal_id)
       select $1, p.user_id, 'marketing_email', 1, 'api', p.user_id, w.at, case when w.at is not null then p.user_id end
       from (select user_id, row_number() over (order by id) as n from patients where organization_id = $1) p
       cross join lateral (select case when abs(hashtext(p.user_id::text)) % 10 = 0 then now() end as at) w
       where abs(hashtext(p.user_id::text)) % 10 < 6`,
        [orgId],
      );
      await tx.query('set local session_replication_role = origin');
    }
  });
  await client.query('vacuum analyze');
  const counts = (
    await db.query<{ patients: number; appointments: number }>(
      `select (select count(*)::int from patients where organization_id = $1) as patients, (select count(*)::int from appointments where organization_id = $1) as appointments`,
      [org.id],
    )
  ).rows[0]!;
  console.log(
    `seeded ${counts.patients} patients and ${counts.appointments} appointments (+20,000 patients elsewhere) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );

  const service = (await db.query<{ id: string }>(`select id from services where organization_id = $1 order by id limit 1`, [org.id]))
    .rows[0]!.id;
  const criteria = {
    and: [
      { field: 'patient.date_of_birth', op: 'before', value: '1986-01-01' },
      { field: 'appointments', op: 'exists', where: { service_ids: [service], statuses: ['done'], within_last_days: 90 } },
      { field: 'consent', op: 'active', value: 'marketing_email' },
    ],
  };
  const segment = await inject('POST', '/v1/segments', token, org.id, { name: 'Recent visitors, marketing', criteria });
  const worker = await startWorker(rt);
  closers.push(() => worker.close());

  // The floor's statement: the module's compiler on the same criteria (this segment names no custom field), as
  // the owner on one plain connection.
  const compiled = compileCriteria(criteria, [], 4);
  const floorSql = `insert into segment_members (organization_id, segment_id, evaluation_id, patient_id)
  select $1, $2, $3, p.id from patients p where p.organization_id = $1 and p.deleted_at is null and (${compiled.sql})`;
  async function floorRound(): Promise<{ ms: number; members: number }> {
    const t0 = performance.now();
    await client.query('begin');
    const e = await client.query<{ id: string }>(
      `insert into segment_evaluations (organization_id, segment_id, total, requested_by_principal_id) values ($1, $2, $3, $4) returning id`,
      [org.id, segment.id, counts.patients, me.id],
    );
    const evaluationId = e.rows[0]!.id;
    const r = await client.query(floorSql, [org.id, segment.id, evaluationId, ...compiled.params]);
    await client.query(
      `update segment_evaluations set status = 'done', finished_at = now(), member_count = $3 where organization_id = $1 and id = $2`,
      [org.id, evaluationId, r.rowCount],
    );
    await client.query('commit');
    const ms = performance.now() - t0;
    // Not timed: the floor's members go (the next evaluation of ours would delete them too).
    await client.query('delete from segment_evaluations where organization_id = $1 and id = $2', [org.id, evaluationId]);
    return { ms, members: r.rowCount ?? 0 };
  }

  async function oursRound(): Promise<{ ms: number; members: number; worker: number }> {
    const t0 = performance.now();
    const res = await app.inject({
      method: 'POST',
      url: `/v1/segments/${segment.id}/evaluate`,
      headers: { authorization: `Bearer ${token}`, 'x-organization-id': org.id },
    });
    if (res.statusCode !== 202 && res.statusCode !== 200) throw new Error(`evaluate: ${res.statusCode} ${res.body}`);
    const evaluationId = res.json().data.id as string;
    for (;;) {
      const { rows } = await client.query<{ status: string; member_count: number; error: string | null; ms: number }>(
        `select status, member_count, error, extract(epoch from finished_at - started_at) * 1000 as ms from segment_evaluations where organization_id = $1 and id = $2`,
        [org.id, evaluationId],
      );
      const e = rows[0]!;
      if (e.status === 'failed') throw new Error(`evaluation failed: ${e.error}`);
      if (e.status === 'done') return { ms: performance.now() - t0, members: e.member_count, worker: Number(e.ms) };
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  if (process.env.BENCH_EXPLAIN) {
    // The plan of one step (the module's own statement, from evaluateStep) as the caller, and the floor's.
    const permissions = (await inject('GET', '/v1/me', token, org.id)).current_permissions;
    const scope = { role: 'app_rls' as const, principalId: me.id, orgId: org.id, permissions };
    const explain = (text: string) => `explain (analyze, costs off, summary on) ${text}`;
    const show = (label: string, rows: { 'QUERY PLAN': string }[]) =>
      console.log(`\n--- ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
    const e = (
      await db.query<{ id: string }>(
        `insert into segment_evaluations (organization_id, segment_id, total, requested_by_principal_id) values ($1, $2, 0, $3) returning id`,
        [org.id, segment.id, me.id],
      )
    ).rows[0]!;
    const { rows: page } = await db.query<{ id: string }>(
      `select id from patients where organization_id = $1 and deleted_at is null order by id limit 1 offset $2`,
      [org.id, config.segments.chunkSize * 2],
    );
    const stepPlan = await db.withScope(scope, async (tx) => {
      const step = await compileFor(tx, org.id, criteria, 6);
      await tx.query('savepoint plan');
      let rows: { 'QUERY PLAN': string }[] = [];
      const explaining = {
        query: async (text: string, params?: readonly unknown[]) => {
          rows = (await tx.query<{ 'QUERY PLAN': string }>(explain(text), params)).rows;
          return { rows: [{ last: null, seen: 0, added: 0 }] };
        },
      } as unknown as Queryable;
      await evaluateStep(
        explaining,
        { organization_id: org.id, segment_id: segment.id, id: e.id },
        step,
        page[0]?.id ?? null,
        config.segments.chunkSize,
      );
      await tx.query('rollback to savepoint plan');
      return rows;
    });
    show(`one step of ${config.segments.chunkSize} patients as the caller (app_rls)`, stepPlan);
    await client.query('begin');
    show(
      'the floor (owner, every patient at once)',
      (await client.query(explain(floorSql), [org.id, segment.id, e.id, ...compiled.params])).rows,
    );
    await client.query('rollback');
    await db.query('delete from segment_evaluations where organization_id = $1 and id = $2', [org.id, e.id]);
  }

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const floors: number[] = [];
  const ours: number[] = [];
  const workers: number[] = [];
  // A first evaluation each, not counted: caches and plans warm, and the segment has members to replace, as
  // a segment evaluated daily has.
  const warmFloor = await floorRound();
  const warmOurs = await oursRound();
  if (warmFloor.members !== warmOurs.members) throw new Error(`members differ: floor ${warmFloor.members}, ours ${warmOurs.members}`);
  console.log(
    `\nPOST /v1/segments/{id}/evaluate, 3 conditions, ${counts.patients} patients, ${counts.appointments} appointments: ${warmOurs.members} members (chunk ${config.segments.chunkSize}, sync limit ${config.segments.syncLimit}, dispatch every ${config.worker.dispatchIntervalMs} ms)`,
  );
  for (let i = 0; i < ROUNDS; i++) {
    const f = await floorRound();
    const o = await oursRound();
    if (f.members !== o.members) throw new Error(`members differ: floor ${f.members}, ours ${o.members}`);
    floors.push(f.ms);
    ours.push(o.ms);
    workers.push(o.worker);
    console.log(
      `round ${i + 1}: floor ${f.ms.toFixed(0)} ms   ours ${o.ms.toFixed(0)} ms (the evaluation row: ${o.worker.toFixed(0)} ms from start to done)   ratio ${(f.ms / o.ms).toFixed(2)}`,
    );
  }
  const segmentNow = await inject('GET', `/v1/segments/${segment.id}`, token, org.id);
  if (segmentNow.member_count !== warmOurs.members) throw new Error(`GET /v1/segments/{id}: member_count ${segmentNow.member_count}`);
  const f = median(floors);
  const o = median(ours);
  console.log(`\nmedian floor (same SQL, owner, one transaction)   ${f.toFixed(0)} ms`);
  console.log(`median ours (POST -> worker -> switched)          ${o.toFixed(0)} ms   target < 2000 ms`);
  console.log(`  of which the evaluation row (start to done)     ${median(workers).toFixed(0)} ms`);
  console.log(`ratio floor / ours                                ${(f / o).toFixed(2)}   target >= 0.7`);
  console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);
} finally {
  for (const close of closers.reverse()) await close().catch((err: Error) => console.error(`teardown: ${err.message}`));
  await testDb.drop();
}
