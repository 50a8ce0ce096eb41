/*
 * Pose telemetry benchmark. `npx tsx bench/pose.ts` (PGlite) or with TEST_MODE=services
 * (PostgreSQL 127.0.0.1:5432 + Redis). Prints:
 *  1. pose batches ingested per second end to end (HTTP, session token, gunzip, strict decode, the
 *     ownership/restriction/consent checks and the durable insert of app.telemetry_ingest_pose) beside a
 *     floor measured in the same run: a bare Fastify route that gunzips the same bodies (same function,
 *     same limit) and does one insert of the same payload into a table of the same column storage, on
 *     the same database and pool, as a named statement too. BENCH_ROUNDS rounds of BENCH_SECONDS each,
 *     alternating ABBA so drift on a shared machine hits both; medians are printed. Target ratio >= 0.7.
 *  2. the time to score a 30-minute session (54,000 frames) beside the time to merely decode its
 *     batches. Target: scoring under 10x the decode time.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { startWorld } from '../apps/telemetry/test/support.ts';
import { byteaParam } from '../apps/telemetry/src/db.ts';
import { decodeBatch, encodeBatchGzip, gunzipBatch } from '../apps/telemetry/src/pose/format.ts';
import { concatBatches, scoreSession } from '../apps/telemetry/src/pose/scoring.ts';
import { generateSession, toBatches } from '../apps/telemetry/src/synthetic/generator.ts';
import { PLATFORM_MOVEMENTS } from '../apps/telemetry/src/synthetic/movements.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 16;
// 1: every batch of the run goes to one session (the worst case for its row lock); more: devices.
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Run {
  rps: number;
  stored: number;
  other: number;
}

/** `tokens`: requests go round-robin over these sessions, each sending its sequence numbers 0, 1, 2... */
async function run(url: string, headers: Record<string, string>, bodies: Buffer[], seconds = SECONDS, tokens: string[] = []): Promise<Run> {
  let i = 0;
  const r = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers,
    requests: [
      {
        setupRequest: (req: any) => {
          const k = i++;
          if (!tokens.length) return { ...req, body: bodies[k % bodies.length] };
          return {
            ...req,
            headers: { ...req.headers, authorization: `Bearer ${tokens[k % tokens.length]}` },
            body: bodies[Math.floor(k / tokens.length) % bodies.length],
          };
        },
      },
    ],
  });
  const codes = r.statusCodeStats as Record<string, { count: number }>;
  const stored = codes['201']?.count ?? 0;
  const total = Object.values(codes).reduce((n, c) => n + c.count, 0);
  return { rps: r.requests.average, stored, other: total - stored + r.errors };
}

// A 30-minute squat session at 30 fps: 54,000 frames in 1,800 one-second batches.
const session = generateSession({ kind: 'squat', scenario: 'noisy', reps: 520, seed: 9 });
const frames = session.timestamps.slice(0, 54_000);
const src = { timestamps: frames, data: session.data.subarray(0, frames.length * 132) };
const batches = toBatches(src);
const gz = batches.map((b) => encodeBatchGzip(b));
process.stdout.write(
  `session: ${frames.length} frames, ${batches.length} batches, ${(gz.reduce((n, b) => n + b.length, 0) / 1e6).toFixed(1)} MB gzipped\n`,
);

