// A burst of reminders (performance target): "10,000 reminders due in the same minute: all sent to the
// loopback SMTP server within a reported time, each once."
//   A clinic with an email provider row (the organization's override) whose SMTP endpoint is a real SMTP server
//   on loopback (smtp-server, plain SMTP, AUTH accepted), an email template and a rule "24 hours before"
//   (trigger appointment_offset -1440, action send_email), made through the API. BENCH_REMINDERS (10,000)
//   patients with an email each and one appointment each, seeded in SQL, all starting in the same minute
//   24 hours from now (so every reminder came due at the start of this minute). Reminders are made by the
//   worker's sweep over appointments (runs-queries.ts dueAppointmentRuns), not by events, so rows written in
//   SQL take the module's own path: the worker (startWorker, in this process) sweeps, makes one run and one
//   job per appointment, claims, renders, sends over its pooled SMTP transport and records each.
//   Timed from the worker's start until the SMTP server has received every reminder; then, after a quiet
//   pause for strays, each appointment's reminder is checked to have arrived exactly once (by recipient, by
//   X-Clinic-Message-Id, and by the messages table).
//   For reference, the same number of messages sent by a bare pooled nodemailer transport with the same
//   connections and concurrency (no database): what SMTP on loopback costs here.
// Run: npx tsx bench/reminders-burst.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL; loopback
// only). About a minute. BENCH_REMINDERS (10000), BENCH_TIMEOUT_SECONDS (240); MESSAGES_SMTP_CONNECTIONS and
// AUTOMATIONS_BATCH are the worker's (5 and 50 by default).
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { createTestDatabase } from '@clinic/db';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { buildApp } from '../apps/core-api/src/app.ts';
import { parseConfig } from '../apps/core-api/src/config.ts';
import { createDevIssuer } from '../apps/core-api/src/platform/auth/dev-issuer.ts';
import { createRuntime } from '../apps/core-api/src/platform/runtime.ts';
import { startWorker } from '../apps/core-api/src/worker/worker.ts';
import { NO_RATE_LIMITS, benchSuperadmin, cpuMeter, injector } from './support.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const N = Number(process.env.BENCH_REMINDERS ?? 10_000);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_SECONDS ?? 240) * 1000;
for (const url of [ADMIN_URL, REDIS_URL]) {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) throw new Error(`${url}: benchmarks run on loopback only`);
}

// The loopback SMTP server: counts each message by envelope recipient and by its X-Clinic-Message-Id header.
const byRecipient = new Map<string, number>();
const byMessageId = new Map<string, number>();
let received = 0;
let firstAt = 0;
let lastAt = 0;
let onReceived = () => {};
const server = new SMTPServer({
  secure: false,
  disabledCommands: ['STARTTLS'],
  allowInsecureAuth: true,
  authOptional: true,
  logger: false,
  onAuth: (auth, _session, cb) => cb(null, { user: auth.username }),
  onData(stream, session, cb) {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
      const id = /^X-Clinic-Message-Id: *(\S+)/im.exec(head)?.[1] ?? '';
      for (const r of session.envelope.rcptTo)
        byRecipient.set(r.address.toLowerCase(), (byRecipient.get(r.address.toLowerCase()) ?? 0) + 1);
      byMessageId.set(id, (byMessageId.get(id) ?? 0) + 1);
      received++;
      lastAt = performance.now();
      if (received === 1) firstAt = lastAt;
      onReceived();
      cb();
    });
  },
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const smtpUrl = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
// A stand-in for the SES API on loopback, for the provider health check's ping (GetAccount, GetEmailIdentity):
// without it the check would reach for AWS, fail, and put the row in error halfway through the burst.
const sesApi = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"VerifiedForSendingStatus":true}'));
});
await new Promise<void>((r) => sesApi.listen(0, '127.0.0.1', () => r()));
const sesUrl = `http://127.0.0.1:${(sesApi.address() as AddressInfo).port}`;

