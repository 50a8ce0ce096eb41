// Telerehab progress and the clinic dashboard on PostgreSQL (and Redis, as in production), each beside a floor
// measured in the same run (docs/telerehab.md, Performance):
//   - GET /v1/treatment-plans/enrollments/{id}/progress for one patient with a year of daily sessions (365 completed,
//     scored sessions of a 365-day plan; target: median under 50 ms);
//   - GET /v1/treatment-plans/analytics, the clinic dashboard over BENCH_ENROLLED (1,000) live enrollments, each 30
//     days into a plan of two items a day with about four in five sessions done (target: median under 500 ms).
// The floor is bench/directory.ts's: a bare Fastify route that sends the very statements the API sent for that
// request (captured from it: same texts, parameters and prepared-statement names) through a pg Pool of the same size
// and settings, as the owner: no row-level security, no authentication, no request transaction; one statement at a
// time, and batched as the API sent them. Medians are those of one client at a time (the latency a clinician sees);
// throughput under 16 connections gives the ratio (target >= 0.7).
// Both pools have DATABASE_POOL_MAX connections (the API's opened as the runtime opens it in production).
// Run: npx tsx bench/treatment-progress.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL; loopback
// only). About two minutes. BENCH_SECONDS per measurement (5); BENCH_EXPLAIN=1 prints each statement's plan as
// the caller (app_rls, under its policies) and as the floor (EXPLAIN ANALYZE, BUFFERS).
// Everything is closed before the bench database is dropped, also when a check fails: dropping it ends the
// connections still open on it, and an idle pooled client that PostgreSQL ends raises an error in its pool.
import { createTestDatabase, openPostgres, type RequestScope } from '@clinic/db';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { NO_RATE_LIMITS, benchSuperadmin, capturing, injector, load, type LoadResult, replay, row, type Statement } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ENROLLED = Number(process.env.BENCH_ENROLLED ?? 1_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
for (const url of [ADMIN_URL, REDIS_URL]) {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) throw new Error(`${url}: benchmarks run on loopback only`);
}

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL,
  REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
  ...NO_RATE_LIMITS,
  QUERY_TIMEOUT_MS: '60000',
});
const apiDb = await openPostgres({
  connectionString: testDb.url!,
  max: config.databasePoolMax,
  statementTimeoutMs: config.timeouts.queryMs,
});
const captured = capturing(apiDb);
const { createRuntime } = await import('../apps/core-api/src/platform/runtime.ts');
const rt = await createRuntime(config, { db: captured.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });

