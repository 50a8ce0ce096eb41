import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import ICAL from 'ical.js';
import { processRunJobs } from '../src/modules/automations/engine.ts';
import { dueAppointmentRuns, dueScheduleRules } from '../src/modules/automations/runs-queries.ts';
import { createChannels } from '../src/modules/messages/channels.ts';
import { createProviderResolver } from '../src/modules/providers/resolver.ts';
import { startWorker, type Worker } from '../src/worker/worker.ts';
import { startFakeSes, type FakeSes } from './fakes/ses.ts';
import { assertError, dataOf, startTestApp, type TestApp } from './helpers.ts';
import { type SmtpSink, startSmtpSink } from './support/mail-servers.ts';
import { type MessagingClinic, type Patient, setUpMessagingClinic } from './support/messaging-clinic.ts';

/*
 * Automation rules and their executions through HTTP and the worker: a reminder
 * 24 hours before an appointment that follows reschedules and stops at cancellations, quiet hours, pausing,
 * marketing consent at send time, actions on domain events, retries that never send twice. Time moves by
 * what the tests control: appointments booked so many hours ahead, a rule's offset, and a queued run's
 * not_before set back past the stale-run threshold (what a lost job would look like).
 */
async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
    void what;
  }
}

describe('automations: rules, runs and executions', () => {
  let t: TestApp;
  let worker: Worker;
  let smtp: SmtpSink;
  let ses: FakeSes;
  let outbox: string;
  let c: MessagingClinic;
  let reminder: { id: string };
  let rule: { id: string; version: number };

  const mailTo = (address: string) => smtp.received.filter((m) => m.to.includes(address));
  const runsOf = async (appointmentId: string) =>
    (
      await t.db.query<{ id: string; status: string; not_before: Date; trigger_key: string }>(
        'select id, status, not_before, trigger_key from automation_runs where organization_id = $1 and appointment_id = $2',
        [c.org.id, appointmentId],
      )
    ).rows;
  const executions = async (query: string) => dataOf(await c.call('GET', `/v1/automation-executions?${query}`, c.admin));
  /** A queued run as a lost job would leave it: picked up by the next sweep. */
  const timeTravel = (runId: string) =>
    t.db.query(`update automation_runs set not_before = now() - interval '11 minutes' where id = $1`, [runId]);
  const quietNow = async (on: boolean) => {
    const hhmm = (d: Date) => d.toISOString().slice(11, 16);
    const body = on
      ? { quiet_hours_start: hhmm(new Date(Date.now() - 3_600_000)), quiet_hours_end: hhmm(new Date(Date.now() + 3_600_000)) }
      : { quiet_hours_start: null, quiet_hours_end: null };
    return dataOf(await c.call('PUT', '/v1/automation-settings', c.admin, body));
  };

  before(async () => {
    outbox = await mkdtemp(join(tmpdir(), 'outbox-'));
    smtp = await startSmtpSink();
    // The worker's health check pings the email row through SES's API: a local one answers it.
    ses = await startFakeSes({ keys: ['AKIAAUTOMATIONS00001'], region: 'eu-west-1', verified: ['reminders@example.org'] });
    t = await startTestApp({
      env: {
        MESSAGES_OUTBOX_DIR: outbox,
        PROVIDER_CACHE_TTL_SECONDS: '0',
        AUTOMATIONS_SWEEP_SECONDS: '1',
        MESSAGES_RETRY_SCHEDULE: '1,1',
        WORKER_DISPATCH_INTERVAL_MS: '50',
        WORKER_MAINTENANCE_INTERVAL_SECONDS: '1',
      },
    });
    c = await setUpMessagingClinic(t, 'auto');
    dataOf(
      await t.call('POST', '/v1/admin/platform-service-providers', {
        token: await t.superadmin(),
        body: {
          capability: 'email',
          organization_id: c.org.id,
          credentials: { access_key_id: 'AKIAAUTOMATIONS00001', secret_access_key: 'automations-test-secret-key-000000000001' },
          config: {
            region: 'eu-west-1',
            from_address: 'reminders@example.org',
            configuration_set: 'auto',
            endpoint_url: ses.url,
            smtp_endpoint: smtp.url,
          },
        },
      }),
      201,
    );
    reminder = dataOf(
      await c.call('POST', '/v1/message-templates', c.admin, {
        name: 'Reminder 24h',
        channel: 'email',
        content: {
          en: {
            subject: 'Reminder: {{appointment.service}} on {{appointment.date}}',
            text: 'Hello {{patient.first_name}}, your appointment with {{appointment.specialist}} is at {{appointment.time}} ({{appointment.timezone}}).',
            html: '<p>Hello {{patient.first_name}}, see you at {{appointment.time}}.</p>',
          },
        },
      }),
      201,
    );
    worker = await startWorker(t.rt);
  });
  after(async () => {
    await worker?.close();
    await t?.close();
    await smtp?.close();
    await ses?.close();
    await rm(outbox, { recursive: true, force: true });
  });

  it('checks a rule as a whole: trigger, actions and their references, conditions against the field catalog', async () => {
    const sms = dataOf(
      await c.call('POST', '/v1/message-templates', c.admin, { name: 'SMS', channel: 'sms', content: { en: { text: 'hi' } } }),
      201,
    );
    const res = await c.call('POST', '/v1/automation-rules', c.admin, {
      name: 'Broken',
      trigger: { type: 'event', event_type: 'specialty.created' },
      conditions: { field: 'patient.ssn', op: 'eq', value: 'x' },
      actions: [
        { type: 'send_email', template_id: sms.id },
        { type: 'add_tag', tag: 'Not A Tag' },
        { type: 'send_email', template_id: '01900000-0000-7000-8000-000000000000' },
      ],
    });
    const err = assertError(res, 400, 'validation_error');
    assert.ok(err.fields['trigger.event_type'], res.body);
    assert.match(err.fields['conditions.field'] ?? JSON.stringify(err.fields), /unknown field/);
    assert.match(err.fields['actions.0.template_id'], /sms template/);
    assert.ok(err.fields['actions.1.tag']);
    assert.match(err.fields['actions.2.template_id'], /no message template/);
    const offset = assertError(
      await c.call('POST', '/v1/automation-rules', c.admin, {
        name: 'Zero',
        trigger: { type: 'appointment_offset', offset_minutes: 0 },
        actions: [{ type: 'call_webhooks' }],
      }),
      400,
      'validation_error',
    );
    assert.ok(offset.fields['trigger.offset_minutes']);
    assertError(
      await c.call('POST', '/v1/automation-rules', c.support, {
        name: 'Nope',
        trigger: { type: 'event', event_type: 'appointment.created' },
        actions: [{ type: 'call_webhooks' }],
      }),
      403,
      'forbidden',
    );
    assert.equal((await t.db.query('select 1 from automation_rules where organization_id = $1', [c.org.id])).rows.length, 0);
  });

  it('24 hours before: a due appointment gets one reminder with its .ics; a later one only when its time comes', async () => {
    rule = dataOf(
      await c.call('POST', '/v1/automation-rules', c.admin, {
        name: 'Reminder',
        trigger: { type: 'appointment_offset', offset_minutes: -1440 },
        actions: [{ type: 'send_email', template_id: reminder.id }],
      }),
      201,
    );
    const ana = await c.patient('Ana');
    const bob = await c.patient('Bob');
    const soon = await c.book(ana, 3);
    const later = await c.book(bob, 30);
    const [mail] = await waitFor('the reminder of the due appointment', async () => (mailTo(ana.email).length ? mailTo(ana.email) : null));
    assert.equal(
      mail!.mail.subject,
      `Reminder: Physio session on ${new Intl.DateTimeFormat('en', { timeZone: 'UTC', dateStyle: 'full' }).format(new Date(soon.starts_at))}`,
    );
    assert.match(mail!.mail.text ?? '', /Hello Ana, your appointment with Dr Who is at .* \(UTC\)\./);
    const ics = mail!.mail.attachments.find((a) => a.filename === 'appointment.ics');
    assert.ok(ics, 'the .ics attachment');
    const event = new ICAL.Component(ICAL.parse(ics.content.toString('utf8'))).getFirstSubcomponent('vevent')!;
    assert.equal(event.getFirstPropertyValue('uid'), `${soon.id}@127.0.0.1`);
    // Private, titled with the clinic's name only (the default calendar_title): no service, no specialist.
    assert.equal(event.getFirstPropertyValue('class'), 'PRIVATE');
    const orgName = (
      await t.db.query<{ name: string }>(
        'select name from organizations o join appointments a on a.organization_id = o.id where a.id = $1',
        [soon.id],
      )
    ).rows[0]!.name;
    assert.equal(event.getFirstPropertyValue('summary'), orgName);
    assert.equal((event.getFirstPropertyValue('dtstart') as ICAL.Time).toJSDate().toISOString(), new Date(soon.starts_at).toISOString());
    const [run] = await runsOf(soon.id);
    await waitFor('the run to finish', async () => (await runsOf(soon.id))[0]?.status === 'done');
    const ex = await executions(`run_id=${run!.id}`);
    assert.equal(ex.length, 1);
    assert.deepEqual([ex[0].status, ex[0].action_type, ex[0].attempts, ex[0].rule_version], ['succeeded', 'send_email', 1, 1]);
    assert.ok(ex[0].message_id);
    assert.equal((await runsOf(later.id)).length, 0, 'not due yet');
    assert.equal(mailTo(bob.email).length, 0);
    // Time moves on (the same as widening the window): the later appointment's reminder comes; the first is not sent again.
    rule = dataOf(
      await c.call('PATCH', `/v1/automation-rules/${rule.id}`, c.admin, { trigger: { type: 'appointment_offset', offset_minutes: -2880 } }),
    );
    assert.equal(rule.version, 2);
    await waitFor('the later reminder', async () => mailTo(bob.email).length);
    assert.equal(mailTo(ana.email).length, 1);
    rule = dataOf(
      await c.call('PATCH', `/v1/automation-rules/${rule.id}`, c.admin, { trigger: { type: 'appointment_offset', offset_minutes: -1440 } }),
    );
  });

  it('a moved appointment moves its reminder: the new time gets one, the old appointment none', async () => {
    const cleo = await c.patient('Cleo');
    const first = await c.book(cleo, 40);
    const moved = dataOf(await c.call('PATCH', `/v1/appointments/${first.id}`, c.support, { start: c.freeSlot(5) }));
    const newId = moved.rescheduled_to ?? moved.id;
    assert.notEqual(newId, first.id);
    await waitFor('the reminder at the new time', async () => mailTo(cleo.email).length);
    const runs = await runsOf(newId);
    assert.equal(runs.length, 1);
    assert.equal((await runsOf(first.id)).length, 0);
    assert.equal(mailTo(cleo.email).length, 1);
  });

  it('quiet hours hold reminders back; a cancellation while one waits cancels it, the others go out when they end', async () => {
    await quietNow(true);
    const dora = await c.patient('Dora');
    const emil = await c.patient('Emil');
    const cancelled = await c.book(dora, 4);
    const kept = await c.book(emil, 4);
    const [waiting] = await waitFor('the deferred run', async () => {
      const r = await runsOf(cancelled.id);
      return r.length && new Date(r[0]!.not_before).getTime() > Date.now() ? r : null;
    });
    const [keptRun] = await waitFor('the other deferred run', async () => {
      const r = await runsOf(kept.id);
      return r.length && new Date(r[0]!.not_before).getTime() > Date.now() ? r : null;
    });
    // Deferred to the end of the quiet hours, nothing sent.
    assert.ok(new Date(waiting!.not_before).getTime() - Date.now() <= 3_600_000 + 60_000);
    assert.equal(mailTo(dora.email).length + mailTo(emil.email).length, 0);
    dataOf(await c.call('PATCH', `/v1/appointments/${cancelled.id}`, c.support, { status: 'cancelled' }));
    await quietNow(false);
    await timeTravel(waiting!.id);
    await timeTravel(keptRun!.id);
    await waitFor('the kept reminder', async () => mailTo(emil.email).length);
    await waitFor('the cancelled run', async () => (await runsOf(cancelled.id))[0]?.status === 'cancelled');
    assert.equal(mailTo(dora.email).length, 0);
    const ex = await executions(`run_id=${waiting!.id}`);
    assert.deepEqual(
      ex.map((e: { status: string; error: string }) => [e.status, e.error]),
      [['skipped', 'the appointment is cancelled']],
    );
  });

  it('a paused rule makes no runs, and a run waiting when it was paused ends skipped; resumed, it reminds again', async () => {
    await quietNow(true);
    const fay = await c.patient('Fay');
    const waitingAppt = await c.book(fay, 6);
    const [waiting] = await waitFor('a deferred run', async () => {
      const r = await runsOf(waitingAppt.id);
      return r.length && new Date(r[0]!.not_before).getTime() > Date.now() ? r : null;
    });
    dataOf(await c.call('PATCH', `/v1/automation-rules/${rule.id}`, c.admin, { status: 'paused' }));
    await quietNow(false);
    const gus = await c.patient('Gus');
    const pausedAppt = await c.book(gus, 6);
    await t.db
      .transaction(async (tx) => {
        const made = await dueAppointmentRuns(tx);
        assert.ok(!made.length, 'a paused rule makes no run');
        throw new Error('rollback');
      })
      .catch((e: Error) => assert.equal(e.message, 'rollback'));
    await timeTravel(waiting!.id);
    await waitFor('the skipped run', async () => (await runsOf(waitingAppt.id))[0]?.status === 'done');
    assert.deepEqual(
      (await executions(`run_id=${waiting!.id}`)).map((e: { status: string; error: string }) => [e.status, e.error]),
      [['skipped', 'the rule is paused']],
    );
    dataOf(await c.call('PATCH', `/v1/automation-rules/${rule.id}`, c.admin, { status: 'active' }));
    await waitFor('the reminder after resuming', async () => mailTo(gus.email).length);
    assert.equal(mailTo(fay.email).length, 0);
    assert.equal((await runsOf(pausedAppt.id)).length, 1);
  });

  it('marketing reaches only patients whose marketing consent is in force at send time; a withdrawal stops a queued send', async () => {
    const promo = dataOf(
      await c.call('POST', '/v1/message-templates', c.admin, {
        name: 'Promo',
        channel: 'email',
        purpose: 'marketing',
        content: { en: { subject: 'Spring offer', text: 'Dear {{patient.first_name}}, 10% off.' } },
      }),
      201,
    );
    const marketing = dataOf(
      await c.call('POST', '/v1/automation-rules', c.admin, {
        name: 'Welcome offer',
        trigger: { type: 'event', event_type: 'appointment.created' },
        actions: [{ type: 'send_email', template_id: promo.id }],
      }),
      201,
    );
    const consent = (p: Patient) =>
      t.db.query(
        `insert into consent_ledger (organization_id, patient_profile_id, purpose_code, purpose_version, source, granted_by_principal_id) values ($1, $2, 'marketing_email', 1, 'api', $2)`,
        [c.org.id, p.userId],
      );
    const yes = await c.patient('Hana');
    const no = await c.patient('Ivo');
    const later = await c.patient('Jon');
    await consent(yes);
    await consent(later);
    await c.book(yes, 100);
    await c.book(no, 100);
    await waitFor('the consented offer', async () => mailTo(yes.email).some((m) => m.mail.subject === 'Spring offer'));
    const skipped = await waitFor('the refused offer', async () => {
      const ex = await executions(`rule_id=${marketing.id}&status=skipped`);
      return ex.length ? ex : null;
    });
    assert.equal(skipped[0].error, 'no marketing_email consent in force');
    assert.ok(!mailTo(no.email).some((m) => m.mail.subject === 'Spring offer'));
    // Queued (quiet hours), then withdrawn: not sent.
    await quietNow(true);
    const appt = await c.book(later, 100);
    const [run] = await waitFor('the deferred offer', async () => {
      const r = (await runsOf(appt.id)).filter((x) => x.trigger_key.startsWith('event:'));
      return r.length && new Date(r[0]!.not_before).getTime() > Date.now() ? r : null;
    });
    await t.db.query(
      `update consent_ledger set withdrawn_at = now(), withdrawn_by_principal_id = patient_profile_id where patient_profile_id = $1 and purpose_code = 'marketing_email'`,
      [later.userId],
    );
    await quietNow(false);
    await timeTravel(run!.id);
    await waitFor('the withdrawn offer', async () => (await executions(`run_id=${run!.id}`)).length);
    assert.equal((await executions(`run_id=${run!.id}`))[0].error, 'no marketing_email consent in force');
    assert.ok(!mailTo(later.email).some((m) => m.mail.subject === 'Spring offer'));
    dataOf(await c.call('PATCH', `/v1/automation-rules/${marketing.id}`, c.admin, { status: 'paused' }), 200);
  });

  it('actions on an event: a tag, the webhooks (automation.triggered) and conditions on the patient', async () => {
    const tagger = dataOf(
      await c.call('POST', '/v1/automation-rules', c.admin, {
        name: 'Tag first-timers',
        trigger: { type: 'event', event_type: 'appointment.created' },
        conditions: {
          and: [
            { field: 'patient.first_name', op: 'eq', value: 'Kim' },
            { field: 'tag', op: 'has_not', value: 'booked' },
          ],
        },
        actions: [{ type: 'add_tag', tag: 'booked' }, { type: 'call_webhooks' }],
      }),
      201,
    );
    const kim = await c.patient('Kim');
    const lea = await c.patient('Lea');
    await c.book(kim, 120);
    await c.book(lea, 121);
    const done = await waitFor('both runs', async () => {
      const { rows } = await t.db.query<{ patient_id: string; status: string; id: string }>(
        `select patient_id, status, id from automation_runs where rule_id = $1 and status = 'done'`,
        [tagger.id],
      );
      return rows.length === 2 ? rows : null;
    });
    const kimRun = done.find((r) => r.patient_id === kim.id)!;
    const leaRun = done.find((r) => r.patient_id === lea.id)!;
    assert.deepEqual(
      (await executions(`run_id=${kimRun.id}&sort=created_at`)).map((e: { action_type: string; status: string }) => [
        e.action_type,
        e.status,
      ]),
      [
        ['add_tag', 'succeeded'],
        ['call_webhooks', 'succeeded'],
      ],
    );
    assert.deepEqual(
      (await executions(`run_id=${leaRun.id}`)).map((e: { status: string; error: string }) => [e.status, e.error]),
      [
        ['skipped', 'the conditions are not met'],
        ['skipped', 'the conditions are not met'],
      ],
    );
    const tags = await t.db.query('select tag from patient_tags where organization_id = $1 and patient_id = $2', [c.org.id, kim.id]);
    assert.deepEqual(tags.rows, [{ tag: 'booked' }]);
    const events = await t.db.query<{ data: { run_id: string; patient_id: string } }>(
      `select data from domain_events where organization_id = $1 and type = 'automation.triggered'`,
      [c.org.id],
    );
    assert.deepEqual(
      events.rows.map((e) => [e.data.run_id, e.data.patient_id]),
      [[kimRun.id, kim.id]],
    );
    dataOf(await c.call('DELETE', `/v1/automation-rules/${tagger.id}`, c.admin), 204);
  });

  it('a temporary SMTP failure is retried: one message, two attempts; running a finished run again sends nothing', async () => {
    const max = await c.patient('Max');
    smtp.deferOnce.add(max.email);
    const appt = await c.book(max, 7);
    const [run] = await waitFor('the retried reminder', async () => {
      const r = await runsOf(appt.id);
      return r[0]?.status === 'done' ? r : null;
    });
    assert.equal(mailTo(max.email).length, 1);
    const ex = await executions(`run_id=${run!.id}`);
    assert.deepEqual([ex[0].status, ex[0].attempts], ['succeeded', 2]);
    const message = dataOf(await c.call('GET', `/v1/messages/${ex[0].message_id}`, c.admin));
    assert.deepEqual([message.status, message.attempts], ['sent', 2]);
    // A duplicate job (a retry of a batch, a second worker) finds the execution and sends nothing.
    const resolver = createProviderResolver({ db: t.db, secrets: t.rt.secrets, ttlMs: 0 });
    const channels = createChannels({
      resolver,
      outboxDir: outbox,
      defaultFrom: 'x@example.org',
      host: '127.0.0.1',
      allowPrivate: true,
      timeoutMs: 5000,
      maxConnections: 2,
      logger: t.rt.logger,
    });
    const deps = {
      db: t.db,
      channels,
      logger: t.rt.logger,
      host: '127.0.0.1',
      retryScheduleSeconds: [1],
      leaseSeconds: 30,
      concurrency: 4,
      enqueue: async () => {},
    };
    await t.db.query(`update automation_runs set status = 'queued' where id = $1`, [run!.id]);
    await Promise.all([
      processRunJobs(deps, [{ organization_id: c.org.id, run_id: run!.id }]),
      processRunJobs(deps, [{ organization_id: c.org.id, run_id: run!.id }]),
    ]);
    await channels.close();
    assert.equal(mailTo(max.email).length, 1);
    assert.equal((await executions(`run_id=${run!.id}`)).length, 1);
  });

  it('a run whose message another attempt still holds (a worker killed mid-send) comes back when the claim runs out, sending nothing now', async () => {
    const ivy = await c.patient('Ivy');
    // Not due yet (30 hours ahead): the sweep leaves it alone, so the run below is the only one.
    const appt = await c.book(ivy, 30);
    const { rows } = await t.db.query<{ id: string }>(
      `insert into automation_runs (organization_id, rule_id, rule_version, trigger_type, trigger_key, target_key, patient_id, appointment_id)
       select r.organization_id, r.id, r.version, 'appointment_offset',
              'appointment:' || a.id || '@' || to_char(a.starts_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'patient:' || a.patient_id, a.patient_id, a.id
       from automation_rules r, appointments a where r.id = $1 and a.id = $2 returning id`,
      [rule.id, appt.id],
    );
    const runId = rows[0]!.id;
    // What a worker killed between its claim and the outcome leaves: the message sending, its claim running.
    const claim = await t.db.query<{ claimed_until: Date }>(
      `insert into messages (organization_id, channel, purpose, template_id, patient_id, appointment_id, run_id, action_index,
                             to_address, language, subject, body_text, status, attempts, claimed_until)
       values ($1, 'email', 'transactional', $2, $3, $4, $5, 0, $6, 'en', 'Reminder', 'Hello', 'sending', 1, now() + interval '30 seconds')
       returning claimed_until`,
      [c.org.id, reminder.id, ivy.id, appt.id, runId, ivy.email],
    );
    const enqueued: { data: { run_id: string }; startAfter?: Date }[] = [];
    const channels = createChannels({
      resolver: createProviderResolver({ db: t.db, secrets: t.rt.secrets, ttlMs: 0 }),
      outboxDir: outbox,
      defaultFrom: 'x@example.org',
      host: '127.0.0.1',
      allowPrivate: true,
      timeoutMs: 5000,
      maxConnections: 2,
      logger: t.rt.logger,
    });
    try {
      await processRunJobs(
        {
          db: t.db,
          channels,
          logger: t.rt.logger,
          host: '127.0.0.1',
          retryScheduleSeconds: [1],
          leaseSeconds: 30,
          concurrency: 4,
          enqueue: async (_tx, jobs) => void enqueued.push(...jobs),
        },
        [{ organization_id: c.org.id, run_id: runId }],
      );
    } finally {
      await channels.close();
    }
    assert.equal(mailTo(ivy.email).length, 0, 'nothing sent while the claim holds');
    assert.equal(enqueued.length, 1, 'the run comes back (not left to the ten-minute stale-run sweep)');
    assert.equal(enqueued[0]!.data.run_id, runId);
    assert.equal(enqueued[0]!.startAfter!.getTime(), new Date(claim.rows[0]!.claimed_until).getTime() + 1000, 'when the claim runs out');
    assert.equal((await runsOf(appt.id))[0]!.status, 'queued');
    assert.equal((await executions(`run_id=${runId}`)).length, 0);
  });

  it('a daily schedule over a segment acts once a day on each member: a form assigned, a tag; changes are versioned and audited', async () => {
    const [member, other] = [await c.patient('Sched'), await c.patient('Unsched')];
    await t.db.query(`insert into patient_tags (organization_id, patient_id, tag) values ($1, $2, 'nightly')`, [c.org.id, member.id]);
    const segment = dataOf(
      await c.call('POST', '/v1/segments', c.admin, { name: 'Nightly', criteria: { field: 'tag', op: 'has', value: 'nightly' } }),
      201,
    ).id as string;
    const field = dataOf(
      await c.call('POST', '/v1/custom-fields', c.admin, {
        entity_type: 'form',
        key: 'sleep',
        label: 'Hours of sleep',
        field_type: 'number',
      }),
      201,
    ).id as string;
    const form = dataOf(
      await c.call('POST', '/v1/form-templates', c.admin, { name: 'Sleep diary', fields: [{ custom_field_id: field }] }),
      201,
    ).id as string;
    // 00:00 in the organization's zone has always come today: the next sweep fires it.
    const sched = dataOf(
      await c.call('POST', '/v1/automation-rules', c.admin, {
        name: 'Nightly diary',
        status: 'paused',
        trigger: { type: 'schedule', segment_id: segment, time: '00:00' },
        actions: [
          { type: 'assign_form', form_template_id: form },
          { type: 'add_tag', tag: 'diary-sent' },
        ],
      }),
      201,
    );
    const resumed = dataOf(await c.call('PATCH', `/v1/automation-rules/${sched.id}`, c.admin, { status: 'active' }));
    assert.equal(resumed.version, sched.version + 1);
    const audit = await t.db.query<{ data: any }>(
      `select data from audit_logs where organization_id = $1 and action = 'automation_rule.updated' and entity_id = $2`,
      [c.org.id, sched.id],
    );
    assert.deepEqual(audit.rows[0]?.data.changes?.status, { from: 'paused', to: 'active' });

    const trail = await waitFor('the schedule runs', async () => {
      const rows = dataOf(await c.call('GET', `/v1/automation-executions?rule_id=${sched.id}`, c.admin));
      return rows.length === 2 ? rows : null;
    });
    assert.deepEqual(trail.map((e: any) => [e.action_type, e.status, e.trigger_type, e.rule_version]).sort(), [
      ['add_tag', 'succeeded', 'schedule', resumed.version],
      ['assign_form', 'succeeded', 'schedule', resumed.version],
    ]);
    const forms = await t.db.query<{ patient_id: string; form_template_id: string }>(
      'select patient_id, form_template_id from forms where organization_id = $1 and form_template_id = $2',
      [c.org.id, form],
    );
    assert.deepEqual(forms.rows, [{ patient_id: member.id, form_template_id: form }], 'the member, not the other patient');
    const tags = await t.db.query('select patient_id from patient_tags where organization_id = $1 and tag = $2', [c.org.id, 'diary-sent']);
    assert.deepEqual(tags.rows, [{ patient_id: member.id }]);
    assert.ok(!tags.rows.some((r: any) => r.patient_id === other.id));
    // Once a day: the sweep's query finds the rule done for today's local date, so no second run is made.
    assert.ok(!(await dueScheduleRules(t.db)).some((r) => r.id === sched.id));
    const runs = await t.db.query<{ trigger_key: string }>('select trigger_key from automation_runs where rule_id = $1', [sched.id]);
    assert.equal(runs.rows.length, 1);
    assert.match(runs.rows[0]!.trigger_key, /^schedule:\d{4}-\d{2}-\d{2}$/);
  });

  it('the execution trail is append-only for every role, the owner included', async () => {
    await assert.rejects(t.db.query('update automation_executions set status = $1', ['failed']), /append-only/);
    await assert.rejects(t.db.query('delete from automation_executions'), /append-only/);
    const staff = dataOf(await c.call('GET', '/v1/automation-executions', c.support));
    assert.ok(staff.length > 0, 'automations.view_org reads the trail');
  });
});
