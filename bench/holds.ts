// Holds on PostgreSQL (and Redis, as in production): 200 concurrent clients race for 20 slots
// (POST /v1/public/holds, 10 clients a slot), which must give exactly 20 holds and 180 answers of 409
// slot_unavailable, nothing else; the 20 winners then book (POST /v1/public/bookings). Then the
// throughput of hold + book: BENCH_CLIENTS clients (16), each holding a free slot and booking it, again
// and again, for BENCH_SECONDS (6), beside a floor measured in the same run: the same writes (a hold and
// its claim; then the appointment, the claim handed over and the hold converted) in two transactions on a
// bare pg Pool of the same size, with the same number of clients (no HTTP, no organization or slot
// checks, no consents, events or audit).
// Run: npx tsx bench/holds.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL). About 30
// seconds. BENCH_ROUNDS races (5).
import { createTestDatabase } from '@clinic/db';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { NO_RATE_LIMITS, benchSuperadmin, injector } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RACERS = 200;
const SLOTS = 20;
const SPECIALISTS = 5;
const ZONE = 'Europe/Bucharest';

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL,
  REDIS_KEY_PREFIX: `bench:${Date.now()}:`,
  ...NO_RATE_LIMITS,
});
const rt = await createRuntime(config, { db: testDb.db, devIssuer: issuer });
const app = await buildApp(rt);
const ours = await app.listen({ port: 0, host: '127.0.0.1' });