const su = await benchSuperadmin(testDb.db, issuer);
const inject = injector(app);
const org = await inject('POST', '/v1/organizations', su, null, { name: 'Rehab clinic', slug: 'bench-rehab' });
// The caller: an administrator of the clinic (telemetry.view_org, treatment_plans.*), on app_rls like every clinic admin.
const token = await issuer.sign('bench-admin@example.com');
const me = await inject('GET', '/v1/me', token, null);
await testDb.db.query(
  `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
  [me.id, org.id],
);
await inject('PUT', '/v1/treatment-plans/settings', token, org.id, { enabled: true, accept_intended_use: true });
const squat = (await testDb.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
const today = (await testDb.db.query<{ d: string }>(`select to_char((now() at time zone 'UTC')::date, 'YYYY-MM-DD') as d`)).rows[0]!.d;
const item = { exercise_id: squat, sets: [{ side: 'left', reps: 10 }] };
const plan = async (name: string, days: number, items: number) => {
  const p = await inject('POST', '/v1/treatment-plans', token, org.id, {
    name,
    self_report: { pain: true, effort: false },
    phases: [{ name: 'All', days: Array.from({ length: days }, () => ({ items: Array.from({ length: items }, () => item) })) }],
  });
  await inject('POST', `/v1/treatment-plans/${p.id}/publish`, token, org.id);
  return p.id as string;
};
const yearPlan = await plan('A year of squats', 365, 1);
const clinicPlan = await plan('Knee programme', 60, 2);

await testDb.db.transaction(async (tx) => {
  await tx.query('set local statement_timeout = 0');
  // Patients: one with a year behind it, and ENROLLED for the dashboard.
  await tx.query(
    `with u as (insert into users (email) select format('rehab-%s@patients.example', i) from generate_series(0, $2::int) i returning id, email)
     insert into patients (organization_id, user_id, first_name, last_name)
     select $1, u.id, 'Pat', split_part(u.email, '@', 1) from u`,
    [org.id, ENROLLED],
  );
  // The year: enrolled 365 days ago, every day of the 365-day plan done with results.
  await tx.query(
    `insert into treatment_enrollments (organization_id, treatment_plan_id, plan_version, patient_id, start_date, weekdays, time_zone, enrolled_by_principal_id)
     select $1, $2, 1, p.id, $3::date - 365, '{1,2,3,4,5,6,7}', 'UTC', $4
     from patients p join users u on u.id = p.user_id where p.organization_id = $1 and u.email = 'rehab-0@patients.example'`,
    [org.id, yearPlan, today, me.id],
  );
  // The clinic: ENROLLED patients 30 days into the programme, started on different weekdays.
  await tx.query(
    `insert into treatment_enrollments (organization_id, treatment_plan_id, plan_version, patient_id, start_date, weekdays, time_zone, enrolled_by_principal_id)
     select $1, $2, 1, p.id, $3::date - 30, '{1,2,3,4,5,6,7}', 'UTC', $4
     from patients p join users u on u.id = p.user_id where p.organization_id = $1 and u.email <> 'rehab-0@patients.example'`,
    [org.id, clinicPlan, today, me.id],
  );
  // Sessions: every scheduled date before today and each of its items; about one in five skipped or missing,
  // form scores drifting per patient so that some worsen.
  await tx.query(
    `insert into plan_sessions (organization_id, enrollment_id, patient_id, treatment_plan_id, plan_version, plan_day, scheduled_on, item_index,
       exercise_id, status, starts, started_at, completed_at, rep_count, form_score, rom, duration_s, algorithm_version, software_version, pain)
     select e.organization_id, e.id, e.patient_id, e.treatment_plan_id, 1, d + 1, e.start_date + d, it, $2, 'completed', 1,
            (e.start_date + d) + time '10:00', (e.start_date + d) + time '10:05', 10, greatest(0, least(100, 85 + (h % 7) - (h % 3) * d / 4))::int,
            jsonb_build_object('left_knee', jsonb_build_object('min_deg', 95, 'max_deg', 165 + d % 5, 'range_deg', 70 + d % 5, 'valid_frames', 300)),
            60, 'pose-score/1', '0.1.0', d % 4
     from treatment_enrollments e
     cross join lateral (select abs(hashtext(e.id::text)) as h) x
     cross join lateral generate_series(0, $3::date - e.start_date - 1) d
     cross join lateral generate_series(0, case when e.treatment_plan_id = $4 then 0 else 1 end) it
     where e.organization_id = $1 and (e.treatment_plan_id = $4 or (h + d * 7 + it) % 5 <> 0)`,
    [org.id, squat, today, yearPlan],
  );
});
await testDb.db.query('vacuum analyze');
const year = (
  await testDb.db.query<{ id: string }>('select id from treatment_enrollments where organization_id = $1 and treatment_plan_id = $2', [
    org.id,
    yearPlan,
  ])
).rows[0]!.id;
const sessions = (await testDb.db.query<{ n: number }>('select count(*)::int as n from plan_sessions')).rows[0]!.n;
console.log(
  `seeded a year of daily sessions for one patient and ${ENROLLED} enrollments 30 days in (${sessions} plan sessions) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);

const headers = { authorization: `Bearer ${token}`, 'x-organization-id': org.id };
const permissions: string[] = (await inject('GET', '/v1/me', token, org.id)).current_permissions;
const setting = (v: string) => v.replace(/[\\ ]/g, '\\$&');
const pool = new pg.Pool({
  connectionString: testDb.url!,
  max: config.databasePoolMax,
  pipeline: true,
  options: `-c jit=off -c app.org_id=${org.id} -c app.principal_id=${me.id} -c app.permissions=${setting(permissions.join(','))}`,
} as pg.PoolConfig);
pool.on('error', () => undefined);
const floorSql = new Map<string, Statement[][]>();
const floor = Fastify();
floor.get('/floor/:scenario/:mode', async (request) => {
  const { scenario, mode } = request.params as { scenario: string; mode: 'sequential' | 'batched' };
  return { data: await replay(pool, floorSql.get(scenario)!, mode) };
});
const floorUrl = await floor.listen({ port: 0, host: '127.0.0.1' });

