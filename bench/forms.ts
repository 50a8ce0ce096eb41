// Form and custom-field reads on PostgreSQL (and Redis, as in production), each beside a floor measured in the same
// run: a bare Fastify route that sends the very statements the API sent for that request (captured
// from it, same texts, parameters and prepared-statement names) through a pg Pool of the same size and
// settings (jit off), as the owner (no row-level security, no authentication, no request transaction):
// one after another, and batched as the API sent them (what the API pipelined, pipelined on one connection).
//   - GET /v1/patients (page 1 of 50) in an organization of BENCH_PATIENTS patients (10000) with three
//     published patient fields and values on every record;
//   - GET /v1/forms/{id} of a form of 20 snapshotted fields, as a specialist and as the patient.
// Prints requests per second, p50/p99, CPU per request and the ratios (targets: 0.7 for GET /v1/forms/{id} by
// a specialist; 0.5 elsewhere, as bench/lists.ts).
// Run: npx tsx bench/forms.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL). BENCH_EXPLAIN=1
// prints each statement's plan as the caller (its role and settings) and as the floor.
import { createTestDatabase, type RequestScope } from '@clinic/db';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import {
  NO_RATE_LIMITS,
  benchSuperadmin,
  capturing,
  cpuMeter,
  injector,
  load,
  type LoadResult,
  replay,
  row,
  type Statement,
} from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
const captured = capturing(testDb.db);
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL,
  REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
  ...NO_RATE_LIMITS,
});
const rt = await createRuntime(config, { db: captured.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });

const su = await benchSuperadmin(testDb.db, issuer);
const inject = injector(app);
const org = await inject('POST', '/v1/organizations', su, null, { name: 'Big clinic', slug: 'big-forms' });
const member = async (email: string, role: string) => {
  const token = await issuer.sign(email);
  const me = await inject('GET', '/v1/me', token, null);
  await testDb.db.query(
    `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = $3`,
    [me.id, org.id, role],
  );
  return token;
};
const specialist = await member('bench-spec@example.com', 'specialist');
const fields = [];
for (const [key, type, options] of [
  ['allergies', 'multi_select', ['pollen', 'nuts', 'dust']],
  ['height', 'number', []],
  ['risk', 'select', ['low', 'high']],
] as const) {
  fields.push(
    await inject('POST', '/v1/custom-fields', su, org.id, {
      entity_type: 'patient',
      key,
      label: key,
      field_type: type,
      options: [...options],
    }),
  );
}
const values = { [fields[0].id]: ['pollen'], [fields[1].id]: 172, [fields[2].id]: 'low' };
await testDb.db.transaction(async (tx) => {
  await tx.query('set local statement_timeout = 0');
  await tx.query(
    `with u as (insert into users (email) select format('patient-%s@example.test', i) from generate_series(1, $2::int) i returning id)
     insert into patients (organization_id, user_id, first_name, last_name, custom_field_values)
     select $1, u.id, 'First', 'Last ' || row_number() over (), $3::jsonb from u`,
    [org.id, PATIENTS, JSON.stringify(values)],
  );
});
// The patient caller and a form of 20 fields.
const patientToken = await issuer.sign('patient-1@example.test');
await inject('GET', '/v1/me', patientToken, org.id);
const patientId = (
  await testDb.db.query<{ id: string }>(
    `select p.id from patients p join users u on u.id = p.user_id where u.email = 'patient-1@example.test'`,
  )
).rows[0]!.id;
const formFields: { custom_field_id: string }[] = [];
for (let i = 0; i < 20; i++)
  formFields.push({
    custom_field_id: (
      await inject('POST', '/v1/custom-fields', su, org.id, {
        entity_type: 'form',
        key: `q${i}`,
        label: `Question ${i}`,
        field_type: 'text',
      })
    ).id,
  });
const template = await inject('POST', '/v1/form-templates', su, org.id, { name: 'Intake', fields: formFields });
const form = await inject('POST', '/v1/forms', su, org.id, {
  form_template_id: template.id,
  patient_id: patientId,
  values: Object.fromEntries(formFields.map((_, i) => [`q${i}`, `answer ${i}`])),
});
// Other forms of the organization (one snapshot each): the read policies of snapshots and files must
// not cost in proportion to them.
await testDb.db.transaction(async (tx) => {
  await tx.query('set local statement_timeout = 0');
  await tx.query(
    `with f as (
       insert into forms (organization_id, patient_id, form_template_id, template_version, title, created_by_principal_id)
       select $1, p.id, $2, 1, 'Old intake', p.user_id from patients p where p.organization_id = $1 returning id
     )
     insert into form_field_snapshots (organization_id, form_id, position, custom_field_id, version, key, label, field_type, options, private, required)
     select $1, f.id, 0, $3, 1, 'q0', 'Question 0', 'text', '[]'::jsonb, false, false from f`,
    [org.id, template.id, formFields[0]!.custom_field_id],
  );
});
await testDb.db.query('vacuum analyze');
console.log(`seeded ${PATIENTS} patients with a form each, and a form of 20 fields in ${((Date.now() - started) / 1000).toFixed(1)} s`);

