// GET /v1/public/availability on PostgreSQL for one service and 10 specialists over 31 days with 2,000
// booked appointments (and 50 live holds), beside a floor measured in the same run: a bare Fastify route
// that sends the very free-slots statement the API sent (captured from it: same text, parameters and
// prepared-statement name) through a pg Pool of the same size, as the owner (no organization lookup, no
// service lookup, no transaction, no local times). Prints the median latency of one request at a time
// (target under 20 ms) and requests per second under load with the ratio to the floor (target >= 0.7).
// Run: npx tsx bench/availability.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL). About
// 40 seconds. BENCH_SECONDS per load measurement (6), BENCH_SEQUENTIAL requests one at a time (200),
// BENCH_EXPLAIN=1 to print the statement's plan (EXPLAIN ANALYZE).
import { createTestDatabase, type Database, type Queryable } from '@clinic/db';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { NO_RATE_LIMITS, benchSuperadmin, injector, load, row } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 200);
const SPECIALISTS = 10;
const APPOINTMENTS = 2000;
const DAYS = 31;
const ZONE = 'Europe/Bucharest';

/** Remembers the free-slots statement of the latest request: the floor replays it verbatim. */
function capturing(db: Database): { db: Database; last: () => { text: string; params: unknown[]; name?: string | undefined } } {
  let last: { text: string; params: unknown[]; name?: string | undefined } = { text: '', params: [] };
  const wrap = (tx: Queryable): Queryable => ({
    query: (text, params, opts) => {
      if (opts?.name === 'free_slots') last = { text, params: [...(params ?? [])], name: opts.name };
      return tx.query(text, params, opts);
    },
  });
  return { db: { ...db, kind: db.kind, withScope: (s, fn) => db.withScope(s, (tx) => fn(wrap(tx))) }, last: () => last };
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
  ...NO_RATE_LIMITS,
});
const rt = await createRuntime(config, { db: captured.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });

// The clinic, through the API: a location, 10 specialists bookable online working Monday to Friday
// 08:00-18:00 and Saturday 09:00-13:00, a public 30-minute service with 10 minutes after, on a 15-minute grid.
const su = await benchSuperadmin(testDb.db, issuer);
const inject = injector(app);
const api = (method: string, url: string, token: string, body?: unknown, org?: string) => inject(method, url, token, org ?? null, body);
const org = await api('POST', '/v1/organizations', su, { name: 'Busy clinic', slug: 'busy' });
const adminToken = await issuer.sign('bench-admin@example.com');
const me = await api('GET', '/v1/me', adminToken);
await testDb.db.query(
  `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
  [me.id, org.id],
);
const location = await api('POST', `/v1/organizations/${org.id}/locations`, adminToken, { name: 'Central', timezone: ZONE });
const specialists: string[] = [];
for (let i = 0; i < SPECIALISTS; i++) {
  const email = `bench-spec-${i}@example.com`;
  const user = await api('GET', '/v1/me', await issuer.sign(email));
  await testDb.db.query(
    `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'specialist'`,
    [user.id, org.id],
  );
  const s = await api(
    'POST',
    '/v1/specialists',
    adminToken,
    { user_id: user.id, display_name: `Dr ${i}`, bookable_online: true, location_ids: [location.id] },
    org.id,
  );
  await api(
    'PUT',
    `/v1/specialists/${s.id}/availability`,
    adminToken,
    {
      rules: [
        ...[1, 2, 3, 4, 5].map((weekday) => ({ location_id: location.id, weekday, start: '08:00', end: '18:00' })),
        { location_id: location.id, weekday: 6, start: '09:00', end: '13:00' },
      ],
    },
    org.id,
  );
  specialists.push(s.id);
}
const service = await api(
  'POST',
  '/v1/services',
  adminToken,
  {
    name: 'Consultation',
    duration_minutes: 30,
    buffer_after_minutes: 10,
    slot_interval_minutes: 15,
    price_minor: 20000,
    currency: 'RON',
    mode: 'in_person',
    is_public: true,
    max_days_ahead: 120,
    location_ids: [location.id],
    specialist_ids: specialists,
  },
  org.id,
);

// The range: 31 days from the Monday at least a week ahead.
const first = new Date(Date.now() + 7 * 86_400_000);
while (first.getUTCDay() !== 1) first.setUTCDate(first.getUTCDate() + 1);
const from = first.toISOString().slice(0, 10);
const to = new Date(first.getTime() + (DAYS - 1) * 86_400_000).toISOString().slice(0, 10);

// 2,000 appointments (200 a specialist) on free 30-minute slots of the grid, with their claims (slot plus
// 10 minutes after), spread over the range; 50 live holds besides. Picked from the API's own slots, so
// that they lie inside the availability and never overlap.
const all = (
  await app.inject({
    method: 'GET',
    url: `/v1/public/availability?organization=busy&service_id=${service.id}&from=${from}&to=${to}&time_zone=${ZONE}`,
  })
).json().data.slots as { start: string; end: string; specialist_id: string }[];
const picks: { specialist: string; start: number; end: number }[] = [];
const perSpecialist = APPOINTMENTS / SPECIALISTS;
let seed = 7;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};
for (const specialist of specialists) {
  const mine = all.filter((s) => s.specialist_id === specialist);
  const used: number[] = [];
  let n = 0;
  for (let tries = 0; n < perSpecialist + 5 && tries < 100_000; tries++) {
    const s = mine[Math.floor(random() * mine.length)]!;
    const start = Date.parse(s.start);
    // The claim is [start, end + 10 min): keep 40 minutes between starts.
    if (used.some((u) => Math.abs(u - start) < 40 * 60_000)) continue;
    used.push(start);
    picks.push({ specialist, start, end: Date.parse(s.end) });
    n++;
  }
}
const booked = picks.filter((_, i) => i % (perSpecialist + 5) < perSpecialist);
const holds = picks.filter((_, i) => i % (perSpecialist + 5) >= perSpecialist);
await testDb.db.transaction(async (tx) => {
  await tx.query(`set local statement_timeout = 0`);
  await tx.query(
    `with a as (
       insert into appointments (organization_id, service_id, specialist_id, location_id, starts_at, ends_at, buffer_after_minutes, mode, source, guest_name, guest_email)
       select $1, $2, s, $3, b, e, 10, 'in_person', 'guest', 'Guest', 'guest@example.test'
       from unnest($4::uuid[], $5::timestamptz[], $6::timestamptz[]) as x(s, b, e)
       returning id, specialist_id, starts_at, ends_at
     )
     insert into calendar_claims (organization_id, calendar_id, during, appointment_id)
     select $1, c.id, tstzrange(a.starts_at, a.ends_at + interval '10 minutes'), a.id
     from a join calendars c on c.organization_id = $1 and c.specialist_id = a.specialist_id`,
    [
      org.id,
      service.id,
      location.id,
      booked.map((p) => p.specialist),
      booked.map((p) => new Date(p.start)),
      booked.map((p) => new Date(p.end)),
    ],
  );
  await tx.query(
    `with h as (
       insert into holds (organization_id, service_id, specialist_id, location_id, starts_at, ends_at, secret_hash, expires_at)
       select $1, $2, s, $3, b, e, repeat('0', 64), now() + interval '1 day'
       from unnest($4::uuid[], $5::timestamptz[], $6::timestamptz[]) as x(s, b, e)
       returning id, specialist_id, starts_at, ends_at, expires_at
     )
     insert into calendar_claims (organization_id, calendar_id, during, hold_id, expires_at)
     select $1, c.id, tstzrange(h.starts_at, h.ends_at + interval '10 minutes'), h.id, h.expires_at
     from h join calendars c on c.organization_id = $1 and c.specialist_id = h.specialist_id`,
    [
      org.id,
      service.id,
      location.id,
      holds.map((p) => p.specialist),
      holds.map((p) => new Date(p.start)),
      holds.map((p) => new Date(p.end)),
    ],
  );
});
await testDb.db.query('vacuum analyze');
console.log(
  `seeded ${SPECIALISTS} specialists, ${booked.length} appointments and ${holds.length} live holds over ${from}..${to} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);

