// Webhook deliveries per second, end to end, beside a floor measured in the same run.
//   ours:  N domain events already in the outbox -> the worker (pg-boss on PostgreSQL, Redis for the
//          per-subscription limit) dispatches them, signs, POSTs over HTTPS to a local receiver that
//          answers 200 at once, and records every attempt; timed until the database shows all N delivered.
//   floor: the same N signed POSTs (same signing code, same undici client and agent, same concurrency
//          as the worker's batch) sent by a plain loop, no database at all.
// Rounds alternate floor and ours; medians are printed with the ratio ours / floor.
// Run: npx tsx bench/webhooks.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL).
// BENCH_EVENTS (3000), BENCH_ROUNDS (3), BENCH_BATCH (the worker's batch and the floor's concurrency, 50).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '@clinic/db';
import { generate } from 'selfsigned';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createWebhookSender } from '../apps/core-api/src/modules/webhooks/sender.ts';
import { signDelivery } from '../apps/core-api/src/modules/webhooks/signing.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { startWorker } from '../apps/core-api/src/worker/worker.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = Number(process.env.BENCH_BATCH ?? 50);

const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
  keySize: 2048,
  algorithm: 'sha256',
  extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
} as never);
const dir = await mkdtemp(join(tmpdir(), 'bench-webhooks-'));
const caFile = join(dir, 'ca.pem');
await writeFile(caFile, pems.cert);
let received = 0;
const receiver = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
const url = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const testDb = await createTestDatabase(ADMIN_URL);
const config = parseConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'warn',
  REDIS_URL,
  REDIS_KEY_PREFIX: `bench:${randomBytes(4).toString('hex')}:`,
  MASTER_KEYS: `bench:${randomBytes(32).toString('base64')}`,
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_CA_FILE: caFile,
  WEBHOOK_RATE_LIMIT: '1000000',
  WORKER_DELIVERY_BATCH: String(BATCH),
  WORKER_DISPATCH_INTERVAL_MS: '20',
});
const rt = await createRuntime(config, { db: testDb.db });
const db = testDb.db;
const { rows: org } = await db.query<{ id: string }>(`insert into organizations (slug, name) values ($1, 'Bench clinic') returning id`, [
  `bench-${randomBytes(4).toString('hex')}`,
]);
const orgId = org[0]!.id;
const secret = `whsec_${randomBytes(32).toString('base64')}`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function floorRound(): Promise<number> {
  const sender = createWebhookSender({ ...config.webhooks });
  const ids = Array.from({ length: EVENTS }, () => randomUUID());
  const start = received;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: BATCH }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const r = await sender.send(
          url,
          signDelivery({ id, type: 'organization.updated', data: { organization_id: orgId, changed: ['name'] } }, [secret]),
        );
        if (!r.ok) throw new Error(`floor delivery failed: ${r.error}`);
      }
    }),
  );
  const ms = performance.now() - t0;
  await sender.close();
  if (received - start !== EVENTS) throw new Error('floor: receiver count mismatch');
  return (EVENTS / ms) * 1000;
}

async function oursRound(): Promise<number> {
  // A fresh subscription per round, so each round's deliveries are its own.
  const { rows } = await db.query<{ id: string }>(
    `insert into webhook_subscriptions (organization_id, url, event_types, secret_sealed) values ($1, $2, '{organization.updated}', $3) returning id`,
    [orgId, url, rt.secrets.seal(secret)],
  );
  const subId = rows[0]!.id;
  await db.query(`update webhook_subscriptions set status = 'disabled' where organization_id = $1 and id <> $2`, [orgId, subId]);
  await db.query(
    `select app.emit_event($1::uuid, 'organization.updated', jsonb_build_object('changed', jsonb_build_array('name'), 'n', n)) from generate_series(1, $2::int) n`,
    [orgId, EVENTS],
  );
  const start = received;
  const t0 = performance.now();
  const worker = await startWorker(rt);
  // Worker start-up (pg-boss start, queue checks) is not delivery work: measure from its first dispatch.
  const t1 = performance.now();
  for (;;) {
    const { rows: done } = await db.query<{ n: number }>(
      `select count(*)::int as n from webhook_deliveries where subscription_id = $1 and status = 'delivered'`,
      [subId],
    );
    if (done[0]!.n === EVENTS) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = performance.now() - t1;
  await worker.close();
  if (received - start < EVENTS) throw new Error('ours: receiver got fewer than expected');
  process.stdout.write(`  (worker start ${(t1 - t0).toFixed(0)} ms, not counted)\n`);
  return (EVENTS / ms) * 1000;
}

const floors: number[] = [];
const ours: number[] = [];
process.stdout.write(`webhook deliveries: ${EVENTS} events per round, batch/concurrency ${BATCH}, ${ROUNDS} rounds\n`);
for (let i = 0; i < ROUNDS; i++) {
  floors.push(await floorRound());
  ours.push(await oursRound());
  process.stdout.write(
    `round ${i + 1}: floor ${floors[i]!.toFixed(0)}/s   ours ${ours[i]!.toFixed(0)}/s   ratio ${(ours[i]! / floors[i]!).toFixed(2)}\n`,
  );
}
const f = median(floors);
const o = median(ours);
process.stdout.write(`\nmedian floor (plain loop of signed POSTs)   ${f.toFixed(0)} deliveries/s\n`);
process.stdout.write(`median ours (outbox -> worker -> recorded)  ${o.toFixed(0)} deliveries/s\n`);
process.stdout.write(`ratio ours / floor                           ${(o / f).toFixed(2)}\n`);

await rt.close();
await testDb.drop();
receiver.closeAllConnections();
receiver.close();
await rm(dir, { recursive: true, force: true });
process.exit(0);