// 2. Scoring against decoding.
const time = (fn: () => void, reps = 5) => {
  const t: number[] = [];
  for (let k = 0; k < reps; k++) {
    const s = process.hrtime.bigint();
    fn();
    t.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  return median(t);
};
const decodeMs = time(() => void gz.map((b) => decodeBatch(gunzipBatch(b))));
const scoreMs = time(() => void scoreSession(concatBatches(gz.map((b) => decodeBatch(gunzipBatch(b)))), PLATFORM_MOVEMENTS.squat));

// 1. Ingest against the floor.
// The per-session rate limit (300 a minute) is lifted: the bench sends far more than a device would.
const w = await startWorld({ telemetry: { poseRateLimit: { limit: 1_000_000_000, windowSeconds: 60 } } });
await w.grant('biometric');
// Every round of ingest gets a new session, so sequence numbers 0.. are fresh inserts (a duplicate
// would be cheaper); BODIES is above what a round can send, and anything not 201 is counted.
const BODIES = Number(process.env.BENCH_BODIES ?? 4000 * SECONDS);
const bodies = Array.from({ length: BODIES }, (_, k) => encodeBatchGzip({ ...batches[k % batches.length]!, seq: k }));
const tele = await w.a.listen({ host: '127.0.0.1', port: 0 });

// The floor's table: the same key and payload column (and its storage, migration 0052) as pose_batches.
await w.t.db.exec(`create table if not exists bench_pose_floor (session_id uuid, seq int, payload bytea, primary key (session_id, seq));
  alter table bench_pose_floor alter column payload set storage external`);
const floorApp = Fastify();
floorApp.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: 262_144 }, (_r, b, done) => done(null, b));
let floorSession = randomUUID();
let floorSeq = 0;
floorApp.post('/floor', async (req, reply) => {
  gunzipBatch(req.body as Buffer);
  // The payload goes as the ingest sends it (binary on PostgreSQL, hex decoded in C on PGlite).
  const payload = byteaParam(w.t.db, 3, req.body as Buffer);
  await w.t.db.query(
    `insert into bench_pose_floor (session_id, seq, payload) values ($1, $2, ${payload.sql})`,
    [floorSession, floorSeq++, payload.value],
    { name: 'bench_pose_floor' },
  );
  return reply.status(201).send({ ok: true });
});
const floorUrl = await floorApp.listen({ host: '127.0.0.1', port: 0 });

const ingestRuns: Run[] = [];
const floorRuns: Run[] = [];
// Both targets get the same requests (the floor ignores the token), so the load generator, which
// shares the machine, spends the same on each.
let tokens: string[] = [];
const ingestOnce = async () => {
  tokens = [];
  for (let k = 0; k < SESSIONS; k++) tokens.push((await w.start()).token);
  ingestRuns.push(await run(`${tele}/v1/pose/frames`, { 'content-type': 'application/octet-stream' }, bodies, SECONDS, tokens));
};
const floorOnce = async () => {
  floorSession = randomUUID();
  floorSeq = 0;
  floorRuns.push(await run(`${floorUrl}/floor`, { 'content-type': 'application/octet-stream' }, bodies, SECONDS, tokens));
};
// Warm-up (JIT, connections, plan caches), not counted.
tokens = [(await w.start()).token];
await run(`${tele}/v1/pose/frames`, { 'content-type': 'application/octet-stream' }, bodies, 2, tokens);
await run(`${floorUrl}/floor`, { 'content-type': 'application/octet-stream' }, bodies, 2, tokens);
const load0 = loadavg()[0]!;
for (let r = 0; r < ROUNDS; r++) {
  if (r % 2 === 0) {
    await ingestOnce();
    await floorOnce();
  } else {
    await floorOnce();
    await ingestOnce();
  }
}
const load1 = loadavg()[0]!;
await floorApp.close();
await w.close();

const line = (name: string, v: string) => process.stdout.write(`${name.padEnd(52)} ${v}\n`);
const rounds = (xs: Run[]) => xs.map((x) => x.rps.toFixed(0)).join(' ');
const ratios = ingestRuns.map((x, k) => x.rps / floorRuns[k]!.rps);
line('database', w.t.db.kind);
line(
  'rounds x seconds, connections, sessions',
  `${ROUNDS} x ${SECONDS} s, ${CONNECTIONS}, ${SESSIONS}   (load average ${load0.toFixed(1)} -> ${load1.toFixed(1)})`,
);
line(
  'pose ingest, end to end (batches/s, median)',
  `${median(ingestRuns.map((x) => x.rps)).toFixed(0)}   rounds: ${rounds(ingestRuns)}   (not 201: ${ingestRuns.reduce((n, x) => n + x.other, 0)})`,
);
line(
  'floor: gunzip + one insert (batches/s, median)',
  `${median(floorRuns.map((x) => x.rps)).toFixed(0)}   rounds: ${rounds(floorRuns)}   (not 201: ${floorRuns.reduce((n, x) => n + x.other, 0)})`,
);
line(
  'ingest ratio, median of rounds (target >= 0.7)',
  `${median(ratios).toFixed(2)}   rounds: ${ratios.map((x) => x.toFixed(2)).join(' ')}`,
);
line('decode 54,000 frames (ms)', decodeMs.toFixed(1));
line('decode + score 54,000 frames (ms)', scoreMs.toFixed(1));
line('score / decode ratio (target < 10)', (scoreMs / decodeMs).toFixed(2));
process.exit(0);