const url = `${ours}/v1/public/availability?organization=busy&service_id=${service.id}&from=${from}&to=${to}&time_zone=${ZONE}`;
const check = await fetch(url);
const body = (await check.json()) as { data: { slots: unknown[] } };
if (check.status !== 200) throw new Error(`availability: ${check.status} ${JSON.stringify(body).slice(0, 300)}`);
const slots = body.data.slots.length;
const statement = captured.last();
if (!statement.text) throw new Error('the free-slots statement was not captured');

// The floor: the same statement, parameters and prepared name, same driver and pool size, in a bare route.
// jit off as on the API's connections (packages/db).
const pool = new pg.Pool({ connectionString: testDb.url!, max: config.databasePoolMax, options: '-c jit=off' });
const floor = Fastify();
floor.get('/floor', async (_request, reply) => {
  const { rows } = await pool.query({ text: statement.text, values: statement.params, name: statement.name });
  return reply.send({ data: { slots: rows } });
});
const floorUrl = `${await floor.listen({ port: 0, host: '127.0.0.1' })}/floor`;
const floorCount = ((await (await fetch(floorUrl)).json()) as { data: { slots: unknown[] } }).data.slots.length;
if (floorCount !== slots) throw new Error(`the floor answers ${floorCount} slots, the API ${slots}`);

if (process.env.BENCH_EXPLAIN) {
  const plan = await pool.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers, costs off) ${statement.text}`, statement.params);
  console.log(`\n--- the free-slots statement (as the floor runs it)\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
}

/** One request at a time: the median and p95 latency in milliseconds. */
async function sequential(target: string, n: number): Promise<{ p50: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(target);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${target}: ${res.status}`);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(n / 2)]!, p95: times[Math.floor(n * 0.95)]! };
}

const jit = (await testDb.db.query<{ jit: string }>('show jit')).rows[0]!.jit;
console.log(
  `\nGET /v1/public/availability: 1 service, ${SPECIALISTS} specialists, ${DAYS} days, ${booked.length} appointments, ${slots} free slots in the answer (PostgreSQL + Redis, loopback, jit ${jit})`,
);
await sequential(floorUrl, 20);
await sequential(url, 20);
const fs = await sequential(floorUrl, SEQUENTIAL);
const as = await sequential(url, SEQUENTIAL);
console.log(`\none request at a time (${SEQUENTIAL} each)`);
console.log(`floor: same SQL, bare pg Pool                 p50 ${fs.p50.toFixed(2)} ms   p95 ${fs.p95.toFixed(2)} ms`);
console.log(`core API (public route, transaction)          p50 ${as.p50.toFixed(2)} ms   p95 ${as.p95.toFixed(2)} ms   target p50 < 20 ms`);

await load(floorUrl, {}, 1);
await load(url, {}, 1);
const f = await load(floorUrl, {}, SECONDS);
const a = await load(url, {}, SECONDS);
console.log(`\nunder load (16 connections, ${SECONDS} s each)`);
console.log(row('floor: same SQL, bare pg Pool', f));
console.log(row('core API (public route, transaction)', a));
console.log(`ratio (ours / floor): ${(a.rps / f.rps).toFixed(2)}   target >= 0.7`);
console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);

await app.close();
await floor.close();
await pool.end();
await rt.close();
await testDb.drop();
