import { appointmentTitle } from '../../platform/icalendar.ts';
import type { Database, Queryable } from '@clinic/db';
import { AppError } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { OrgActor } from '../../platform/actor.ts';
import type { RequestContext } from '../../platform/identity/context.ts';
import { hasActiveConsent } from '../consents/queries.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import { emit } from '../events/emit.ts';
import { createForm } from '../forms/service.ts';
import { isRestricted } from '../gdpr/queries.ts';
import { type Channels, normalizePhone, type Outcome } from '../messages/channels.ts';
import { appointmentIcs } from '../messages/ics.ts';
import { claimedUntil, claimMessage, findTemplate, recordOutcome, type TemplateRow } from '../messages/queries.ts';
import { chooseLanguage, render, type Values } from '../messages/templates.ts';
import { compileCriteria } from '../segments/criteria.ts';
import type { Action } from './definition.ts';
import * as rq from './runs-queries.ts';

/**
 * Runs the actions of automation runs (docs/automations.md). A run's actions go in order; each ends as one
 * execution row. Database actions (tag, form, webhooks) record their execution first in the transaction
 * that acts, so they happen once. A message is claimed (its row written, state sending) in one transaction,
 * sent, and its outcome recorded with its execution in a second: a retry finds the execution and does
 * nothing; a worker killed between the two leaves the message in `sending`, and the run's next attempt
 * (once the claim has run out) sends it again with the same Message-ID. So a send is repeated only when a
 * worker died while it was on the wire.
 */

export interface RunJob {
  organization_id: string;
  run_id: string;
}

export interface EngineDeps {
  db: Database;
  channels: Channels;
  logger: Logger;
  host: string;
  retryScheduleSeconds: number[];
  /** How long a claimed send belongs to its worker (longer than one send can take). */
  leaseSeconds: number;
  /** Runs acted on at once. */
  concurrency: number;
  enqueue: (tx: Queryable, jobs: { data: RunJob; startAfter?: Date }[]) => Promise<void>;
}

type Skip = { skip: string };

export async function processRunJobs(deps: EngineDeps, jobs: RunJob[]): Promise<void> {
  const unique = [...new Map(jobs.map((j) => [`${j.organization_id}:${j.run_id}`, j])).values()];
  const runs = await rq.loadRuns(
    deps.db,
    unique.map((j) => ({ organization_id: j.organization_id, id: j.run_id })),
  );
  const templates = new Map<string, TemplateRow | null>();
  let next = 0;
  let failed: Error | null = null;
  const worker = async () => {
    while (next < runs.length) {
      const run = runs[next++]!;
      try {
        await processRun(deps, run, templates);
      } catch (err) {
        // A failure outside the send paths (the database went away): the batch's job fails once every run
        // of it has had its turn, and pg-boss retries it (what was recorded is not done again).
        deps.logger.error({ run_id: run.id, err: (err as Error).message }, 'automation run failed; it will be retried');
        failed ??= err as Error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.concurrency, runs.length) }, worker));
  if (failed) throw failed;
}

async function processRun(deps: EngineDeps, run: rq.LoadedRun, templates: Map<string, TemplateRow | null>): Promise<void> {
  if (run.status !== 'queued') return;
  // An early job (a duplicate of one scheduled for later): the later one acts.
  if (new Date(run.not_before).getTime() > Date.now() + 1000) return;
  const pending = run.actions.map((a, i) => [i, a] as const).filter(([i]) => !run.done_actions.includes(i));
  if (!pending.length) return finish(deps, run, 'done');

  const skipAll = (reason: string, status: 'done' | 'cancelled' = 'done') =>
    deps.db.transaction(async (tx) => {
      for (const [i, a] of pending)
        await rq.recordExecution(tx, run, { index: i, type: a.type, status: 'skipped', attempts: 0, error: reason, messageId: null });
      await rq.finishRun(tx, run, status, reason);
    });

  if (run.rule_deleted) return skipAll('the rule was deleted');
  if (run.rule_status !== 'active') return skipAll('the rule is paused');
  const appointmentProblem = appointmentState(run);
  if (appointmentProblem) return skipAll(appointmentProblem, 'cancelled');
  if (run.patient_id && !run.patient_live) return skipAll('the patient record was deleted');
  if (!run.patient_id && !run.appointment_id) return skipAll('the target no longer exists');
  if (run.user_id && (await isRestricted(deps.db, run.user_id, run.organization_id)))
    return skipAll('processing of this person is restricted (GDPR art. 18)');
  if (run.conditions) {
    if (!run.patient_id) return skipAll('conditions need a patient record (this is a guest booking)');
    const custom = await latestPublished(deps.db, run.organization_id, { entityType: 'patient' });
    const compiled = compileCriteria(run.conditions, custom, 3, 'conditions');
    if (!(await rq.evaluateConditions(deps.db, run.organization_id, run.patient_id, compiled)))
      return skipAll('the conditions are not met');
  }
  // Quiet hours hold back every message action (and, to keep the order, what follows it).
  if (run.quiet_until && pending.some(([, a]) => a.type === 'send_email' || a.type === 'send_sms')) {
    const at = new Date(run.quiet_until);
    await deps.db.transaction(async (tx) => {
      await rq.deferRun(tx, run, at, null);
      await deps.enqueue(tx, [{ data: { organization_id: run.organization_id, run_id: run.id }, startAfter: at }]);
    });
    return;
  }
  for (const [index, action] of pending) {
    const outcome = await act(deps, run, index, action, templates);
    if (outcome === 'wait') return;
  }
  await finish(deps, run, 'done');
}

