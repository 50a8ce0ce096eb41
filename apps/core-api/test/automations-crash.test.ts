import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Database, MIGRATIONS_DIR, migrate, openPglite, type TestDatabase } from '@clinic/db';
import { startFakeSes, type FakeSes } from './fakes/ses.ts';
import { dataOf, freshDatabase, MODE, startTestApp } from './helpers.ts';
import { type ReceivedMail, type SmtpSink, startSmtpSink } from './support/mail-servers.ts';
import { setUpMessagingClinic } from './support/messaging-clinic.ts';
import { exited, spawnWorkerProcess } from './support/processes.ts';

/*
 * Crash test of automation runs: the worker PROCESS (`npm run worker`'s entry) sends
 * the 24-hours-before reminders of 300 due appointments to a real SMTP server on loopback, and is killed
 * with SIGKILL at the moment the server has taken in the 120th message and not yet answered it (the kill
 * is in the server's hook, before its 250: the message has arrived and the worker never heard so). A new
 * worker process finishes the job.
 *
 * What the module guarantees, and what is checked (docs/automations.md, "Runs, executions and idempotency"):
 * - nothing is lost: every due appointment's reminder reaches the server;
 * - one run per (rule, trigger key, target key), one message per (run, action) and one execution per
 *   (run, action), recorded as succeeded with that message: exactly once in the database;
 * - on the wire, exactly once per Message-ID: the server sees one distinct Message-ID per run. A message
 *   is claimed (its row committed in state `sending`) before it is sent, and its outcome recorded after;
 *   nobody can know whether a message the server took in just before the kill was taken in, so a message
 *   `sending` at the kill is sent again once its claim has run out, with the same Message-ID, subject,
 *   text and .ics: the receiving side can tell it is the same message. Those repeats are checked to be
 *   exactly the messages that were `sending` at the kill and had reached the server before it (the one
 *   that triggered the kill among them), each repeated once; any other message arrives once.
 * The killed batch's jobs come back when their expiry has passed (claim + 5 s, counted from the batch's
 * start); a run whose message is still claimed then comes back when the claim runs out (engine.ts).
 *
 * Embedded mode runs the worker on a PGlite folder (the test closes it first: one process per folder; it
 * opens it again only while no worker runs), services mode on this file's PostgreSQL database. In
 * services mode the test waits until every run is done before stopping the second worker. In embedded
 * mode it cannot read the folder while the worker holds it: it stops the worker (gracefully: sends in
 * hand are finished and recorded) once the server has every message and every expected repeat, and then
 * accepts a run still `queued` only if each of its actions is recorded and its durable job is still
 * pending (a run whose job was killed between its last execution and its end: the job comes back).
 * The waits are on conditions (messages seen, rows in the database); the runner's time-out is the only
 * deadline.
 */
const APPOINTMENTS = 300;
const KILL_AT = 120;
const BATCH = 50;
const SMTP_CONNECTIONS = 5;
/** The engine's concurrency (automations/jobs.ts): the most messages that can be claimed at once. */
const CONCURRENCY = Math.max(4, SMTP_CONNECTIONS * 2);

