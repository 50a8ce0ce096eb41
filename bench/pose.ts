/*
 * Pose telemetry benchmark (issue 8). `npx tsx bench/pose.ts` (PGlite) or with TEST_MODE=services
 * (PostgreSQL 127.0.0.1:5432 + Redis). Prints:
 *  1. pose batches ingested per second end to end (HTTP, token, gunzip, strict decode, consent check and
 *     durable insert through app.telemetry_ingest_pose) beside a floor measured in the same run: a bare
 *     Fastify route that gunzips the same bodies and does one insert. Target ratio >= 0.7.
 *  2. the time to score a 30-minute session (54,000 frames) beside the time to merely decode its
 *     batches. Target: scoring under 10x the decode time.
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { startWorld } from '../apps/telemetry/test/support.ts';
import { decodeBatch, encodeBatchGzip, gunzipBatch } from '../apps/telemetry/src/pose/format.ts';
import { concatBatches, scoreSession } from '../apps/telemetry/src/pose/scoring.ts';
import { generateSession, toBatches } from '../apps/telemetry/src/synthetic/generator.ts';
import { PLATFORM_MOVEMENTS } from '../apps/telemetry/src/synthetic/movements.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = 16;

async function run(url: string, headers: Record<string, string>, bodies: Buffer[]): Promise<{ rps: number; non2xx: number }> {
  let i = 0;
  const r = await autocannon({
    url, method: 'POST', connections: CONNECTIONS, duration: SECONDS, headers,
    requests: [{ setupRequest: (req: any) => ({ ...req, body: bodies[i++ % bodies.length] }) }],
  });
  return { rps: r.requests.average, non2xx: r.non2xx + r.errors };
}

// A 30-minute squat session at 30 fps: 54,000 frames in 1,800 one-second batches.
const session = generateSession({ kind: 'squat', scenario: 'noisy', reps: 520, seed: 9 });
const frames = session.timestamps.slice(0, 54_000);
const src = { timestamps: frames, data: session.data.subarray(0, frames.length * 132) };
const batches = toBatches(src);
const gz = batches.map((b) => encodeBatchGzip(b));
process.stdout.write(`session: ${frames.length} frames, ${batches.length} batches, ${(gz.reduce((n, b) => n + b.length, 0) / 1e6).toFixed(1)} MB gzipped\n`);

// 2. Scoring against decoding.
const time = (fn: () => void, reps = 5) => {
  const t: number[] = [];
  for (let k = 0; k < reps; k++) {
    const s = process.hrtime.bigint();
    fn();
    t.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  return t.sort((a, b) => a - b)[Math.floor(reps / 2)]!;
};
const decodeMs = time(() => void gz.map((b) => decodeBatch(gunzipBatch(b))));
const scoreMs = time(() => void scoreSession(concatBatches(gz.map((b) => decodeBatch(gunzipBatch(b)))), PLATFORM_MOVEMENTS.squat));

// 1. Ingest against the floor.
const w = await startWorld();
const s = await (async () => {
  await w.grant('biometric');
  return w.start();
})();
// Distinct sequence numbers, so every request is a real insert (a duplicate would be cheaper).
const bodies = Array.from({ length: 50_000 }, (_, k) => encodeBatchGzip({ ...batches[k % batches.length]!, seq: k }));
const tele = await w.a.listen({ host: '127.0.0.1', port: 0 });
const ingest = await run(`${tele}/v1/pose/frames`, { authorization: `Bearer ${s.token}`, 'content-type': 'application/octet-stream' }, bodies);

await w.t.db.query('create table if not exists bench_pose_floor (session_id uuid, seq int, payload bytea, primary key (session_id, seq))');
const floorApp = Fastify();
floorApp.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: 262_144 }, (_r, b, done) => done(null, b));
const floorSession = randomUUID();
let floorSeq = 0;
floorApp.post('/floor', async (req, reply) => {
  gunzipSync(req.body as Buffer);
  await w.t.db.query('insert into bench_pose_floor (session_id, seq, payload) values ($1, $2, $3)', [floorSession, floorSeq++, req.body]);
  return reply.status(201).send({ ok: true });
});
const floorUrl = await floorApp.listen({ host: '127.0.0.1', port: 0 });
const floor = await run(`${floorUrl}/floor`, { 'content-type': 'application/octet-stream' }, bodies);
await floorApp.close();
await w.close();

const line = (name: string, v: string) => process.stdout.write(`${name.padEnd(52)} ${v}\n`);
line(`database`, w.t.db.kind);
line('pose ingest, end to end (batches/s)', `${ingest.rps.toFixed(0)}   (errors ${ingest.non2xx})`);
line('floor: gunzip + one insert (batches/s)', `${floor.rps.toFixed(0)}   (errors ${floor.non2xx})`);
line('ingest ratio (target >= 0.7)', (ingest.rps / floor.rps).toFixed(2));
line('decode 54,000 frames (ms)', decodeMs.toFixed(1));
line('decode + score 54,000 frames (ms)', scoreMs.toFixed(1));
line('score / decode ratio (target < 10)', (scoreMs / decodeMs).toFixed(2));
process.exit(0);