const scenarios = [
  {
    name: 'progress: one patient, a year of daily sessions',
    url: `/v1/treatment-plans/enrollments/${year}/progress`,
    target: 50,
    check: (d: any) => d.data.adherence.days_due === 365 && d.data.exercises[0].sessions === 365,
  },
  {
    name: `dashboard: ${ENROLLED} enrolled patients`,
    url: '/v1/treatment-plans/analytics',
    target: 500,
    check: (d: any) => d.summary.enrollments === ENROLLED + 1 && d.data.length === 50,
  },
];

/** BENCH_EXPLAIN=1: each captured statement's plan as the caller (its role and settings) and as the floor. */
async function explain(name: string, scope: RequestScope, batches: Statement[][]): Promise<void> {
  for (const st of batches.flat()) {
    const text = `explain (analyze, buffers, costs off) ${st.text}`;
    const asCaller = await apiDb.withScope(scope, (tx) => tx.query<{ 'QUERY PLAN': string }>(text, st.params));
    const asFloor = await pool.query<{ 'QUERY PLAN': string }>(text, st.params);
    for (const [who, plan] of [
      [`core API (${scope.role})`, asCaller.rows],
      ['floor', asFloor.rows],
    ] as const) {
      console.log(
        `\n--- ${name}: ${st.text.replace(/\s+/g, ' ').slice(0, 100)}\n    plan as ${who}\n${plan
          .map((r) => r['QUERY PLAN'])
          .filter((l) => !/InitPlan|-> +Result \(actual time=[\d.]+\.\.[\d.]+ rows=1 loops=1\)|\(never executed\)/.test(l))
          .join('\n')}`,
      );
    }
  }
}

async function teardown(): Promise<void> {
  await app.close();
  await floor.close();
  await pool.end();
  await rt.close();
  await apiDb.close();
  await testDb.drop();
}

const redis = new Redis(REDIS_URL);
await redis.quit();
console.log(`\nPostgreSQL + Redis on loopback, ${config.databasePoolMax} connections each side, ${SECONDS} s each`);
try {
  for (const [i, s] of scenarios.entries()) {
    const first = await fetch(`${ours}${s.url}`, { headers });
    const body = await first.json();
    if (first.status !== 200 || !s.check(body))
      throw new Error(`unexpected answer for ${s.url}: ${first.status} ${JSON.stringify(body).slice(0, 300)}`);
    floorSql.set(String(i), captured.last());
    if (process.env.BENCH_EXPLAIN) await explain(s.name, captured.scope(), captured.last());
    await load(`${ours}${s.url}`, headers, 1);
    await load(`${floorUrl}/floor/${i}/batched`, {}, 1);
    const batches = floorSql.get(String(i))!;
    console.log(`\n${i + 1}. ${s.name}: ${batches.flat().length} statements, sent in ${batches.length} round trip(s)`);
    const results: Record<string, LoadResult> = {};
    for (const connections of [1, 16]) {
      const a = await load(`${ours}${s.url}`, headers, SECONDS, connections);
      const seq = await load(`${floorUrl}/floor/${i}/sequential`, {}, SECONDS, connections);
      const bat = await load(`${floorUrl}/floor/${i}/batched`, {}, SECONDS, connections);
      console.log(`  ${connections} connection(s)`);
      console.log(`  ${row('floor: same SQL, one statement at a time', seq)}`);
      console.log(`  ${row('floor: same SQL, batched as the API sent it', bat)}`);
      console.log(`  ${row('core API (auth, RLS, transaction, access log)', a)}`);
      console.log(
        `  ratio (ours / floor): ${(a.rps / seq.rps).toFixed(2)}, against the batched floor ${(a.rps / bat.rps).toFixed(2)}   target >= 0.7`,
      );
      results[connections] = a;
    }
    console.log(`  median of one client at a time: ${results[1]!.p50} ms (target < ${s.target} ms)`);
  }
  console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);
} finally {
  await teardown();
}
