// The clinical directory's lists on PostgreSQL (and Redis, as in production) for a large clinic, each beside a
// floor measured in the same run:
//   - GET /v1/patients in an organization of BENCH_PATIENTS patients (100,000; plus 20,000 at another
//     organization): page 1 (newest first), page 1 by last name, a search by email and a search by surname;
//   - GET /v1/specialists (BENCH_SPECIALISTS, 2,000, each with specialties and a location) and
//     GET /v1/services (BENCH_SERVICES, 1,000, each with locations and specialists), page 1.
// The floor is a bare Fastify route that sends the very statements the API sent for that request (captured
// from it: same texts, parameters and prepared-statement names) through a pg Pool of the same size and settings (jit off), as the
// owner: no row-level security, no authentication, no request transaction. It is measured twice: one
// statement at a time (as bench/lists.ts and bench/forms.ts do), and batched as the API sent them (the
// statements the API pipelined, pipelined on one connection), which leaves only the platform's own cost. Its connections carry the caller's organization and permissions as
// session settings, so that functions that read them (app.patient_search) do the same work as for the caller.
// Prints requests per second, p50/p99 and the ratio per scenario (targets: ratio >= 0.7, floor >= 1,000 req/s).
// Run: npx tsx bench/directory.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL; loopback only).
// About two minutes. BENCH_SECONDS per measurement (6), BENCH_EXPLAIN=1 to print every statement's plan as
// the caller (its role and settings, row-level security) and as the floor, BENCH_ONLY=<scenario number>.
import { createTestDatabase, type Queryable } from '@clinic/db';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { Redis } from 'ioredis';
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
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 100_000);
const SPECIALISTS = Number(process.env.BENCH_SPECIALISTS ?? 2_000);
const SERVICES = Number(process.env.BENCH_SERVICES ?? 1_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
for (const url of [ADMIN_URL, REDIS_URL]) {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) throw new Error(`${url}: benchmarks run on loopback only`);
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

const su = await benchSuperadmin(testDb.db, issuer);
const inject = injector(app);
const org = await inject('POST', '/v1/organizations', su, null, { name: 'Big clinic', slug: 'big-directory' });
const other = await inject('POST', '/v1/organizations', su, null, { name: 'Other clinic', slug: 'other-directory' });
// The caller: an admin of the organization, on app_rls like every clinic admin.
const token = await issuer.sign('bench-admin@example.com');
const me = await inject('GET', '/v1/me', token, null);
await testDb.db.query(
  `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
  [me.id, org.id],
);

// Names as a clinic has them: 60 first names and 1,517 surnames (37 x 41 syllables, about 66 patients
// each in 100,000), an email made of them at one of six providers, a phone number, a birth date; one
// patient a second in the order they were registered.
const FIRST = `{Anna,Ben,Carla,David,Eva,Farid,Greta,Hugo,Ines,Jonas,Karin,Liam,Mona,Nils,Olga,Paul,Rita,Sven,Tara,Uwe,Vera,Willem,Yara,Zoe,
  Amir,Bianca,Chen,Dana,Emil,Fatima,Gustav,Hana,Ivan,Julia,Kofi,Lena,Mateo,Nora,Omar,Pia,Quentin,Rosa,Sami,Tilda,Umar,Vivian,
  Wanda,Xaver,Yusuf,Zara,Alma,Bruno,Clara,Dario,Elif,Felix,Gemma,Hassan,Ida,Jakob}`.replace(/\s+/g, '');
const PREFIX =
  '{Adler,Bauer,Berg,Brandt,Cohen,Dahl,Eck,Falk,Fischer,Gold,Graf,Hahn,Hart,Holm,Jung,Kaiser,Keller,Klein,Koch,Krause,Lang,Lind,Marsh,Meyer,Moser,Nagel,Ost,Pohl,Rau,Roth,Sand,Schulz,Stein,Thal,Vogt,Wolf,Zimmer}';
const SUFFIX =
  '{berg,mann,feld,ström,wald,hoff,lund,stedt,ner,sen,dorf,haus,bach,ton,ley,by,well,worth,ford,more,field,wood,ham,land,stone,brook,dale,gard,holt,kamp,rath,rode,ski,ova,elli,ini,etti,quist,vik,nes,strand}';
const seedPatients = async (tx: Queryable, orgId: string, n: number, offset: number) =>
  tx.query(
    `with names as (
       select i, ($3::text[])[1 + i % 60] as first_name,
              ($4::text[])[1 + (i * 7) % 37] || ($5::text[])[1 + (i / 37 * 11) % 41] as last_name
       from generate_series($6::int + 1, $6::int + $2::int) i
     ), people as (
       select *, format('%s.%s.%s@%s', lower(first_name), lower(last_name), i,
                        (array['mailbox.example', 'post.example', 'inbox.example', 'web.example', 'clinic-mail.example', 'letters.example'])[1 + i % 6]) as email
       from names
     ), u as (
       insert into users (email, created_at)
       select email, now() - ($6::int + $2::int - i) * interval '1 second' from people order by i
       returning id, email, created_at
     )
     insert into patients (organization_id, user_id, first_name, last_name, date_of_birth, phone, created_at)
     select $1, u.id, p.first_name, p.last_name, date '1940-01-01' + (p.i * 37) % 29000,
            format('+44 %s %s', 7000 + (p.i * 7919) % 1000, lpad(((p.i::bigint * 104729) % 1000000)::text, 6, '0')), u.created_at
     from u join people p on p.email = u.email`,
    [orgId, n, FIRST, PREFIX, SUFFIX, offset],
  );
await testDb.db.transaction(async (tx) => {
  // A bulk load, not a request: the 5-second statement limit of the pool does not apply.
  await tx.query('set local statement_timeout = 0');
  await seedPatients(tx, org.id, PATIENTS, 0);
  await seedPatients(tx, other.id, 20_000, PATIENTS);
});

// Specialists (staff members with a profile, two specialties and a location each) and services (two
// locations and three specialists each).
await testDb.db.transaction(async (tx) => {
  await tx.query('set local statement_timeout = 0');
  await tx.query(
    `insert into specialties (organization_id, code, name) select $1, 'specialty-' || i, 'Specialty ' || i from generate_series(1, 20) i`,
    [org.id],
  );
  await tx.query(
    `insert into locations (organization_id, name, timezone, city) select $1, 'Site ' || i, 'Europe/Berlin', 'Berlin' from generate_series(1, 10) i`,
    [org.id],
  );
  await tx.query(
    `with u as (
       insert into users (email) select format('specialist-%s@staff.example', i) from generate_series(1, $2::int) i returning id, email
     ), m as (
       insert into memberships (user_id, organization_id, role_id)
       select u.id, $1, (select id from roles where organization_id = $1 and code = 'specialist') from u returning user_id
     )
     insert into specialists (organization_id, user_id, display_name, title, contact_email, languages, bookable_online)
     select $1, m.user_id, 'Dr ' || split_part(u.email, '@', 1), 'Consultant', u.email, '{en,de}', true from m join u on u.id = m.user_id`,
    [org.id, SPECIALISTS],
  );
  await tx.query(
    `insert into specialist_specialties (organization_id, specialist_id, specialty_id)
     select s.organization_id, s.id, sp.id from (select *, row_number() over (order by id) n from specialists where organization_id = $1) s
     join (select *, row_number() over (order by id) n from specialties where organization_id = $1) sp on sp.n in (1 + s.n % 20, 1 + (s.n + 7) % 20)`,
    [org.id],
  );
  await tx.query(
    `insert into specialist_locations (organization_id, specialist_id, location_id)
     select s.organization_id, s.id, l.id from (select *, row_number() over (order by id) n from specialists where organization_id = $1) s
     join (select *, row_number() over (order by id) n from locations where organization_id = $1) l on l.n = 1 + s.n % 10`,
    [org.id],
  );
  await tx.query(
    `insert into services (organization_id, name, duration_minutes, price_minor, currency, mode, is_public)
     select $1, 'Service ' || i, 30 + 15 * (i % 4), 5000 + i, 'EUR', (array['in_person', 'video', 'phone'])[1 + i % 3], i % 2 = 0
     from generate_series(1, $2::int) i`,
    [org.id, SERVICES],
  );
  await tx.query(
    `insert into service_locations (organization_id, service_id, location_id)
     select sv.organization_id, sv.id, l.id from (select *, row_number() over (order by id) n from services where organization_id = $1) sv
     join (select *, row_number() over (order by id) n from locations where organization_id = $1) l on l.n in (1 + sv.n % 10, 1 + (sv.n + 3) % 10)`,
    [org.id],
  );
  await tx.query(
    `insert into service_specialists (organization_id, service_id, specialist_id)
     select sv.organization_id, sv.id, s.id from (select *, row_number() over (order by id) n from services where organization_id = $1) sv
     join (select *, row_number() over (order by id) n from specialists where organization_id = $1) s
       on s.n in (1 + (sv.n * 3) % $2::int, 1 + (sv.n * 3 + 1) % $2::int, 1 + (sv.n * 3 + 2) % $2::int)`,
    [org.id, SPECIALISTS],
  );
});
await testDb.db.query('vacuum analyze');
console.log(
  `seeded ${PATIENTS} patients (+20000 elsewhere), ${SPECIALISTS} specialists, ${SERVICES} services in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);

const headers = { authorization: `Bearer ${token}`, 'x-organization-id': org.id };
const scope = captured.scope;
const permissions: string[] = (await inject('GET', '/v1/me', token, org.id)).current_permissions;

// The floor: the same statements, batched as the API sent them, on a pool of the same size and settings.
const setting = (v: string) => v.replace(/[\\ ]/g, '\\$&');
const pool = new pg.Pool({
  connectionString: testDb.url!,
  max: config.databasePoolMax,
  pipeline: true,
  options: `-c jit=off -c app.org_id=${org.id} -c app.principal_id=${me.id} -c app.permissions=${setting(permissions.join(','))}`,
} as pg.PoolConfig);
const floorSql = new Map<string, Statement[][]>();
const floor = Fastify();
// One statement at a time, each on whichever connection the pool gives (the floor of bench/lists.ts and
// bench/forms.ts), or batched as the API sent them, each batch in one round trip on one connection.
floor.get('/floor/:scenario/:mode', async (request) => {
  const { scenario, mode } = request.params as { scenario: string; mode: 'sequential' | 'batched' };
  return { data: await replay(pool, floorSql.get(scenario)!, mode) };
});
const floorUrl = await floor.listen({ port: 0, host: '127.0.0.1' });

/** BENCH_EXPLAIN=1: each captured statement's plan as the caller (its role and settings) and as the floor. */
async function explain(name: string, batches: Statement[][]): Promise<void> {
  for (const s of batches.flat()) {
    const text = `explain (analyze, costs off, timing off, summary on) ${s.text}`;
    const asCaller = await testDb.db.withScope(scope(), async (tx) => {
      await tx.query('set local jit = off');
      return tx.query<{ 'QUERY PLAN': string }>(text, s.params);
    });
    const asFloor = await pool.query<{ 'QUERY PLAN': string }>(text, s.params);
    for (const [who, plan] of [
      [`core API (${scope().role})`, asCaller.rows],
      ['floor', asFloor.rows],
    ] as const) {
      console.log(
        `\n--- ${name}: ${s.text.replace(/\s+/g, ' ').slice(0, 100)}\n    plan as ${who}\n${plan
          .map((r) => r['QUERY PLAN'])
          .filter((l) => !/InitPlan|-> +Result \(actual rows=1 loops=1\)|Result \(never executed\)/.test(l))
          .join('\n')}`,
      );
    }
  }
}

// A patient in the middle of the list, found by the local part of its email; and its surname.
const probe = (
  await testDb.db.query<{ email: string; last_name: string }>(
    `select u.email, p.last_name from patients p join users u on u.id = p.user_id where p.organization_id = $1 order by p.created_at offset $2 limit 1`,
    [org.id, Math.floor(PATIENTS / 2)],
  )
).rows[0]!;
const countOf = async (sql: string, params: unknown[]) => (await testDb.db.query<{ n: number }>(sql, params)).rows[0]!.n;
const live = `select count(*)::int as n from patients where organization_id = $1 and deleted_at is null`;
const scenarios = [
  { name: 'GET /v1/patients page 1 (newest first)', url: '/v1/patients', total: await countOf(live, [org.id]) },
  { name: 'GET /v1/patients page 1 by last name', url: '/v1/patients?sort=last_name', total: await countOf(live, [org.id]) },
  {
    name: `GET /v1/patients?q=<email local part> ("${probe.email.split('@')[0]}")`,
    url: `/v1/patients?q=${encodeURIComponent(probe.email.split('@')[0]!)}`,
    total: 1,
  },
  {
    name: `GET /v1/patients?q=<surname> ("${probe.last_name}")`,
    url: `/v1/patients?q=${encodeURIComponent(probe.last_name)}`,
    total: await countOf(`${live} and last_name ilike $2`, [org.id, `%${probe.last_name}%`]),
  },
  { name: 'GET /v1/specialists page 1', url: '/v1/specialists', total: SPECIALISTS },
  { name: 'GET /v1/services page 1', url: '/v1/services', total: SERVICES },
  // The clinic app's windowed list reads pages of 100 where the view is: the middle and the end (End key).
  {
    name: 'GET /v1/patients by last name, limit 100, the middle page (the clinic app scrolled halfway)',
    url: `/v1/patients?sort=last_name&limit=100&page=${Math.floor(PATIENTS / 200)}`,
    total: await countOf(live, [org.id]),
    rows: 100,
  },
  {
    name: 'GET /v1/patients by last name, limit 100, the last page (the clinic app after End)',
    url: `/v1/patients?sort=last_name&limit=100&page=${Math.ceil(PATIENTS / 100)}`,
    total: await countOf(live, [org.id]),
    rows: PATIENTS % 100 || 100,
  },
];

/** The backends of the benchmark's database (both pools), for the CPU figures. */
const backends = async () =>
  (await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).rows.map((r) => r.pid);
const redis = new Redis(REDIS_URL);
const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]) || undefined;
await redis.quit();