const pool = new pg.Pool({
  connectionString: testDb.url!,
  max: config.databasePoolMax,
  pipeline: true,
  options: '-c jit=off',
} as pg.PoolConfig);
const floorSql = new Map<string, Statement[][]>();
const floor = Fastify();
floor.get('/floor/:scenario/:mode', async (request) => {
  const { scenario, mode } = request.params as { scenario: string; mode: 'sequential' | 'batched' };
  return { data: await replay(pool, floorSql.get(scenario)!, mode) };
});
const floorUrl = await floor.listen({ port: 0, host: '127.0.0.1' });

/** BENCH_EXPLAIN=1: each captured statement's plan as the caller (its role and settings) and as the floor runs it. */
async function explain(name: string, scope: RequestScope, statements: Statement[]): Promise<void> {
  for (const q of statements) {
    const text = `explain (analyze, costs off, timing off, summary on) ${q.text}`;
    const asCaller = await testDb.db.withScope(scope, (tx) => tx.query<{ 'QUERY PLAN': string }>(text, q.params));
    const asFloor = await pool.query<{ 'QUERY PLAN': string }>(text, q.params);
    for (const [who, plan] of [
      [`core API (${scope.role})`, asCaller.rows],
      ['floor', asFloor.rows],
    ] as const) {
      console.log(
        `\n--- ${name}: ${q.text.replace(/\s+/g, ' ').slice(0, 90)}...\n    plan as ${who}\n${plan.map((r) => r['QUERY PLAN']).join('\n')}`,
      );
    }
  }
}

const scenarios = [
  { name: 'GET /v1/patients page 1 (specialist)', url: '/v1/patients', token: specialist, target: 0.5 },
  { name: 'GET /v1/forms/{id} (specialist)', url: `/v1/forms/${form.id}`, token: specialist, target: 0.7 },
  { name: 'GET /v1/forms/{id} (the patient, stripped)', url: `/v1/forms/${form.id}`, token: patientToken, target: 0.5 },
];
console.log(`\n${PATIENTS} patients, PostgreSQL + Redis on loopback, 16 connections, ${SECONDS} s each`);
const backends = async () =>
  (await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).rows.map((r) => r.pid);
for (const [i, s] of scenarios.entries()) {
  const headers = { authorization: `Bearer ${s.token}`, 'x-organization-id': org.id };
  const first = await fetch(`${ours}${s.url}`, { headers });
  if (first.status !== 200) throw new Error(`${s.url}: ${first.status} ${await first.text()}`);
  // The scope statement opens every request transaction: it is the platform's, not the floor's.
  floorSql.set(
    String(i),
    captured
      .last()
      .map((b) => b.filter((q) => !/set_config/.test(q.text)))
      .filter((b) => b.length),
  );
  if (process.env.BENCH_EXPLAIN) await explain(s.name, captured.scope(), floorSql.get(String(i))!.flat());
  await load(`${ours}${s.url}`, headers, 1);
  await load(`${floorUrl}/floor/${i}/batched`, {}, 1);
  const measure = async (url: string, h: Record<string, string>): Promise<[LoadResult, string]> => {
    const stop = cpuMeter(await backends());
    const r = await load(url, h, SECONDS);
    return [r, stop()(r.requests)];
  };
  const [a, aCpu] = await measure(`${ours}${s.url}`, headers);
  const [seq, seqCpu] = await measure(`${floorUrl}/floor/${i}/sequential`, {});
  const [bat, batCpu] = await measure(`${floorUrl}/floor/${i}/batched`, {});
  const batches = floorSql.get(String(i))!;
  console.log(`\n${s.name} (${batches.flat().length} statements, sent in ${batches.length} round trip(s))`);
  console.log(`${row('floor: same SQL, one statement at a time', seq)}\n${' '.repeat(46)}${seqCpu}`);
  console.log(`${row('floor: same SQL, batched as the API sent it', bat)}\n${' '.repeat(46)}${batCpu}`);
  console.log(`${row('core API (auth, RLS, transaction)', a)}\n${' '.repeat(46)}${aCpu}`);
  console.log(
    `ratio (ours / floor): ${(a.rps / seq.rps).toFixed(2)}, against the batched floor ${(a.rps / bat.rps).toFixed(2)}   target >= ${s.target}`,
  );
}
console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);
await app.close();
await floor.close();
await pool.end();
await rt.close();
await testDb.drop();