function finish(deps: EngineDeps, run: rq.LoadedRun, status: 'done' | 'cancelled') {
  return deps.db.transaction((tx) => rq.finishRun(tx, run, status));
}

/** Why an appointment-offset run no longer applies: cancelled, moved, or its time passed. */
function appointmentState(run: rq.LoadedRun): string | null {
  if (run.trigger_type !== 'appointment_offset') return null;
  if (!run.appointment_status || !run.starts_at) return 'the appointment no longer exists';
  const offset = (run.rule_trigger as { offset_minutes?: number }).offset_minutes ?? -1;
  if (offset < 0 && !['scheduled', 'confirmed'].includes(run.appointment_status)) return `the appointment is ${run.appointment_status}`;
  if (!run.trigger_key.endsWith(`@${new Date(run.starts_at).toISOString().replace(/\.\d{3}Z$/, 'Z')}`)) return 'the appointment moved';
  if (offset < 0 && new Date(run.starts_at).getTime() <= Date.now()) return 'the appointment has started';
  return null;
}

/** One action: 'next' when its execution is recorded (or was), 'wait' when it must be tried again later. */
async function act(
  deps: EngineDeps,
  run: rq.LoadedRun,
  index: number,
  action: Action,
  templates: Map<string, TemplateRow | null>,
): Promise<'next' | 'wait'> {
  const record = (
    tx: Queryable,
    status: 'succeeded' | 'failed' | 'skipped',
    error: string | null,
    messageId: string | null = null,
    attempts = 1,
  ) => rq.recordExecution(tx, run, { index, type: action.type, status, attempts, error, messageId });

  if (action.type === 'send_email' || action.type === 'send_sms') return sendMessage(deps, run, index, action, templates);

  await deps.db.transaction(async (tx) => {
    if (action.type === 'call_webhooks') {
      if (!(await record(tx, 'succeeded', null))) return;
      await emit(tx, run.organization_id, 'automation.triggered', {
        rule_id: run.rule_id,
        run_id: run.id,
        trigger_type: run.trigger_type,
        patient_id: run.patient_id,
        appointment_id: run.appointment_id,
      });
      return;
    }
    if (!run.patient_id) {
      await record(tx, 'skipped', `${action.type} needs a patient record (this is a guest booking)`, null, 0);
      return;
    }
    if (action.type === 'add_tag') {
      if (await record(tx, 'succeeded', null)) await rq.addTag(tx, run.organization_id, run.patient_id, action.tag);
      return;
    }
    if (action.type !== 'assign_form') return;
    // assign_form: a form of the template's latest version for the patient, made as the rule's author.
    try {
      await tx.query('savepoint assign_form');
      if (!(await record(tx, 'succeeded', null))) return;
      await createForm(tx, ruleActor(run), { form_template_id: action.form_template_id, patient_id: run.patient_id });
      await tx.query('release savepoint assign_form');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      await tx.query('rollback to savepoint assign_form');
      await record(tx, 'failed', err.message);
    }
  });
  return 'next';
}

/** The rule's author as the actor of what a rule makes through another module (its audit entry names them). */
function ruleActor(run: rq.LoadedRun): OrgActor & { patientCaller: boolean } {
  const ctx = { principalId: run.rule_owner ?? '00000000-0000-0000-0000-000000000000', impersonation: null } as unknown as RequestContext;
  return { ctx, ip: null, orgId: run.organization_id, patientCaller: false };
}

async function templateOf(deps: EngineDeps, run: rq.LoadedRun, id: string, cache: Map<string, TemplateRow | null>) {
  const key = `${run.organization_id}:${id}`;
  if (!cache.has(key)) cache.set(key, await findTemplate(deps.db, run.organization_id, id));
  return cache.get(key)!;
}

