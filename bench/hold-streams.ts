// 1,000 open hold streams (GET /v1/public/holds/{id}/stream) on one core API instance: memory per
// stream, and the time from a DELETE /v1/public/holds/{id} to the `released` event of every stream that
// follows the hold, beside a floor measured in the same run.
//   ours:  instance A serves the streams; instance B, on the same database, takes the DELETEs, so the
//          change reaches A the way it does in production (PostgreSQL: the trigger's NOTIFY on A's one
//          listening connection; PGlite: the in-process bus). Two shapes:
//          fan-out     1,000 streams of one hold, one DELETE: time until the last stream has `released`;
//          many holds  1,000 holds with one stream each, DELETEs sent 50 at a time: each stream's time from
//                      its DELETE to its `released`, and from the first DELETE to the last `released`.
//   floor: a bare node:http server that keeps 1,000 text/event-stream responses, writes the same first
//          event, and on a function call writes the final event to every one and ends it (no Fastify,
//          no database, no feed): what the sockets themselves cost and take.
// The streams are read by a child process (node:http, one socket each), so the memory measured here
// (heap and RSS after a full GC, before and with the streams open) is the server's alone. The holds
// are written straight into the table (placing 1,000 through the API is another benchmark's subject).
// Loopback only, bounded: everything ends when the streams have.
// Run: npx tsx bench/hold-streams.ts (PostgreSQL at BENCH_DATABASE_URL); BENCH_DB=pglite for the
// embedded default; BENCH_STREAMS (1000).
import { type ChildProcess, fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { NO_RATE_LIMITS } from './support.ts';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const CONCURRENCY = 50;
const now = () => performance.timeOrigin + performance.now();

// ---- The reader: a child process holding the client side of every stream. ----

interface ReaderOpen {
  cmd: 'open';
  base: string;
  paths: string[];
}
interface Final {
  i: number;
  at: number;
  event: string;
}

async function reader() {
  let streams: { req: http.ClientRequest; final: Final | null }[] = [];
  let waiting: (() => void) | null = null;
  const settled = () => streams.every((s) => s.final);
  const openOne = (base: string, path: string, i: number) =>
    new Promise<void>((resolve, reject) => {
      const entry = { req: null as unknown as http.ClientRequest, final: null as Final | null };
      entry.req = http.get(`${base}${path}`, { agent: false }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${i}: ${res.statusCode}`));
        res.setEncoding('utf8');
        let tail = '';
        let first = false;
        res.on('data', (chunk: string) => {
          tail = (tail + chunk).slice(-200);
          if (!first && tail.includes('event: remaining')) {
            first = true;
            resolve();
          }
          const m = /event: (released|converted|expired)\n/.exec(tail);
          if (m && !entry.final) {
            entry.final = { i, at: now(), event: m[1]! };
            if (waiting && settled()) waiting();
          }
        });
        res.on('close', () => {
          if (!first) reject(new Error(`stream ${i} ended before its first event`));
        });
      });
      entry.req.on('error', reject);
      streams.push(entry);
    });
  process.on('message', async (msg: ReaderOpen | { cmd: 'finals' } | { cmd: 'exit' }) => {
    if (msg.cmd === 'open') {
      streams = [];
      const t0 = now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < msg.paths.length) {
            const i = next++;
            await openOne(msg.base, msg.paths[i]!, i);
          }
        }),
      );
      process.send!({ cmd: 'opened', ms: now() - t0 });
    } else if (msg.cmd === 'finals') {
      if (!settled()) await new Promise<void>((r) => (waiting = r));
      waiting = null;
      process.send!({ cmd: 'finals', finals: streams.map((s) => s.final) });
    } else process.exit(0);
  });
  process.send!({ cmd: 'ready' });
}

// ---- The server side and the measurements. ----

function ask<T>(child: ChildProcess, msg: object, answer: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const on = (m: { cmd: string }) => {
      if (m.cmd !== answer) return;
      child.off('message', on);
      child.off('exit', fail);
      resolve(m as T);
    };
    const fail = (code: number) => reject(new Error(`reader exited (${code})`));
    child.on('message', on);
    child.once('exit', fail);
    child.send(msg);
  });
}

function memory() {
  const gc = vm.runInNewContext('gc') as () => void;
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed + m.external, rss: m.rss };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]!;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

async function main() {
  v8.setFlagsFromString('--expose-gc');
  const { createTestDatabase } = await import('@clinic/db');
  const { buildApp } = await import('../apps/core-api/src/app.ts');
  const { parseConfig } = await import('../apps/core-api/src/config.ts');
  const { createDevIssuer } = await import('../apps/core-api/src/platform/auth/dev-issuer.ts');
  const { createRuntime } = await import('../apps/core-api/src/platform/runtime.ts');

  const pglite = process.env.BENCH_DB === 'pglite';
  const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const testDb = await createTestDatabase(pglite ? null : ADMIN_URL);
  const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
  const config = parseConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    ...(pglite ? {} : { DATABASE_URL: testDb.url! }),
    ...NO_RATE_LIMITS,
  });
  const rtA = await createRuntime(config, { db: testDb.db, devIssuer: issuer });
  const rtB = await createRuntime(config, { db: testDb.db, devIssuer: issuer, skipMigrations: true });
  const appA = await buildApp(rtA);
  const appB = await buildApp(rtB);
  const baseA = await appA.listen({ port: 0, host: '127.0.0.1' });
  const baseB = await appB.listen({ port: 0, host: '127.0.0.1' });

  // An organization, a specialist and a public service, through the API as a superadmin.
  const db = testDb.db;
  await db.query(`insert into users (email) values ('bench-root@example.com') on conflict do nothing`);
  await db.query(
    `insert into platform_memberships (user_id, role) select id, 'superadmin' from users where email = 'bench-root@example.com' on conflict do nothing`,
  );
  const su = await issuer.sign('bench-root@example.com');
  const api = async (method: string, url: string, body: unknown, org?: string) => {
    const res = await appA.inject({
      method: method as 'POST',
      url,
      payload: body as object,
      headers: { authorization: `Bearer ${su}`, ...(org ? { 'x-organization-id': org } : {}) },
    });
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json().data;
  };
  const org = await api('POST', '/v1/organizations', { name: 'Bench clinic', slug: `bench-${randomBytes(4).toString('hex')}` });
  const member = await api('POST', `/v1/organizations/${org.id}/members`, { email: 'bench-dr@example.com', role_code: 'specialist' });
  const specialist = await api(
    'POST',
    '/v1/specialists',
    { user_id: member.user_id, display_name: 'Dr Bench', bookable_online: true },
    org.id,
  );
  const service = await api(
    'POST',
    '/v1/services',
    {
      name: 'Bench',
      duration_minutes: 30,
      price_minor: 0,
      currency: 'EUR',
      mode: 'in_person',
      is_public: true,
      specialist_ids: [specialist.id],
    },
    org.id,
  );
  /** Live holds with known secrets, ten minutes each. */
  const holds = async (n: number) => {
    const secrets = Array.from({ length: n }, () => `hold_${randomBytes(24).toString('base64url')}`);
    const { rows } = await db.query<{ id: string }>(
      `insert into holds (organization_id, service_id, specialist_id, starts_at, ends_at, secret_hash, expires_at)
       select $1, $2, $3, now() + interval '30 days', now() + interval '30 days 30 minutes', h, now() + interval '10 minutes'
       from unnest($4::text[]) with ordinality as t (h, n) order by n
       returning id`,
      [org.id, service.id, specialist.id, secrets.map((s) => createHash('sha256').update(s).digest('hex'))],
    );
    return rows.map((r, i) => ({ id: r.id, secret: secrets[i]! }));
  };
  const pathOf = (h: { id: string; secret: string }) => `/v1/public/holds/${h.id}/stream?secret=${h.secret}`;
  const release = async (h: { id: string; secret: string }) => {
    const res = await fetch(`${baseB}/v1/public/holds/${h.id}`, { method: 'DELETE', headers: { 'x-hold-secret': h.secret } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`DELETE: ${res.status}`);
  };

  const child = fork(fileURLToPath(import.meta.url), ['reader'], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  await new Promise<void>((r) => child.once('message', () => r()));
  const open = (base: string, paths: string[]) => ask<{ ms: number }>(child, { cmd: 'open', base, paths }, 'opened');
  const finals = async () => (await ask<{ finals: (Final | null)[] }>(child, { cmd: 'finals' }, 'finals')).finals as Final[];

  // Warm-up: the code paths of opening and ending streams.
  {
    const warm = await holds(20);
    await open(baseA, warm.map(pathOf));
    for (const h of warm) await release(h);
    await finals();
  }

  console.log(`hold streams: ${STREAMS} on one instance, ${pglite ? 'PGlite (in-process bus)' : 'PostgreSQL (LISTEN/NOTIFY)'}`);

  // Many holds, one stream each.
  const many = await holds(STREAMS);
  const before = memory();
  const opened = await open(baseA, many.map(pathOf));
  const during = memory();
  // What counting down costs: CPU of this process over 5 s with every stream open and idle.
  const cpu0 = process.cpuUsage();
  const c0 = now();
  await new Promise((r) => setTimeout(r, 5000));
  const cpu = process.cpuUsage(cpu0);
  const cpuShare = (cpu.user + cpu.system) / 1000 / (now() - c0);
  const sent: number[] = new Array(STREAMS);
  const answered: number[] = new Array(STREAMS);
  const t0 = now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < many.length) {
        const i = next++;
        sent[i] = now();
        await release(many[i]!);
        answered[i] = now();
      }
    }),
  );
  const manyFinals = await finals();
  const lat = manyFinals.map((f) => f.at - sent[f.i]!);
  const afterAnswer = manyFinals.map((f) => f.at - answered[f.i]!);
  const lastMany = Math.max(...manyFinals.map((f) => f.at)) - t0;
  const oursPerStream = { heap: (during.heap - before.heap) / STREAMS, rss: (during.rss - before.rss) / STREAMS };

  // Fan-out: every stream follows one hold.
  const [one] = await holds(1);
  await open(
    baseA,
    Array.from({ length: STREAMS }, () => pathOf(one!)),
  );
  const f0 = now();
  await release(one!);
  const deleteMs = now() - f0;
  const fan = (await finals()).map((f) => f.at - f0);

  // What announcing in the ending transaction costs (PostgreSQL): NOTIFY takes a lock that serialises the
  // commits of notifying transactions, flush included. DELETEs with no stream open, the trigger of
  // migration 0069 on and off (the floor), rounds alternating.
  const releaseRate = async () => {
    const batch = await holds(STREAMS);
    let k = 0;
    const r0 = now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (k < batch.length) await release(batch[k++]!);
      }),
    );
    return batch.length / ((now() - r0) / 1000);
  };
  const rates = { on: [] as number[], off: [] as number[] };
  if (!pglite) {
    for (let round = 0; round < 3; round++) {
      for (const side of ['on', 'off'] as const) {
        await db.exec(`alter table holds ${side === 'on' ? 'enable' : 'disable'} trigger holds_announce`);
        rates[side].push(await releaseRate());
      }
    }
    await db.exec('alter table holds enable trigger holds_announce');
  }

  await appA.close();
  await appB.close();
  await rtA.close();
  await rtB.close();
  await testDb.drop();

  // The floor: bare node:http, the same events, no framework, no database.
  const held: http.ServerResponse[] = [];
  const floor = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'close' });
    res.write(`event: remaining\ndata: {"seconds_left":600,"expires_at":"${new Date().toISOString()}"}\n\n`);
    held.push(res);
    req.on('close', () => held.splice(held.indexOf(res), 1));
  });
  await new Promise<void>((r) => floor.listen(0, '127.0.0.1', () => r()));
  const floorBase = `http://127.0.0.1:${(floor.address() as AddressInfo).port}`;
  const floorBefore = memory();
  await open(
    floorBase,
    Array.from({ length: STREAMS }, (_, i) => `/s/${i}`),
  );
  const floorDuring = memory();
  const g0 = now();
  for (const res of [...held]) res.end('event: released\ndata: {"status":"released"}\n\n');
  const floorFan = (await finals()).map((f) => f.at - g0);
  const floorPerStream = { heap: (floorDuring.heap - floorBefore.heap) / STREAMS, rss: (floorDuring.rss - floorBefore.rss) / STREAMS };
  await new Promise<void>((r) => floor.close(() => r()));
  child.send({ cmd: 'exit' });

  console.log(`  opening ${STREAMS} streams (${CONCURRENCY} at a time): ${ms(opened.ms)}`);
  console.log(
    `  memory per open stream (heap + external after GC)   ours ${kb(oursPerStream.heap)}   floor ${kb(floorPerStream.heap)}   ratio ${(oursPerStream.heap / floorPerStream.heap).toFixed(2)}   (RSS, noisy: ours ${kb(oursPerStream.rss)}, floor ${kb(floorPerStream.rss)})`,
  );
  console.log(`  CPU while ${STREAMS} streams count down: ${(cpuShare * 100).toFixed(1)}% of one core`);
  console.log(
    `  many holds: DELETE sent -> its released   p50 ${ms(pct(lat, 50))}   p99 ${ms(pct(lat, 99))}   max ${ms(Math.max(...lat))}; DELETE answered -> released p50 ${ms(pct(afterAnswer, 50))} p99 ${ms(pct(afterAnswer, 99))}; first DELETE -> last released ${ms(lastMany)}`,
  );
  console.log(
    `  fan-out: one DELETE -> released on all ${STREAMS}   p50 ${ms(pct(fan, 50))}   max ${ms(Math.max(...fan))} (the DELETE answered in ${ms(deleteMs)})   floor max ${ms(Math.max(...floorFan))}   ratio ${(Math.max(...fan) / Math.max(...floorFan)).toFixed(1)}`,
  );
  if (!pglite) {
    const on = pct(rates.on, 50);
    const off = pct(rates.off, 50);
    console.log(
      `  DELETE throughput (${CONCURRENCY} at a time, no stream open): with the NOTIFY trigger ${on.toFixed(0)} req/s, without ${off.toFixed(0)} req/s   ratio ${(on / off).toFixed(2)} (medians of 3)`,
    );
  }
  process.exit(0);
}

if (process.argv[2] === 'reader') {
  await reader();
} else {
  await main();
}