// The clinic, through the API: its privacy notice (a guest accepts it when booking), a location, five
// specialists bookable online working Monday to Saturday 08:00-20:00, a public 30-minute service on a
// 30-minute grid with no buffers (neighbouring slots do not meet).
const su = await benchSuperadmin(testDb.db, issuer);
const inject = injector(app);
const api = (method: string, url: string, token: string, body?: unknown, org?: string) => inject(method, url, token, org ?? null, body);
const org = await api('POST', '/v1/organizations', su, { name: 'Racing clinic', slug: 'racing' });
await api('POST', `/v1/organizations/${org.id}/consent-purposes/org_privacy_notice/versions`, su, {
  body_translations: { en: 'How this clinic processes your data.' },
});
const adminToken = await issuer.sign('bench-admin@example.com');
const me = await api('GET', '/v1/me', adminToken);
await testDb.db.query(
  `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
  [me.id, org.id],
);
const location = await api('POST', `/v1/organizations/${org.id}/locations`, adminToken, { name: 'Central', timezone: ZONE });
const specialists: string[] = [];
for (let i = 0; i < SPECIALISTS; i++) {
  const user = await api('GET', '/v1/me', await issuer.sign(`bench-spec-${i}@example.com`));
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
    { rules: [1, 2, 3, 4, 5, 6].map((weekday) => ({ location_id: location.id, weekday, start: '08:00', end: '20:00' })) },
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
    slot_interval_minutes: 30,
    price_minor: 20000,
    currency: 'RON',
    mode: 'in_person',
    is_public: true,
    max_days_ahead: 200,
    location_ids: [location.id],
    specialist_ids: specialists,
  },
  org.id,
);

// Every free slot of the next 180 days (three requests of 60 days), from a week ahead.
type Slot = { start: string; specialist_id: string };
const free: Slot[] = [];
const day0 = Date.now() + 7 * 86_400_000;
for (let k = 0; k < 3; k++) {
  const from = new Date(day0 + k * 60 * 86_400_000).toISOString().slice(0, 10);
  const to = new Date(day0 + (k * 60 + 59) * 86_400_000).toISOString().slice(0, 10);
  const res = await fetch(
    `${ours}/v1/public/availability?organization=racing&service_id=${service.id}&from=${from}&to=${to}&time_zone=${ZONE}`,
  );
  free.push(...((await res.json()) as { data: { slots: Slot[] } }).data.slots);
}
console.log(`seeded ${SPECIALISTS} specialists, ${free.length} free slots in ${((Date.now() - started) / 1000).toFixed(1)} s`);

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${ours}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};
const hold = (slot: Slot) =>
  post('/v1/public/holds', { organization: org.id, service_id: service.id, specialist_id: slot.specialist_id, start: slot.start });
const book = (h: { id: string; secret: string }, i: number) =>
  post('/v1/public/bookings', {
    organization: org.id,
    hold_id: h.id,
    secret: h.secret,
    name: `Guest ${i}`,
    email: `guest-${i}@example.test`,
    consents: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }],
  });

// The race: 200 clients at once, 10 on each of 20 slots.
let next = 0;
let guests = 0;
console.log(`\n${RACERS} concurrent clients racing for ${SLOTS} slots (POST /v1/public/holds), ${ROUNDS} rounds`);
for (let round = 1; round <= ROUNDS; round++) {
  const slots = free.slice(next, next + SLOTS);
  next += SLOTS;
  const t0 = performance.now();
  const answers = await Promise.all(Array.from({ length: RACERS }, (_, i) => hold(slots[i % SLOTS]!)));
  const ms = performance.now() - t0;
  const won = answers.filter((a) => a.status === 201);
  const lost = answers.filter((a) => a.status === 409 && a.body.error?.code === 'slot_unavailable');
  const other = answers.filter((a) => a.status !== 201 && !(a.status === 409 && a.body.error?.code === 'slot_unavailable'));
  const perSlot = new Set(won.map((a) => `${a.body.data.specialist_id} ${a.body.data.start}`));
  const live = (
    await testDb.db.query<{ n: number }>(
      `select count(*)::int as n from holds where organization_id = $1 and status = 'live' and starts_at = any($2::timestamptz[])`,
      [org.id, slots.map((s) => s.start)],
    )
  ).rows[0]!.n;
  const booked = await Promise.all(won.map((a) => book(a.body.data, guests++)));
  const ok = won.length === SLOTS && perSlot.size === SLOTS && lost.length === RACERS - SLOTS && other.length === 0 && live === SLOTS;
  console.log(
    `round ${round}: ${won.length} holds (${perSlot.size} distinct slots, ${live} live in the database), ${lost.length} x 409 slot_unavailable, ${other.length} other answers, in ${ms.toFixed(0)} ms; ${booked.filter((b) => b.status === 201).length} of the ${won.length} booked   ${ok ? 'ok' : 'FAILED'}`,
  );
  if (!ok) {
    console.log(other.slice(0, 5).map((a) => `${a.status} ${JSON.stringify(a.body).slice(0, 200)}`));
    process.exitCode = 1;
  }
}

// Throughput: each client holds the next free slot and books it, until the time is up.
async function run(
  pair: (slot: Slot, i: number) => Promise<boolean>,
  seconds = SECONDS,
): Promise<{ pairs: number; failed: number; seconds: number }> {
  let pairs = 0;
  let failed = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end && next < free.length) {
        const slot = free[next++]!;
        if (await pair(slot, guests++)) pairs++;
        else failed++;
      }
    }),
  );
  return { pairs, failed, seconds: (performance.now() - t0) / 1000 };
}

// The floor's writes: what a hold and a booking change, nothing else.
// jit off as on the API's connections (packages/db).
const pool = new pg.Pool({ connectionString: testDb.url!, max: config.databasePoolMax, options: '-c jit=off' });
const calendars = new Map(
  (
    await pool.query<{ id: string; specialist_id: string }>('select id, specialist_id from calendars where organization_id = $1', [org.id])
  ).rows.map((r) => [r.specialist_id, r.id]),
);
async function floorPair(slot: Slot, i: number): Promise<boolean> {
  const start = new Date(slot.start);
  const end = new Date(start.getTime() + 30 * 60_000);
  const c = await pool.connect();
  try {
    await c.query('begin');
    const h = await c.query<{ id: string; expires_at: Date }>(
      `insert into holds (organization_id, service_id, specialist_id, location_id, starts_at, ends_at, secret_hash, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, now() + interval '10 minutes') returning id, expires_at`,
      [org.id, service.id, slot.specialist_id, location.id, start, end, '0'.repeat(64)],
    );
    await c.query(
      'insert into calendar_claims (organization_id, calendar_id, during, hold_id, expires_at) values ($1, $2, tstzrange($3, $4), $5, $6)',
      [org.id, calendars.get(slot.specialist_id), start, end, h.rows[0]!.id, h.rows[0]!.expires_at],
    );
    await c.query('commit');
    await c.query('begin');
    const a = await c.query<{ id: string }>(
      `insert into appointments (organization_id, service_id, specialist_id, location_id, starts_at, ends_at, mode, source, guest_name, guest_email)
       values ($1, $2, $3, $4, $5, $6, 'in_person', 'guest', $7, $8) returning id`,
      [org.id, service.id, slot.specialist_id, location.id, start, end, `Guest ${i}`, `guest-${i}@example.test`],
    );
    await c.query(
      'update calendar_claims set appointment_id = $3, hold_id = null, expires_at = null where organization_id = $1 and hold_id = $2',
      [org.id, h.rows[0]!.id, a.rows[0]!.id],
    );
    await c.query(`update holds set status = 'converted', ended_at = now(), appointment_id = $3 where organization_id = $1 and id = $2`, [
      org.id,
      h.rows[0]!.id,
      a.rows[0]!.id,
    ]);
    await c.query('commit');
    return true;
  } catch {
    await c.query('rollback');
    return false;
  } finally {
    c.release();
  }
}
async function apiPair(slot: Slot, i: number): Promise<boolean> {
  const h = await hold(slot);
  if (h.status !== 201) return false;
  return (await book(h.body.data, i)).status === 201;
}

// Warm both sides for a second, then measure.
await run(floorPair, 1);
await run(apiPair, 1);
const f = await run(floorPair);
const a = await run(apiPair);
const rate = (r: { pairs: number; seconds: number }) => r.pairs / r.seconds;
console.log(`\nhold + book, ${CLIENTS} clients, ${SECONDS} s each (PostgreSQL + Redis, loopback)`);
console.log(`floor: the same writes, bare pg Pool      ${rate(f).toFixed(0).padStart(6)} pairs/s   failed ${f.failed}`);
console.log(
  `core API (POST holds, POST bookings)      ${rate(a).toFixed(0).padStart(6)} pairs/s = ${(2 * rate(a)).toFixed(0)} req/s   failed ${a.failed}`,
);
console.log(`ratio (ours / floor): ${(rate(a) / rate(f)).toFixed(2)}   reported`);
if (next >= free.length) console.log('(ran out of free slots: raise the range or lower BENCH_SECONDS)');
console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);

await app.close();
await pool.end();
await rt.close();
await testDb.drop();