const only = process.env.BENCH_ONLY ? Number(process.env.BENCH_ONLY) : null;
console.log(
  `\n${PATIENTS} patients, PostgreSQL + Redis on loopback, ${config.databasePoolMax} connections each side, 16 HTTP connections, ${SECONDS} s each`,
);
for (const [i, s] of scenarios.entries()) {
  if (only !== null && only !== i + 1) continue;
  const first = await fetch(`${ours}${s.url}`, { headers });
  const body = (await first.json()) as { data: unknown[]; pagination: { total: number } };
  if (first.status !== 200 || body.pagination.total !== s.total || body.data.length !== ('rows' in s ? s.rows : Math.min(50, s.total))) {
    throw new Error(`unexpected answer for ${s.url} (total ${s.total}): ${first.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  floorSql.set(String(i), captured.last());
  if (process.env.BENCH_EXPLAIN) await explain(s.name, captured.last());
  await load(`${ours}${s.url}`, headers, 1);
  await load(`${floorUrl}/floor/${i}/batched`, {}, 1);
  const measure = async (url: string, h: Record<string, string>): Promise<[LoadResult, string]> => {
    const stop = cpuMeter(await backends(), redisPid);
    const r = await load(url, h, SECONDS);
    return [r, stop()(r.requests)];
  };
  const [a, aCpu] = await measure(`${ours}${s.url}`, headers);
  const [seq, seqCpu] = await measure(`${floorUrl}/floor/${i}/sequential`, {});
  const [bat, batCpu] = await measure(`${floorUrl}/floor/${i}/batched`, {});
  const batches = floorSql.get(String(i))!;
  console.log(`\n${i + 1}. ${s.name}: total ${s.total}, ${batches.flat().length} statements, sent in ${batches.length} round trip(s)`);
  console.log(`${row('floor: same SQL, one statement at a time', seq)}\n${' '.repeat(46)}${seqCpu}`);
  console.log(`${row('floor: same SQL, batched as the API sent it', bat)}\n${' '.repeat(46)}${batCpu}`);
  console.log(`${row('core API (auth, RLS, transaction)', a)}\n${' '.repeat(46)}${aCpu}`);
  console.log(
    `ratio (ours / floor): ${(a.rps / seq.rps).toFixed(2)}, against the batched floor ${(a.rps / bat.rps).toFixed(2)}   targets: ratio >= 0.7, floor >= 1000 req/s`,
  );
}
console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);

await app.close();
await floor.close();
await pool.end();
await rt.close();
await testDb.drop();
