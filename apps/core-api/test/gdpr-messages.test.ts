import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startWorker, type Worker } from '../src/worker/worker.ts';
import { dataOf, startTestApp, type TestApp } from './helpers.ts';
import { type MessagingClinic, type Patient, setUpMessagingClinic } from './support/messaging-clinic.ts';

/*
 * GDPR and messages, automations and segments (migration 0093; docs/automations.md, GDPR):
 * the export holds the messages sent to the person (as GET /v1/messages shows them), the executions of the
 * automation runs that targeted it, its tags and segment memberships; erasure keeps the trail (message rows,
 * executions) with the identity removed (address, subject, text), ends the runs still queued with their
 * actions recorded as skipped, and removes tags and memberships. Messages are really sent by the worker, to
 * the outbox folder (no provider row).
 */
const SECRET = 'bring the knee brace';

describe('gdpr: messages, automation executions, tags and segment memberships', () => {
  let t: TestApp;
  let worker: Worker;
  let outbox: string;
  let c: MessagingClinic;
  let template: string;
  let rule: string;
  let segment: string;
  let bystander: Seeded;

  interface Seeded {
    person: Patient;
    sentRun: string;
    message: string;
    queuedRun: string;
    waiting: string;
  }

  const q = async <T = any>(sql: string, params: unknown[]) => (await t.db.query<T>(sql, params)).rows;
  async function waitFor<T>(probe: () => Promise<T | null | undefined | false>): Promise<T> {
    for (;;) {
      const v = await probe();
      if (v) return v;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function waitExport(token: string, orgId: string | undefined, body: unknown) {
    const opts = orgId ? { org: orgId } : {};
    const queued = dataOf(await t.call('POST', '/v1/gdpr/export', { token, body, ...opts }), 202);
    for (;;) {
      const job = dataOf(await t.call('GET', `/v1/gdpr/exports/${queued.id}`, { token, ...opts }));
      if (job.status === 'done') return JSON.parse((await t.call('GET', job.download_url, { token, ...opts })).body);
      assert.notEqual(job.status, 'failed', JSON.stringify(job));
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * A patient whose visit two hours ahead got its 24-hours-before reminder (an email and a tag, by the worker),
   * who is a member of the segment, and whose visit the day after tomorrow has a run waiting (as quiet hours
   * leave one: queued, its time ahead) with a message that a temporary failure left `retrying`.
   */
  async function seed(first: string): Promise<Seeded> {
    const person = await c.patient(first);
    const soon = await c.book(person, 2);
    const sentRun = await waitFor(async () => {
      const runs = await q<{ id: string; status: string }>('select id, status from automation_runs where appointment_id = $1', [soon.id]);
      return runs[0]?.status === 'done' && runs[0].id;
    });
    const message = (await q<{ id: string }>('select id from messages where run_id = $1', [sentRun]))[0]!.id;
    const later = await c.book(person, 50);
    const [queued] = await q<{ id: string }>(
      `insert into automation_runs (organization_id, rule_id, rule_version, trigger_type, trigger_key, target_key, patient_id, appointment_id, not_before)
       values ($1, $2, 1, 'appointment_offset', $3, $4, $5, $6, now() + interval '1 hour') returning id`,
      [c.org.id, rule, `appointment:${later.id}@${later.starts_at}`, `patient:${person.id}`, person.id, later.id],
    );
    const [waiting] = await q<{ id: string }>(
      `insert into messages (organization_id, channel, purpose, template_id, patient_id, appointment_id, run_id, action_index,
                             to_address, language, subject, body_text, status, attempts, error)
       values ($1, 'email', 'transactional', $2, $3, $4, $5, 0, $6, 'en', 'Your visit', $7, 'retrying', 1, '421 try again later')
       returning id`,
      [c.org.id, template, person.id, later.id, queued!.id, person.email, `Hello ${first}, ${SECRET}`],
    );
    dataOf(await c.call('POST', `/v1/segments/${segment}/evaluate`, c.admin));
    return { person, sentRun, message, queuedRun: queued!.id, waiting: waiting!.id };
  }

  async function assertErased(s: Seeded) {
    // The message stays (the trail and the counts), without who it went to or what it said.
    const [m] = await q('select status, to_address, subject, body_text, error, provider from messages where id = $1', [s.message]);
    assert.deepEqual(m, { status: 'sent', to_address: null, subject: null, body_text: null, error: null, provider: 'outbox' });
    const [w] = await q('select status, to_address, subject, body_text, error from messages where id = $1', [s.waiting]);
    assert.deepEqual(w, { status: 'erased', to_address: null, subject: null, body_text: null, error: null }, 'never claimed again');
    // The executions of the finished run are untouched; the queued run ends, each action recorded as skipped.
    const trail = dataOf(await c.call('GET', `/v1/automation-executions?run_id=${s.sentRun}&sort=created_at`, c.admin));
    assert.deepEqual(trail.map((e: any) => [e.action_type, e.status]).sort(), [
      ['add_tag', 'succeeded'],
      ['send_email', 'succeeded'],
    ]);
    const [run] = await q('select status from automation_runs where id = $1', [s.queuedRun]);
    assert.equal(run.status, 'cancelled');
    const skipped = dataOf(await c.call('GET', `/v1/automation-executions?run_id=${s.queuedRun}`, c.admin));
    assert.deepEqual(skipped.map((e: any) => [e.action_index, e.action_type, e.status, e.error, e.message_id]).sort(), [
      [0, 'send_email', 'skipped', "the person's data was erased (GDPR)", s.waiting],
      [1, 'add_tag', 'skipped', "the person's data was erased (GDPR)", null],
    ]);
    // Tags and memberships go; the patient's messages list no longer says anything about them.
    assert.deepEqual(await q('select tag from patient_tags where patient_id = $1', [s.person.id]), []);
    assert.deepEqual(await q('select 1 from segment_members where patient_id = $1', [s.person.id]), []);
    const all = JSON.stringify(await q('select * from messages where organization_id = $1 and patient_id = $2', [c.org.id, s.person.id]));
    assert.ok(!all.includes(s.person.email) && !all.includes(SECRET), 'no address or text left');
    // The bystander keeps everything.
    const [b] = await q('select to_address, body_text from messages where id = $1', [bystander.message]);
    assert.equal(b.to_address, bystander.person.email);
    assert.deepEqual(await q('select tag from patient_tags where patient_id = $1', [bystander.person.id]), [{ tag: 'reminded' }]);
    const [br] = await q('select status from automation_runs where id = $1', [bystander.queuedRun]);
    assert.equal(br.status, 'queued');
  }

  before(async () => {
    outbox = await mkdtemp(join(tmpdir(), 'gdpr-outbox-'));
    t = await startTestApp({
      env: {
        MESSAGES_OUTBOX_DIR: outbox,
        AUTOMATIONS_SWEEP_SECONDS: '1',
        WORKER_DISPATCH_INTERVAL_MS: '50',
        WORKER_MAINTENANCE_INTERVAL_SECONDS: '1',
      },
    });
    c = await setUpMessagingClinic(t, 'gdprmsg');
    template = dataOf(
      await c.call('POST', '/v1/message-templates', c.admin, {
        name: 'Reminder',
        channel: 'email',
        content: { en: { subject: 'Your visit on {{appointment.date}}', text: `Hello {{patient.first_name}}, ${SECRET}.` } },
      }),
      201,
    ).id;
    rule = dataOf(
      await c.call('POST', '/v1/automation-rules', c.admin, {
        name: '24 hours before',
        trigger: { type: 'appointment_offset', offset_minutes: -1440 },
        actions: [
          { type: 'send_email', template_id: template },
          { type: 'add_tag', tag: 'reminded' },
        ],
      }),
      201,
    ).id;
    segment = dataOf(
      await c.call('POST', '/v1/segments', c.admin, { name: 'Everyone', criteria: { field: 'patient.last_name', op: 'is_set' } }),
      201,
    ).id;
    worker = await startWorker(t.rt);
    bystander = await seed('Bystander');
  });
  after(async () => {
    await worker?.close();
    await t?.close();
    await rm(outbox, { recursive: true, force: true });
  });

  it("export: the clinic's copy holds the person's messages, executions, tags and memberships; the person's own leaves out internals", async () => {
    const s = await seed('Exported');
    const clinic = await waitExport(c.admin, c.org.id, { patient_id: s.person.id });
    const sent = clinic.messages.find((m: any) => m.id === s.message);
    assert.deepEqual(
      [sent.channel, sent.purpose, sent.status, sent.provider, sent.to_address, sent.template_id],
      ['email', 'transactional', 'sent', 'outbox', s.person.email, template],
    );
    assert.match(sent.body_text, /Hello Exported, bring the knee brace/);
    assert.ok('provider_message_id' in sent && 'error' in sent);
    assert.deepEqual(clinic.messages.map((m: any) => m.id).sort(), [s.message, s.waiting].sort());
    const ofSent = clinic.automation_executions.filter((e: any) => e.run_id === s.sentRun);
    assert.deepEqual(ofSent.map((e: any) => [e.action_type, e.status, e.rule_name, e.trigger_type, e.patient_id]).sort(), [
      ['add_tag', 'succeeded', '24 hours before', 'appointment_offset', s.person.id],
      ['send_email', 'succeeded', '24 hours before', 'appointment_offset', s.person.id],
    ]);
    assert.equal(ofSent.find((e: any) => e.action_type === 'send_email').message_id, s.message);
    assert.deepEqual(
      clinic.patient_tags.map((x: any) => x.tag),
      ['reminded'],
    );
    assert.deepEqual(
      clinic.segment_memberships.map((x: any) => [x.segment_id, x.segment_name]),
      [[segment, 'Everyone']],
    );

    const mine = await waitExport(s.person.token, undefined, {});
    const own = mine.messages.find((m: any) => m.id === s.message);
    assert.equal(own.to_address, s.person.email);
    assert.ok(!('provider_message_id' in own) && !('error' in own), 'as the API shows a patient its messages');
    assert.deepEqual(mine.automation_executions.map((e: any) => e.id).sort(), clinic.automation_executions.map((e: any) => e.id).sort());
    assert.ok(!('rule_name' in mine.automation_executions[0]) && !('error' in mine.automation_executions[0]));
    assert.deepEqual(mine.patient_tags, [], "tags are the clinic's labels");
    assert.deepEqual(
      mine.segment_memberships.map((x: any) => [x.segment_id, 'segment_name' in x]),
      [[segment, false]],
    );
    const text = JSON.stringify([clinic, mine]);
    assert.ok(!text.includes(bystander.person.email) && !text.includes(bystander.message), "another patient's messages are not in it");
  });

  it('clinic erasure: messages keep their row without address or text, queued runs end with their actions skipped, the trail stays; tags and memberships go', async () => {
    const s = await seed('Erased');
    dataOf(await t.call('POST', '/v1/gdpr/erase', { token: c.admin, org: c.org.id, body: { patient_id: s.person.id } }));
    await assertErased(s);
    const [entry] = await q<{ data: any }>(
      "select data from audit_logs where action = 'gdpr.erased' and entity_id = $1 order by created_at desc limit 1",
      [s.person.userId],
    );
    assert.deepEqual(
      [
        entry!.data.messages_cleared,
        entry!.data.automation_runs_cancelled,
        entry!.data.patient_tags_removed,
        entry!.data.segment_memberships_removed,
      ],
      [2, 1, 1, 1],
    );
  });

  it('account deletion (DELETE /v1/me) erases the same', async () => {
    const s = await seed('Deleted');
    assert.equal((await t.call('DELETE', '/v1/me', { token: s.person.token, org: c.org.id })).statusCode, 204);
    await assertErased(s);
  });
});
