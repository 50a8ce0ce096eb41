// GET /v1/organizations/{id}/members on PostgreSQL (and Redis, as in production) for an organization
// with 100,000 members, beside a floor measured in the same run: a bare Fastify route that sends the
// very statement the API sent (captured from it, same text and parameters) through a pg Pool of the
// same size, as the owner (no row-level security, no authentication, no request transaction).
// Prints requests per second, p50/p99 and the ratio per page (target >= 0.5).
// Run: npx tsx bench/lists.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL). About a
// minute. BENCH_SECONDS per measurement (6), BENCH_MEMBERS (100000), BENCH_JIT=off, and BENCH_EXPLAIN=1
// to print both plans of each statement (as the caller under row-level security, and as the floor).
import { createTestDatabase, type Database, type Queryable } from '@clinic/db';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { NO_RATE_LIMITS, benchSuperadmin, load, row } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);

/** Remembers the last statement sent inside a request transaction: the floor replays it verbatim. */
function capturing(db: Database): { db: Database; last: () => { text: string; params: unknown[] } } {
  let last = { text: '', params: [] as unknown[] };
  const wrap = (tx: Queryable): Queryable => ({
    query: (text, params, opts) => {
      last = { text, params: [...(params ?? [])] };
      return tx.query(text, params, opts);
    },
  });
  return { db: { ...db, kind: db.kind, withScope: (s, fn) => db.withScope(s, (tx) => fn(wrap(tx))) }, last: () => last };
}

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
// BENCH_JIT=off: JIT compilation off for this database (both sides), as an OLTP deployment would run
// it. By default the server's own setting applies, as the API ships today.
if (process.env.BENCH_JIT === 'off') {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`alter database ${new URL(testDb.url!).pathname.slice(1)} set jit = off`);
  await admin.end();
}
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

// The caller: an admin of the organization (organizations.manage_members), on app_rls like every clinic admin.
const token = await issuer.sign('bench-admin@example.com');
const su = await benchSuperadmin(testDb.db, issuer);
const org = (
  await app.inject({
    method: 'POST',
    url: '/v1/organizations',
    headers: { authorization: `Bearer ${su}` },
    payload: { name: 'Big clinic', slug: 'big' },
  })
).json().data;
const me = (await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${token}` } })).json().data;
await testDb.db.query(
  `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
  [me.id, org.id],
);

// 100,000 members in one statement each: users added by email (never signed in), one a second in
// the order they joined (as now() inserts them), 1 in 50 an admin, the rest specialists; plus 20,000 members of another organization.
const other = (
  await app.inject({
    method: 'POST',
    url: '/v1/organizations',
    headers: { authorization: `Bearer ${su}` },
    payload: { name: 'Other', slug: 'other' },
  })
).json().data;
for (const [orgId, n, prefix] of [
  [org.id, MEMBERS, 'member'],
  [other.id, 20_000, 'other'],
] as const) {
  await testDb.db.transaction(async (tx) => {
    // A bulk load, not a request: the 5-second statement limit of the pool does not apply.
    await tx.query(`set local statement_timeout = 0`);
    await tx.query(
      `with u as (
       insert into users (email, created_at)
       select format('%s-%s@example.test', $3::text, md5(i::text)), now() - ($2::int - i) * interval '1 second'
       from generate_series(1, $2::int) i
       returning id, created_at
     )
     insert into memberships (user_id, organization_id, role_id, created_at)
     select u.id, $1, case when row_number() over () % 50 = 0 then a.id else s.id end, u.created_at
     from u
     cross join (select id from roles where organization_id = $1 and code = 'admin') a
     cross join (select id from roles where organization_id = $1 and code = 'specialist') s`,
      [orgId, n, prefix],
    );
  });
}
await testDb.db.query('vacuum analyze');
console.log(`seeded ${MEMBERS} members in ${((Date.now() - started) / 1000).toFixed(1)} s`);

// The floor: the same statement, same parameters, same driver and pool size, in a bare route.
const pool = new pg.Pool({ connectionString: testDb.url!, max: config.databasePoolMax });
const floorSql = new Map<string, { text: string; params: unknown[] }>();
const floor = Fastify();
floor.get('/floor/:scenario', async (request, reply) => {
  const q = floorSql.get((request.params as { scenario: string }).scenario)!;
  const { rows } = await pool.query(q.text, q.params);
  return reply.send({ data: rows, pagination: { total: rows[0]?.total ?? 0 } });
});
const floorUrl = await floor.listen({ port: 0, host: '127.0.0.1' });

const headers = { authorization: `Bearer ${token}` };
const permissions = (await app.inject({ method: 'GET', url: '/v1/me', headers: { ...headers, 'x-organization-id': org.id } })).json().data
  .current_permissions;

/** BENCH_EXPLAIN=1: the plan of the captured statement as the caller (app_rls) and as the floor runs it. */
async function explain(name: string, q: { text: string; params: unknown[] }): Promise<void> {
  const text = `explain (analyze, costs off, timing off, summary on) ${q.text}`;
  const scope = { role: 'app_rls' as const, principalId: me.id, orgId: org.id, permissions };
  const asCaller = await testDb.db.withScope(scope, (tx) => tx.query<{ 'QUERY PLAN': string }>(text, q.params));
  const asFloor = await pool.query<{ 'QUERY PLAN': string }>(text, q.params);
  for (const [who, plan] of [
    ['core API (app_rls)', asCaller.rows],
    ['floor', asFloor.rows],
  ] as const) {
    console.log(
      `\n--- ${name}: plan as ${who}\n${plan
        .map((r) => r['QUERY PLAN'])
        .filter((l) => !/InitPlan|-> +Result/.test(l))
        .join('\n')}`,
    );
  }
}

const scenarios = [
  { name: 'sort=email page 1', qs: '?sort=email&page=1' },
  { name: 'sort=email page 1000', qs: '?sort=email&page=1000' },
  { name: 'default (newest) page 1000', qs: '?page=1000' },
];

const jit = (await testDb.db.query<{ jit: string }>('show jit')).rows[0]!.jit;
console.log(
  `\nGET /v1/organizations/{id}/members, ${MEMBERS} members, limit 50 (PostgreSQL + Redis, loopback, 16 connections, ${SECONDS} s each, jit ${jit})`,
);
for (const [i, s] of scenarios.entries()) {
  const url = `${ours}/v1/organizations/${org.id}/members${s.qs}`;
  const first = await fetch(url, { headers });
  const body = (await first.json()) as { data: { email: string }[]; pagination: { total: number } };
  if (first.status !== 200 || body.data.length !== 50 || body.pagination.total !== MEMBERS + 1) {
    throw new Error(`unexpected answer for ${s.qs}: ${first.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  floorSql.set(String(i), captured.last());
  if (process.env.BENCH_EXPLAIN) await explain(s.name, captured.last());
  await load(url, headers, 1);
  await load(`${floorUrl}/floor/${i}`, {}, 1);
  const a = await load(url, headers, SECONDS);
  const f = await load(`${floorUrl}/floor/${i}`, {}, SECONDS);
  console.log(`\n${s.name}`);
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
