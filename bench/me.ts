// GET /v1/me on PostgreSQL (and Redis, as in production) under load, beside a floor measured in the
// same run: a bare Fastify route on the same driver that verifies the same JWT and reads one user row
// by primary key. Prints requests per second, p50/p99 and the ratio (target >= 0.6), and the database
// statements per request. Run: npm run bench (needs PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL).
import { createTestDatabase, type Database } from '@clinic/db';
import Fastify from 'fastify';
import { jwtVerify } from 'jose';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { NO_RATE_LIMITS, load, row, type LoadResult } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Counts statements sent by the app, to state round trips per request. */
function counting(db: Database): { db: Database; count: () => number } {
  let n = 0;
  const wrapped: Database = {
    ...db,
    kind: db.kind,
    query: (t, p, o) => {
      n++;
      return db.query(t, p, o);
    },
    withScope: (s, fn) =>
      db.withScope(s, (tx) =>
        fn({
          query: (t, p, o) => {
            n++;
            return tx.query(t, p, o);
          },
        }),
      ),
    transaction: db.transaction.bind(db),
    exec: db.exec.bind(db),
    poolMetrics: db.poolMetrics.bind(db),
    close: db.close.bind(db),
  };
  return { db: wrapped, count: () => n };
}

const testDb = await createTestDatabase(ADMIN_URL);
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
const counted = counting(testDb.db);
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL,
  REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
  ...NO_RATE_LIMITS,
});
const rt = await createRuntime(config, { db: counted.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });

// A realistic caller: staff in one organization.
const token = await issuer.sign('bench-user@example.com');
const su = await issuer.sign('bench-admin@example.com');
await testDb.db.query(`insert into users (email) values ('bench-admin@example.com')`);
await testDb.db.query(
  `insert into platform_memberships (user_id, role) select id, 'superadmin' from users where email = 'bench-admin@example.com'`,
);
const org = (
  await app.inject({
    method: 'POST',
    url: '/v1/organizations',
    headers: { authorization: `Bearer ${su}` },
    payload: { name: 'Bench', slug: 'bench' },
  })
).json().data;
const me = (await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${token}` } })).json().data;
await testDb.db.query(
  `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
  [me.id, org.id],
);

// The floor: same driver (pg Pool, same size), same JWT verification (no cache), one primary-key read.
const pool = new pg.Pool({ connectionString: testDb.url!, max: config.databasePoolMax });
pool.on('error', () => undefined); // clients dropped with the bench database at the end
const floor = Fastify();
floor.get('/v1/me', async (request, reply) => {
  const raw = (request.headers.authorization ?? '').slice(7);
  await jwtVerify(raw, issuer.keys, { issuer: issuer.issuer, audience: issuer.audience });
  const { rows } = await pool.query('select * from users where id = $1', [me.id]);
  return reply.send({ data: rows[0] });
});
const floorUrl = await floor.listen({ port: 0, host: '127.0.0.1' });

const headers = { authorization: `Bearer ${token}` };
await load(`${ours}/v1/me`, headers, 2);
await load(`${floorUrl}/v1/me`, headers, 2);
// Alternating rounds, median ratio: on a shared 2-core machine a single pair is at the mercy of
// whatever else runs during one of the two measurements.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const rounds: { f: LoadResult; a: LoadResult; statements: number }[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const f = await load(`${floorUrl}/v1/me`, headers, seconds);
  const before = counted.count();
  const a = await load(`${ours}/v1/me`, headers, seconds);
  rounds.push({ f, a, statements: (counted.count() - before) / Math.max(1, a.rps * seconds) });
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

console.log('\nGET /v1/me on PostgreSQL + Redis (loopback, 16 connections)');
rounds.forEach((r, i) => {
  console.log(row(`round ${i + 1} floor: Fastify + jose + pk read`, r.f));
  console.log(row(`round ${i + 1} core API GET /v1/me`, r.a));
});
console.log(`ratio (ours / floor), median of ${ROUNDS} rounds: ${median(rounds.map((r) => r.a.rps / r.f.rps)).toFixed(2)}   target >= 0.6`);
console.log(
  `database statements per request: ${median(rounds.map((r) => r.statements)).toFixed(2)}: a warm instance checks its cached request context with one`,
);
console.log('primary-key read of two version numbers (the full context statement runs only after a change);');
console.log('GET /v1/me needs no request transaction. Plus one Redis round trip for the per-IP limit at the entry of /v1.');
console.log('A route that reads data adds one pipelined write (BEGIN + scope + first query) and COMMIT: 3 round trips in all.');
console.log('The floor verifies the JWT on every request; the core API verifies once per token (bounded cache, architecture section 6).');

await app.close();
await floor.close();
await pool.end();
await rt.close();
await testDb.drop();