/** What the message needs before it is claimed: the template, an address, the consent. Or why it is skipped. */
async function prepare(
  deps: EngineDeps,
  run: rq.LoadedRun,
  action: { type: 'send_email' | 'send_sms'; template_id: string },
  templates: Map<string, TemplateRow | null>,
): Promise<{ template: TemplateRow; to: string } | Skip | { fail: string }> {
  const template = await templateOf(deps, run, action.template_id, templates);
  if (!template) return { fail: 'the message template was deleted' };
  const email = action.type === 'send_email';
  const to = email ? (run.email ?? run.guest_email) : normalizePhone(run.phone ?? run.guest_phone);
  if (!to || (email && /@invalid$/i.test(to))) return { skip: email ? 'no email address' : 'no phone number that can receive SMS' };
  if (template.purpose === 'marketing') {
    // Marketing only with the consent in force now (spec 2.8); a guest has no ledger, so never.
    if (!run.user_id) return { skip: 'marketing needs consent; a guest booking has none' };
    const purpose = email ? 'marketing_email' : 'marketing_sms';
    if (!(await hasActiveConsent(deps.db, run.user_id, run.organization_id, purpose))) return { skip: `no ${purpose} consent in force` };
  }
  return { template, to };
}

/**
 * Date formats by language, zone and style, made once: making an Intl.DateTimeFormat costs about 0.2 ms, three
 * a message, which a burst of reminders felt (bench/reminders-burst.ts). A bad language or zone throws as before.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(language: string, zone: string, opts: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${language}|${zone}|${opts.dateStyle ?? ''}|${opts.timeStyle ?? ''}`;
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(language, { timeZone: zone, ...opts });
    if (formatters.size >= 1000) formatters.clear();
    formatters.set(key, f);
  }
  return f;
}

function valuesOf(run: rq.LoadedRun, language: string): Values {
  const guestFirst = run.guest_name?.trim().split(/\s+/)[0] ?? '';
  const first = run.first_name ?? guestFirst;
  const last = run.last_name ?? (run.guest_name ? run.guest_name.trim().split(/\s+/).slice(1).join(' ') : '');
  const v: Values = {
    'patient.first_name': first,
    'patient.last_name': last,
    'patient.full_name': [first, last].filter(Boolean).join(' '),
    'organization.name': run.org_name,
  };
  if (run.starts_at) {
    const zone = run.location_zone ?? run.org_zone;
    const fmt = (opts: Intl.DateTimeFormatOptions) => {
      try {
        return formatter(language, zone, opts).format(new Date(run.starts_at!));
      } catch {
        return formatter('en', 'UTC', opts).format(new Date(run.starts_at!));
      }
    };
    Object.assign(v, {
      'appointment.date': fmt({ dateStyle: 'full' }),
      'appointment.time': fmt({ timeStyle: 'short' }),
      'appointment.starts_at': fmt({ dateStyle: 'medium', timeStyle: 'short' }),
      'appointment.service': run.service_name ?? '',
      'appointment.specialist': run.specialist_name ?? '',
      'appointment.location': run.location_name ?? '',
      'appointment.timezone': zone,
    });
  }
  return v;
}

async function sendMessage(
  deps: EngineDeps,
  run: rq.LoadedRun,
  index: number,
  action: { type: 'send_email' | 'send_sms'; template_id: string },
  templates: Map<string, TemplateRow | null>,
): Promise<'next' | 'wait'> {
  const prep = await prepare(deps, run, action, templates);
  if ('skip' in prep || 'fail' in prep) {
    await deps.db.transaction((tx) =>
      rq.recordExecution(tx, run, {
        index,
        type: action.type,
        status: 'skip' in prep ? 'skipped' : 'failed',
        attempts: 0,
        error: 'skip' in prep ? prep.skip : prep.fail,
        messageId: null,
      }),
    );
    return 'next';
  }
  const { template, to } = prep;
  const language = chooseLanguage(template.content, [run.preferred_language, run.org_language]);
  const rendered = render(template.content, language, valuesOf(run, language));

  // Claim: the appointment still stands (locked against a cancellation until the claim commits), and the
  // message of (run, action) is ours to send.
  const claim = await deps.db.transaction(async (tx) => {
    if (run.trigger_type === 'appointment_offset' && run.appointment_id) {
      const a = await rq.lockAppointment(tx, run.organization_id, run.appointment_id);
      const now = a ? { ...run, appointment_status: a.status, starts_at: a.starts_at } : { ...run, appointment_status: null };
      const problem = appointmentState(now);
      if (problem) return { cancelled: problem };
    }
    const m = await claimMessage(
      tx,
      {
        organization_id: run.organization_id,
        channel: action.type === 'send_email' ? 'email' : 'sms',
        purpose: template.purpose,
        template_id: template.id,
        patient_id: run.patient_id,
        appointment_id: run.appointment_id,
        run_id: run.id,
        action_index: index,
        to_address: to,
        language,
        subject: rendered.subject,
        body_text: rendered.text,
      },
      deps.leaseSeconds,
    );
    if (!m) {
      // Held by another attempt. A worker killed while it held the claim leaves it until the lease runs out,
      // and the killed batch's job may come back before that (its expiry counts from the batch's start, and
      // a claim made late in a long batch outlives it): this job would then end with the run still queued,
      // left to the stale-run sweep (ten minutes). So the run comes back when the claim runs out; if the
      // holder was alive and finished, that job finds the execution and does nothing.
      const until = await claimedUntil(tx, run.organization_id, run.id, index);
      if (until)
        await deps.enqueue(tx, [
          { data: { organization_id: run.organization_id, run_id: run.id }, startAfter: new Date(until.getTime() + 1000) },
        ]);
    }
    return { message: m };
  });
  if ('cancelled' in claim) {
    await deps.db.transaction(async (tx) => {
      for (const [i, a] of run.actions.entries())
        if (!run.done_actions.includes(i))
          await rq.recordExecution(tx, run, {
            index: i,
            type: a.type,
            status: 'skipped',
            attempts: 0,
            error: claim.cancelled!,
            messageId: null,
          });
      await rq.finishRun(tx, run, 'cancelled', claim.cancelled!);
    });
    return 'wait';
  }
  const message = claim.message;
  // Finished already (its execution is being recorded by whoever finished it), or held by another worker now.
  if (!message) return 'wait';

  const base = { id: message.id, createdAt: new Date(message.created_at), orgId: run.organization_id, fromName: run.org_name, to };
  let outcome: Outcome;
  try {
    outcome =
      action.type === 'send_email'
        ? await deps.channels.sendEmail({
            ...base,
            subject: rendered.subject ?? '',
            text: rendered.text,
            html: rendered.html,
            ics:
              template.attach_ics && run.appointment_id && run.starts_at && run.ends_at
                ? appointmentIcs({
                    appointmentId: run.appointment_id,
                    host: deps.host,
                    startsAt: new Date(run.starts_at),
                    endsAt: new Date(run.ends_at),
                    summary: appointmentTitle(run.calendar_title, {
                      clinic: run.org_name,
                      service: run.service_name,
                      specialist: run.specialist_name,
                    }),
                    location: run.location_name,
                    organizer: run.org_name,
                  })
                : null,
          })
        : await deps.channels.sendSms({ ...base, text: rendered.text });
  } catch (err) {
    outcome = { status: 'retry', provider: null, error: (err as Error).message.slice(0, 500) };
  }

  const final = outcome.status !== 'retry' || message.attempts > deps.retryScheduleSeconds.length;
  const delay = deps.retryScheduleSeconds[message.attempts - 1] ?? 0;
  await deps.db.transaction(async (tx) => {
    const status = outcome.status === 'retry' ? (final ? 'failed' : 'retrying') : outcome.status;
    const error = outcome.status === 'sent' ? null : outcome.error;
    await recordOutcome(tx, run.organization_id, message.id, {
      status,
      provider: outcome.provider,
      providerMessageId: outcome.status === 'sent' ? outcome.providerMessageId : null,
      error,
    });
    if (final) {
      const recorded = await rq.recordExecution(tx, run, {
        index,
        type: action.type,
        status: status === 'sent' ? 'succeeded' : 'failed',
        attempts: message.attempts,
        error: status === 'sent' ? null : `${status}: ${error}`,
        messageId: message.id,
      });
      if (!recorded)
        deps.logger.warn(
          { run_id: run.id, action_index: index, message_id: message.id },
          'a message was sent after its execution was recorded',
        );
      if (status === 'sent' || status === 'refused' || status === 'bounced')
        await emit(tx, run.organization_id, `message.${status}`, {
          id: message.id,
          channel: message.channel,
          patient_id: run.patient_id,
          run_id: run.id,
        });
    } else {
      const at = new Date(Date.now() + delay * 1000);
      await rq.deferRun(tx, run, at, error);
      await deps.enqueue(tx, [{ data: { organization_id: run.organization_id, run_id: run.id }, startAfter: at }]);
    }
  });
  return final ? 'next' : 'wait';
}
