// Form and custom-field reads on PostgreSQL (and Redis, as in production), each beside a floor measured in the same
// run: a bare Fastify route that sends the very statements the API sent for that request (captured
// from it, same texts and parameters, one after another) through a pg Pool of the same size, as the
// owner (no row-level security, no authentication, no request transaction).
//   - GET /v1/patients (page 1 of 50) in an organization of BENCH_PATIENTS patients (10000) with three
//     published patient fields and values on every record;
//   - GET /v1/forms/{id} of a form of 20 snapshotted fields, as a specialist and as the patient.
// Prints requests per second, p50/p99 and the ratio (target >= 0.5, as bench/lists.ts).
// Run: npx tsx bench/forms.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL).
import { createTestDatabase, type Database, type Queryable } from '@clinic/db';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { load, row } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

/** Remembers every statement of the latest request transaction: the floor replays them in order. */
function capturing(db: Database): { db: Database; last: () => { text: string; params: unknown[] }[] } {
  let current: { text: string; params: unknown[] }[] = [];
  const wrap = (tx: Queryable, into: { text: string; params: unknown[] }[]): Queryable => ({
    query: (text, params, opts) => {
      into.push({ text, params: [...(params ?? [])] });
      return tx.query(text, params, opts);
    },
  });
  return {
    db: {
      ...db,
      kind: db.kind,
      withScope: (s, fn) => {
        const into: { text: string; params: unknown[] }[] = [];
        current = into;
        return db.withScope(s, (tx) => fn(wrap(tx, into)));
      },
    },
    last: () => current,
  };
}

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
const captured = capturing(testDb.db);
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL,
  REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
  RATELIMIT_API_LIMIT: '100000000',
});
const rt = await createRuntime(config, { db: captured.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });

const su = await issuer.sign('bench-root@example.com');
await testDb.db.query(`insert into users (email) values ('bench-root@example.com')`);
await testDb.db.query(
  `insert into platform_memberships (user_id, role) select id, 'superadmin' from users where email = 'bench-root@example.com'`,
);
const inject = async (method: string, url: string, token: string, org: string | null, payload?: unknown) => {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: { authorization: `Bearer ${token}`, ...(org ? { 'x-organization-id': org } : {}) },
    ...(payload ? { payload: payload as object } : {}),
  });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json().data;
};
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

const pool = new pg.Pool({ connectionString: testDb.url!, max: config.databasePoolMax });
const floorSql = new Map<string, { text: string; params: unknown[] }[]>();
const floor = Fastify();
floor.get('/floor/:scenario', async (request) => {
  let last: unknown[] = [];
  for (const q of floorSql.get((request.params as { scenario: string }).scenario)!) last = (await pool.query(q.text, q.params)).rows;
  return { data: last };
});
const floorUrl = await floor.listen({ port: 0, host: '127.0.0.1' });

const scenarios = [
  { name: 'GET /v1/patients page 1 (specialist)', url: '/v1/patients', token: specialist },
  { name: 'GET /v1/forms/{id} (specialist)', url: `/v1/forms/${form.id}`, token: specialist },
  { name: 'GET /v1/forms/{id} (the patient, stripped)', url: `/v1/forms/${form.id}`, token: patientToken },
];
console.log(`\n${PATIENTS} patients, PostgreSQL + Redis on loopback, 16 connections, ${SECONDS} s each`);
for (const [i, s] of scenarios.entries()) {
  const headers = { authorization: `Bearer ${s.token}`, 'x-organization-id': org.id };
  const first = await fetch(`${ours}${s.url}`, { headers });
  if (first.status !== 200) throw new Error(`${s.url}: ${first.status} ${await first.text()}`);
  floorSql.set(
    String(i),
    captured.last().filter((q) => !/set_config/.test(q.text)),
  );
  await load(`${ours}${s.url}`, headers, 1);
  await load(`${floorUrl}/floor/${i}`, {}, 1);
  const a = await load(`${ours}${s.url}`, headers, SECONDS);
  const f = await load(`${floorUrl}/floor/${i}`, {}, SECONDS);
  console.log(`\n${s.name} (${floorSql.get(String(i))!.length} statements)`);
  console.log(row('floor: same SQL, bare pg Pool', f));
  console.log(row('core API (auth, RLS, transaction)', a));
  console.log(`ratio (ours / floor): ${(a.rps / f.rps).toFixed(2)}   target >= 0.5`);
}
console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);
await app.close();
await floor.close();
await pool.end();
await rt.close();
await testDb.drop();