const started = Date.now();
const testDb = await createTestDatabase(ADMIN_URL);
// Closed in reverse order at the end, or when the bench fails, before the database is dropped.
const closers: (() => Promise<unknown>)[] = [];
let failed = false;
try {
  const db = testDb.db;
  const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
  const config = parseConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    REDIS_URL,
    REDIS_KEY_PREFIX: `bench:${randomBytes(4).toString('hex')}:`,
    MASTER_KEYS: `bench:${randomBytes(32).toString('base64')}`,
    ...NO_RATE_LIMITS,
    ...Object.fromEntries(
      ['MESSAGES_SMTP_CONNECTIONS', 'AUTOMATIONS_BATCH', 'WORKER_DISPATCH_INTERVAL_MS'].flatMap((k) =>
        process.env[k] ? [[k, process.env[k]!]] : [],
      ),
    ),
  });
  const rt = await createRuntime(config, { db, devIssuer: issuer });
  closers.push(() => rt.close());
  const app = await buildApp(rt);
  closers.push(() => app.close());
  await app.ready();

  const su = await benchSuperadmin(db, issuer);
  const inject = injector(app);
  const org = await inject('POST', '/v1/organizations', su, null, { name: 'Reminder clinic', slug: 'bench-reminders' });
  const token = await issuer.sign('bench-admin@example.com');
  const me = await inject('GET', '/v1/me', token, null);
  await db.query(
    `insert into memberships (user_id, organization_id, role_id) select $1, $2, id from roles where organization_id = $2 and code = 'admin'`,
    [me.id, org.id],
  );
  // The organization's email provider: SES-shaped credentials, the SMTP endpoint on loopback.
  await inject('POST', '/v1/admin/platform-service-providers', su, null, {
    capability: 'email',
    organization_id: org.id,
    credentials: { access_key_id: 'AKIABENCHREMINDERS01', secret_access_key: 'bench-reminders-secret-access-key-000001' },
    config: {
      region: 'eu-central-1',
      from_address: 'clinic@example.org',
      configuration_set: 'reminders',
      endpoint_url: sesUrl,
      smtp_endpoint: smtpUrl,
    },
  });
  const template = await inject('POST', '/v1/message-templates', token, org.id, {
    name: 'Reminder 24 h',
    channel: 'email',
    content: {
      en: {
        subject: 'Your visit on {{appointment.date}}',
        text: 'Hello {{patient.first_name}}, see you at {{appointment.time}} for {{appointment.service}}.',
        html: '<p>Hello <b>{{patient.first_name}}</b>, see you at {{appointment.time}}.</p>',
      },
    },
  });
  await inject('POST', '/v1/automation-rules', token, org.id, {
    name: 'Reminder 24 hours before',
    trigger: { type: 'appointment_offset', offset_minutes: -1440 },
    actions: [{ type: 'send_email', template_id: template.id }],
  });

  // N patients with an email each (users and patients through their triggers, so user_email is kept), one
  // service, and one appointment each starting 24 hours after the start of this minute: every reminder came
  // due at the start of this minute.
  await db.transaction(async (tx) => {
    await tx.query('set local statement_timeout = 0');
    await tx.query(
      `with u as (
         insert into users (email) select format('patient-%s@reminders.example', i) from generate_series(1, $2::int) i returning id, email
       )
       insert into patients (organization_id, user_id, first_name, last_name)
       select $1, u.id, 'Patient', split_part(split_part(u.email, '@', 1), '-', 2) from u`,
      [org.id, N],
    );
    await tx.query(
      `insert into services (organization_id, name, duration_minutes, price_minor, currency, mode, is_public) values ($1, 'Physio session', 30, 5000, 'EUR', 'in_person', true)`,
      [org.id],
    );
    await tx.query(
      `insert into appointments (organization_id, service_id, patient_id, starts_at, ends_at, mode, status, source)
       select $1, s.id, p.id, t.at, t.at + interval '30 minutes', 'in_person', 'scheduled', 'staff'
       from patients p
       cross join (select id from services where organization_id = $1) s
       cross join (select date_trunc('minute', now()) + interval '24 hours' as at) t
       where p.organization_id = $1`,
      [org.id],
    );
  });
  await db.query('analyze');
  console.log(`seeded ${N} patients and appointments in ${((Date.now() - started) / 1000).toFixed(1)} s; SMTP server at ${smtpUrl}`);

  const allIn = (timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${received} of ${N} messages arrived in ${timeoutMs / 1000} s`)), timeoutMs);
      onReceived = () => {
        if (received >= N) {
          clearTimeout(timer);
          resolve();
        }
      };
      onReceived();
    });

  // CPU spent during the burst by this process (worker, SMTP server) and by the database's backends.
  const backends = async () =>
    (await db.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).rows.map((r) => r.pid);

  // Ours: the worker's sweep finds the due reminders and sends them.
  const t0 = performance.now();
  const done = allIn(TIMEOUT_MS);
  const worker = await startWorker(rt);
  closers.push(() => worker.close());
  const t1 = performance.now();
  // The worker's own connections (pg-boss opens its pool at start): measured from here.
  const meter = cpuMeter(await backends());
  await done;
  const cpu = meter();
  const total = lastAt - t0;
  // Strays: a second send of any of them would arrive now.
  await new Promise((r) => setTimeout(r, 3000));
  const stats = (
    await db.query<{ runs: number; sent: number; executions: number; appointments: number; repeated: number }>(
      `select (select count(*)::int from automation_runs where organization_id = $1) as runs,
              (select count(*)::int from messages where organization_id = $1 and status = 'sent') as sent,
              (select count(*)::int from automation_executions where organization_id = $1 and status = 'succeeded') as executions,
              (select count(distinct appointment_id)::int from messages where organization_id = $1) as appointments,
              (select count(*)::int from (select appointment_id from messages where organization_id = $1 group by appointment_id having count(*) > 1) x) as repeated`,
      [org.id],
    )
  ).rows[0]!;
  const twice = [...byRecipient.values()].filter((n) => n !== 1).length;
  const twiceById = [...byMessageId.values()].filter((n) => n !== 1).length;
  const once = received === N && byRecipient.size === N && twice === 0 && byMessageId.size === N && twiceById === 0;
  const dbOnce = stats.runs === N && stats.sent === N && stats.executions === N && stats.appointments === N && stats.repeated === 0;

  console.log(
    `\n${N} reminders due in the same minute -> loopback SMTP (MESSAGES_SMTP_CONNECTIONS ${config.messages.smtpConnections}, AUTOMATIONS_BATCH ${config.automations.batchSize})`,
  );
  console.log(`worker start (pg-boss start, queues)       ${(t1 - t0).toFixed(0)} ms`);
  console.log(`worker start -> first message received     ${(firstAt - t0).toFixed(0)} ms`);
  console.log(`worker start -> last message received      ${total.toFixed(0)} ms`);
  console.log(`throughput (all ${N} over that time)       ${((N / total) * 1000).toFixed(0)} messages/s`);
  console.log(`throughput (first to last message)         ${(((N - 1) / (lastAt - firstAt)) * 1000).toFixed(0)} messages/s`);
  console.log(`${cpu(N)} (per message; node runs the worker and the SMTP server; load average ${loadavg()[0]!.toFixed(1)})`);
  console.log(
    `each once (SMTP server): ${once ? 'yes' : 'NO'}: ${received} received, ${byRecipient.size} recipients (${twice} not exactly once), ${byMessageId.size} message ids (${twiceById} not exactly once)`,
  );
  console.log(
    `each once (database):    ${dbOnce ? 'yes' : 'NO'}: ${stats.runs} runs, ${stats.sent} messages sent, ${stats.executions} executions succeeded, ${stats.appointments} appointments with a message, ${stats.repeated} with more than one`,
  );
  if (!once || !dbOnce) failed = true;

  // Reference: a bare pooled nodemailer transport, same connections, the engine's concurrency, no database.
  await worker.close();
  closers.pop();
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: Number(new URL(smtpUrl).port),
    secure: false,
    ignoreTLS: true,
    auth: { user: 'AKIABENCHREMINDERS01', pass: 'x' },
    pool: true,
    maxConnections: config.messages.smtpConnections,
    maxMessages: 1000,
  });
  received = 0;
  const bare = allIn(TIMEOUT_MS);
  const b0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(4, config.messages.smtpConnections * 2) }, async () => {
      while (next < N) {
        const i = ++next;
        await transport.sendMail({
          from: { name: 'Reminder clinic', address: 'clinic@example.org' },
          to: `bare-${i}@reminders.example`,
          subject: 'Your visit',
          text: `Hello Patient, see you at 10:00 for Physio session.`,
          html: '<p>Hello <b>Patient</b>, see you at 10:00.</p>',
          messageId: `<bare-${i}@bench.localhost>`,
          headers: { 'X-Clinic-Message-Id': `bare-${i}` },
        });
      }
    }),
  );
  await bare;
  const bareMs = lastAt - b0;
  transport.close();
  console.log(`\nreference: bare pooled nodemailer, no database   ${bareMs.toFixed(0)} ms, ${((N / bareMs) * 1000).toFixed(0)} messages/s`);
  console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`);
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  for (const close of closers.reverse()) await close().catch((err: Error) => console.error(`teardown: ${err.message}`));
  await testDb.drop();
  // The SMTP server waits for its clients to quit; the worker's and the reference's transports are closed.
  await Promise.race([new Promise<void>((r) => server.close(() => r())), new Promise((r) => setTimeout(r, 2000))]);
  sesApi.close();
}
process.exit(failed ? 1 : 0);
