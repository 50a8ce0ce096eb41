import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, normalizeEmail, parseDateRange, parseFilters, parsePagination, parseSort, isUuid } from '@clinic/http-kit';
import type { Actor, OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';
import { canonicalLanguage } from '../../platform/locale.ts';
import { emit } from '../events/emit.ts';
import { type Channels, normalizePhone } from './channels.ts';
import * as q from './queries.ts';
import { MESSAGE_SORT, TEMPLATE_SORT } from './schemas.ts';
import { type Channel, chooseLanguage, contentProblems, render, SAMPLE_VALUES, type TemplateContent } from './templates.ts';

const notFound = () => errors.notFound('No message template with this id in this organization.');

/** What callers see of a template: the row without internals. */
export function presentTemplate(t: q.TemplateRow) {
  return t;
}

function checkContent(channel: Channel, content: Record<string, unknown>): TemplateContent {
  const problems = contentProblems(channel, content);
  if (Object.keys(problems).length) throw errors.validation(problems);
  return content as TemplateContent;
}

export interface TemplateBody {
  name: string;
  channel: Channel;
  purpose?: 'transactional' | 'marketing';
  content: Record<string, unknown>;
  attach_ics?: boolean;
}

export async function createTemplate(tx: Queryable, actor: OrgActor, body: TemplateBody): Promise<q.TemplateRow> {
  const name = body.name.trim();
  if (!name) throw errors.validation({ name: 'must not be blank' });
  const row = await q.insertTemplate(
    tx,
    actor.orgId,
    {
      name,
      channel: body.channel,
      purpose: body.purpose ?? 'transactional',
      content: checkContent(body.channel, body.content),
      attach_ics: body.attach_ics ?? true,
    },
    actor.ctx.principalId,
  );
  await audit(tx, actor, 'message_template.created', 'message_template', row.id, {
    name: row.name,
    channel: row.channel,
    purpose: row.purpose,
    languages: Object.keys(row.content),
  });
  await emit(tx, actor.orgId, 'message_template.created', { id: row.id, channel: row.channel, purpose: row.purpose });
  return row;
}

export async function getTemplate(tx: Queryable, orgId: string, id: string): Promise<q.TemplateRow> {
  const row = await q.findTemplate(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

export async function updateTemplate(
  tx: Queryable,
  actor: OrgActor,
  id: string,
  body: Partial<Omit<TemplateBody, 'channel'>>,
): Promise<q.TemplateRow> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findTemplate(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const next = {
    name: body.name !== undefined ? body.name.trim() : current.name,
    purpose: body.purpose ?? current.purpose,
    content: body.content !== undefined ? checkContent(current.channel, body.content) : current.content,
    attach_ics: body.attach_ics ?? current.attach_ics,
  };
  if (!next.name) throw errors.validation({ name: 'must not be blank' });
  const changed = (Object.keys(next) as (keyof typeof next)[]).filter((k) => JSON.stringify(next[k]) !== JSON.stringify(current[k]));
  if (!changed.length) return current;
  const row = await q.updateTemplate(tx, actor.orgId, id, next);
  await audit(tx, actor, 'message_template.updated', 'message_template', id, {
    changes: Object.fromEntries(
      changed.map((k) => [
        k,
        k === 'content' ? { from: Object.keys(current.content), to: Object.keys(next.content) } : { from: current[k], to: next[k] },
      ]),
    ),
  });
  await emit(tx, actor.orgId, 'message_template.updated', { id, changed });
  return row;
}

export async function deleteTemplate(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const current = await q.findTemplate(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const rules = await q.rulesUsingTemplate(tx, actor.orgId, id);
  if (rules.length)
    throw errors.conflict(
      'template_in_use',
      `Automation rules still send this template (${rules.slice(0, 5).join(', ')}); change or delete them first.`,
    );
  await q.deleteTemplate(tx, actor.orgId, id);
  await audit(tx, actor, 'message_template.deleted', 'message_template', id, { name: current.name, channel: current.channel });
  await emit(tx, actor.orgId, 'message_template.deleted', { id });
}

export async function listTemplates(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, TEMPLATE_SORT);
  const f = parseFilters(query, ['channel'] as const);
  const { rows, total } = await q.listTemplates(tx, orgId, { ...f, created: parseDateRange(query, 'created_at') }, sort, page);
  return listEnvelope(rows, page, total);
}

/** Staff with messages.view_org see the organization's messages; a patient (row policy) only its own. */
export async function listMessages(tx: Queryable, actor: Actor, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, MESSAGE_SORT);
  const f = parseFilters(query, ['status', 'channel', 'patient_id', 'appointment_id', 'run_id', 'template_id'] as const);
  const bad = (['patient_id', 'appointment_id', 'run_id', 'template_id'] as const).filter((k) => f[k] !== undefined && !isUuid(f[k]));
  if (bad.length) throw errors.queryValidation(Object.fromEntries(bad.map((k) => [k, 'must be a UUID'])));
  const { rows, total } = await q.listMessages(tx, orgId, { ...f, created: parseDateRange(query, 'created_at') }, sort, page);
  return listEnvelope(rows.map(presentMessage(isPatientCaller(actor.ctx))), page, total);
}

/** A patient reading its own messages gets what was sent to it, not the internals. */
const presentMessage =
  (patient: boolean) =>
  ({ claimed_until: _c, action_index: _a, ...m }: q.MessageRow) =>
    patient ? { ...m, error: null, provider_message_id: null } : m;

export async function getMessage(tx: Queryable, actor: Actor, orgId: string, id: string) {
  const row = await q.findMessage(tx, orgId, id);
  if (!row) throw errors.notFound('No message with this id in this organization.');
  return presentMessage(isPatientCaller(actor.ctx))(row);
}

/**
 * POST /v1/message-templates/{id}/test: the template rendered with sample values and sent now to the given
 * address, through the organization's provider like any message (so an operator sees a configuration work
 * or fail), logged as a message with no patient. Never a marketing send to a patient: the address is the
 * caller's choice, not a record's.
 */
export async function sendTest(
  inTx: <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>,
  actor: OrgActor,
  channels: Channels,
  id: string,
  body: { to: string; language?: string },
) {
  const { template, orgName, orgLanguage } = await inTx(async (tx) => {
    const template = await getTemplate(tx, actor.orgId, id);
    const { rows } = await tx.query<{ name: string; language_code: string }>(
      'select name, language_code from organizations where id = $1',
      [actor.orgId],
    );
    return { template, orgName: rows[0]?.name ?? '', orgLanguage: rows[0]?.language_code ?? 'en' };
  });
  let to: string | null;
  if (template.channel === 'email') {
    const checked = normalizeEmail(body.to);
    to = checked.ok ? checked.email : null;
    if (!to) throw errors.validation({ to: 'must be an email address' });
  } else {
    to = normalizePhone(body.to);
    if (!to) throw errors.validation({ to: 'must be a phone number in international form, such as +40712345678' });
  }
  const want = body.language !== undefined ? canonicalLanguage(body.language) : null;
  if (body.language !== undefined && !want) throw errors.validation({ language: 'must be a BCP 47 language tag' });
  const language = chooseLanguage(template.content, [want, orgLanguage]);
  const r = render(template.content, language, { ...SAMPLE_VALUES, 'organization.name': orgName });
  const message = await inTx(async (tx) => {
    const m = await q.insertStandaloneMessage(tx, {
      organization_id: actor.orgId,
      channel: template.channel,
      purpose: template.purpose,
      template_id: template.id,
      patient_id: null,
      appointment_id: null,
      run_id: null,
      action_index: null,
      to_address: to,
      language,
      subject: r.subject,
      body_text: r.text,
    });
    await audit(tx, actor, 'message_template.test_sent', 'message_template', id, { message_id: m.id, channel: template.channel, language });
    return m;
  });
  const outcome =
    template.channel === 'email'
      ? await channels.sendEmail({
          id: message.id,
          createdAt: new Date(message.created_at),
          orgId: actor.orgId,
          fromName: orgName,
          to,
          subject: r.subject ?? '',
          text: r.text,
          html: r.html,
          ics: null,
        })
      : await channels.sendSms({
          id: message.id,
          createdAt: new Date(message.created_at),
          orgId: actor.orgId,
          fromName: orgName,
          to,
          text: r.text,
        });
  // A test send is not retried: a temporary failure is reported as failed, with the reason.
  const status = outcome.status === 'retry' ? 'failed' : outcome.status;
  const error = outcome.status === 'sent' ? null : outcome.error;
  await inTx((tx) =>
    q.recordOutcome(tx, actor.orgId, message.id, {
      status,
      provider: outcome.provider,
      providerMessageId: outcome.status === 'sent' ? outcome.providerMessageId : null,
      error,
    }),
  );
  return { message_id: message.id, status, provider: outcome.provider, error };
}