describe('a worker killed while sending reminders sends each one once per Message-ID and loses none', () => {
  let smtp: SmtpSink;
  let ses: FakeSes;
  let dataDir = '';
  let pgTest: TestDatabase | null = null;
  const masterKeys = `crash:${randomBytes(32).toString('base64')}`;
  const children: ChildProcess[] = [];
  let orgId = '';
  let ruleId = '';
  let emails = new Set<string>();

  const openDb = async (): Promise<Database> => (pgTest ? pgTest.db : openPglite(join(dataDir, 'pgdata')));
  const withDb = async <T>(fn: (db: Database) => Promise<T>): Promise<T> => {
    const db = await openDb();
    try {
      return await fn(db);
    } finally {
      if (!pgTest) await db.close();
    }
  };

  before(async () => {
    smtp = await startSmtpSink();
    // The worker's provider health check asks SES's API about the email row: a local one answers it.
    ses = await startFakeSes({ keys: ['AKIACRASHREMINDERS01'], region: 'eu-west-1', verified: ['reminders@example.org'] });
    // A data folder in both modes: the worker keeps its development keys there, never in the checkout's .data.
    dataDir = await mkdtemp(join(tmpdir(), 'crash-reminders-'));
    let database: TestDatabase;
    if (MODE === 'services') {
      pgTest = await freshDatabase();
      database = pgTest;
    } else {
      // The run's migrated image when there is one (scripts/run-tests.mjs), else the migrations.
      const template = process.env.TEST_DB_TEMPLATE;
      const image = template?.startsWith('pglite:') ? new Blob([await readFile(template.slice(7))]) : undefined;
      const db = await openPglite(join(dataDir, 'pgdata'), image ? { loadDataDir: image } : {});
      if (!image) await migrate(db, MIGRATIONS_DIR);
      database = { db, url: null, drop: () => db.close() };
    }
    // The clinic, its email provider (this SMTP server), the template and the rule through the API.
    const t = await startTestApp({ database, migrate: false, env: { MASTER_KEYS: masterKeys } });
    try {
      const c = await setUpMessagingClinic(t, 'crash');
      orgId = c.org.id;
      dataOf(
        await t.call('POST', '/v1/admin/platform-service-providers', {
          token: await t.superadmin(),
          body: {
            capability: 'email',
            organization_id: c.org.id,
            credentials: { access_key_id: 'AKIACRASHREMINDERS01', secret_access_key: 'crash-test-secret-key-000000000000000001' },
            config: {
              region: 'eu-west-1',
              from_address: 'reminders@example.org',
              configuration_set: 'crash',
              endpoint_url: ses.url,
              smtp_endpoint: smtp.url,
            },
          },
        }),
        201,
      );
      const template = dataOf(
        await c.call('POST', '/v1/message-templates', c.admin, {
          name: 'Reminder 24h',
          channel: 'email',
          content: {
            en: {
              subject: 'Reminder: {{appointment.service}} on {{appointment.date}}',
              text: 'Hello {{patient.first_name}}, see you at {{appointment.time}}.',
            },
          },
        }),
        201,
      );
      // Patients and their appointments in bulk (the API would book them one by one): each starts within
      // the next day, so the rule's 24-hours-before reminder of every one is due as soon as the worker looks.
      const { rows } = await t.db.query<{ email: string }>(
        `with u as (
           insert into users (email) select 'crash-' || n || '-' || $2::text || '@example.test' from generate_series(1, $3::int) n returning id, email
         ), p as (
           insert into patients (organization_id, user_id, first_name, last_name)
           select $1, u.id, 'Patient', 'Crash' from u returning id, user_id
         ), a as (
           insert into appointments (organization_id, service_id, specialist_id, location_id, patient_id, starts_at, ends_at, mode, source)
           select $1, $4, $5, $6, p.id, date_trunc('minute', now()) + interval '2 hours' + make_interval(mins => row_number() over ()::int),
                  date_trunc('minute', now()) + interval '150 minutes' + make_interval(mins => row_number() over ()::int), 'in_person', 'staff'
           from p returning patient_id
         )
         select u.email from a join p on p.id = a.patient_id join u on u.id = p.user_id`,
        [c.org.id, randomBytes(4).toString('hex'), APPOINTMENTS, c.service, c.specialist, c.location],
      );
      emails = new Set(rows.map((r) => r.email));
      assert.equal(emails.size, APPOINTMENTS);
      ruleId = dataOf(
        await c.call('POST', '/v1/automation-rules', c.admin, {
          name: 'Reminder 24 hours before',
          trigger: { type: 'appointment_offset', offset_minutes: -1440 },
          actions: [{ type: 'send_email', template_id: template.id }],
        }),
        201,
      ).id;
    } finally {
      await t.close();
      if (!pgTest) await database.db.close();
    }
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await smtp?.close();
    await ses?.close();
    await pgTest?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  function startWorkerProcess(): ChildProcess {
    const child = spawnWorkerProcess({
      MASTER_KEYS: masterKeys,
      DATA_DIR: dataDir,
      ...(pgTest ? { DATABASE_URL: pgTest.url! } : {}),
      PROVIDER_ALLOW_PRIVATE_ENDPOINTS: 'true',
      // The claim of a send lasts 2 x this + 10 s and a killed batch's jobs come back 5 s after it
      // (automations/jobs.ts): short enough for a quick test, long enough that a loopback send never
      // times out on a loaded machine (a time-out is retried by design, which would blur the count).
      MESSAGES_SEND_TIMEOUT_MS: '2000',
      MESSAGES_SMTP_CONNECTIONS: String(SMTP_CONNECTIONS),
      MESSAGES_RETRY_SCHEDULE: '1,1,1',
      AUTOMATIONS_SWEEP_SECONDS: '1',
      AUTOMATIONS_BATCH: String(BATCH),
      WORKER_DISPATCH_INTERVAL_MS: '50',
      WORKER_MAINTENANCE_INTERVAL_SECONDS: '1',
    });
    children.push(child);
    return child;
  }
  /** Polls a condition; no deadline of its own (the runner's time-out is the one), but says what it waits for. */
  async function waitFor(what: string, probe: () => boolean | Promise<boolean>): Promise<void> {
    const started = Date.now();
    let said = 0;
    while (!(await probe())) {
      const waited = Math.floor((Date.now() - started) / 30_000);
      if (waited > said) {
        said = waited;
        console.error(`still waiting for ${what} (${said * 30} s)`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const idOf = (m: ReceivedMail) => String(m.mail.headers.get('x-clinic-message-id') ?? '');

  it('after SIGKILL between the SMTP server taking a message and the worker recording it, a restart sends every reminder; only messages in flight repeat, with their Message-ID', async () => {
    // A short pause before each 250 keeps several sends on the wire when the kill lands.
    smtp.delayMs = 5;
    // CRASH_TEST_LOGS=1 also says when each phase ended.
    const t0 = Date.now();
    const lap = (what: string) => process.env.CRASH_TEST_LOGS && console.error(`${what}: ${Date.now() - t0} ms`);
    const first = startWorkerProcess();
    let killedOn = '';
    smtp.onMessage = (m) => {
      if (smtp.received.length === 1) lap('first message');
      if (smtp.received.length !== KILL_AT) return;
      // Synchronous, before the server answers: the worker dies with this message taken in and unrecorded.
      first.kill('SIGKILL');
      killedOn = idOf(m);
    };
    await exited(first);
    smtp.onMessage = null;
    lap('killed');
    assert.equal(first.signalCode, 'SIGKILL');
    assert.ok(killedOn, 'the kill came from the server taking a message in');

    // What the kill left: messages claimed and not recorded (state sending).
    const inFlight = await withDb(async (db) => {
      const { rows } = await db.query<{ id: string }>(`select id from messages where organization_id = $1 and status = 'sending'`, [orgId]);
      return new Set(rows.map((r) => r.id));
    });
    const beforeRestart = new Set(smtp.received.map(idOf));
    assert.ok(inFlight.has(killedOn), 'the message taken in at the kill is unrecorded (sending)');
    assert.ok(inFlight.size <= CONCURRENCY, `${inFlight.size} messages in flight; at most ${CONCURRENCY} are claimed at once`);
    assert.ok(beforeRestart.size < APPOINTMENTS, 'the kill landed mid-run');
    // Every unrecorded message the server had already taken in must come again (nobody knows it arrived).
    const mustRepeat = [...inFlight].filter((id) => beforeRestart.has(id));

    lap('snapshot');
    const second = startWorkerProcess();
    const counts = () => {
      const n = new Map<string, number>();
      for (const m of smtp.received) n.set(idOf(m), (n.get(idOf(m)) ?? 0) + 1);
      return n;
    };
    await waitFor('every reminder, and the repeat of each message in flight at the kill', () => {
      const n = counts();
      return n.size >= APPOINTMENTS && mustRepeat.every((id) => (n.get(id) ?? 0) >= 2);
    });
    lap('wire complete');
    if (pgTest) {
      await waitFor('every run done', async () => {
        const { rows } = await pgTest!.db.query<{ n: number }>(
          `select count(*)::int as n from automation_runs where organization_id = $1 and status <> 'done'`,
          [orgId],
        );
        return rows[0]!.n === 0;
      });
    }
    // Gracefully: sends in hand are finished and recorded.
    second.kill('SIGTERM');
    await exited(second);
    assert.equal(second.exitCode, 0, 'the second worker stopped cleanly');
    lap('stopped');

    // The wire: every due reminder, one distinct Message-ID per run.
    const n = counts();
    assert.equal(n.size, APPOINTMENTS, 'one distinct Message-ID per due reminder');
    assert.deepEqual(new Set(smtp.received.flatMap((m) => m.to)), emails, 'every patient got the reminder');
    for (const m of smtp.received) assert.equal(m.mail.messageId, `<${idOf(m)}@127.0.0.1>`, 'the Message-ID names the message');

    await withDb(async (db) => {
      const runs = await db.query<{ id: string; status: string; attempts: number; keys: number; executions: number; pending_job: boolean }>(
        `select r.id, r.status, r.attempts,
                count(*) over (partition by r.rule_id, r.trigger_key, r.target_key)::int as keys,
                (select count(*)::int from automation_executions e where e.organization_id = r.organization_id and e.run_id = r.id) as executions,
                exists (select 1 from pgboss.job j where j.name = 'automation-run' and j.data ->> 'run_id' = r.id::text
                          and j.state in ('created', 'retry', 'active')) as pending_job
         from automation_runs r where r.organization_id = $1 and r.rule_id = $2`,
        [orgId, ruleId],
      );
      assert.equal(runs.rows.length, APPOINTMENTS, 'one run per due appointment');
      assert.ok(
        runs.rows.every((r) => r.keys === 1),
        'one run per (rule, trigger key, target key)',
      );
      assert.ok(
        runs.rows.every((r) => r.executions === 1),
        'one execution per run and action',
      );
      for (const r of runs.rows) {
        if (r.status === 'done') continue;
        // Embedded mode only (services waited for every run): killed after its execution, before its end.
        assert.ok(!pgTest && r.status === 'queued' && r.pending_job, `run ${r.id} is ${r.status} without a pending job`);
      }

      const ex = await db.query<{
        status: string;
        attempts: number;
        message_id: string;
        message_status: string;
        message_attempts: number;
        run_attempts: number;
      }>(
        `select e.status, e.attempts, e.message_id, m.status as message_status, m.attempts as message_attempts, r.attempts as run_attempts
         from automation_executions e
         join automation_runs r on r.organization_id = e.organization_id and r.id = e.run_id
         left join messages m on m.organization_id = e.organization_id and m.id = e.message_id
         where e.organization_id = $1 and e.rule_id = $2`,
        [orgId, ruleId],
      );
      assert.ok(
        ex.rows.every((e) => e.status === 'succeeded' && e.message_status === 'sent'),
        'every execution succeeded with its message sent',
      );
      const messages = await db.query<{ n: number; distinct_runs: number }>(
        `select count(*)::int as n, count(distinct (run_id, action_index))::int as distinct_runs from messages where organization_id = $1`,
        [orgId],
      );
      assert.deepEqual(messages.rows[0], { n: APPOINTMENTS, distinct_runs: APPOINTMENTS }, 'one message row per (run, action)');
      const recorded = new Set(ex.rows.map((e) => e.message_id));
      assert.deepEqual(new Set(n.keys()), recorded, 'the server saw exactly the recorded messages');

      // Repeats on the wire: each follows a claim of its own (attempts), and the crash's are the messages in flight.
      const attemptsOf = new Map(ex.rows.map((e) => [e.message_id, e]));
      for (const [id, count] of n)
        assert.ok(count <= attemptsOf.get(id)!.message_attempts, `message ${id} sent ${count} times, claimed fewer`);
      // A send that timed out on a loaded machine is retried by design (its run deferred): not the crash's.
      const retried = (id: string) => attemptsOf.get(id)!.run_attempts > 0 || attemptsOf.get(id)!.message_attempts > 2;
      const repeated = [...n].filter(([id, count]) => count > 1 && !retried(id)).map(([id]) => id);
      assert.deepEqual(
        new Set(repeated),
        new Set(mustRepeat.filter((id) => !retried(id))),
        'the crash repeated exactly the in-flight messages the server had',
      );
      assert.ok(repeated.includes(killedOn) || retried(killedOn), 'the message taken in at the kill was sent again');
      assert.ok(
        repeated.every((id) => n.get(id) === 2),
        'a repeat happens once',
      );
      for (const id of repeated) {
        const copies = smtp.received.filter((m) => idOf(m) === id);
        assert.deepEqual(
          copies.map((m) => [m.mail.messageId, m.mail.subject, m.mail.text, m.to.join()]),
          [copies[0]!, copies[0]!].map((m) => [m.mail.messageId, m.mail.subject, m.mail.text, m.to.join()]),
          'a repeat is the same message',
        );
      }
      assert.ok(
        ex.rows.filter((e) => e.run_attempts > 0).length < APPOINTMENTS / 10,
        'few sends needed a retry: the time-out is far too short for this machine',
      );
    });
  });
});
