import { isForeignKeyViolation, isUniqueViolation, type Queryable } from '@clinic/db';
import { type DateRange, errors, type Pagination, type Sort, SqlWhere } from '@clinic/http-kit';
import type { TemplateContent } from './templates.ts';
import { pageOf } from '../../platform/page.ts';

export interface TemplateRow {
  id: string;
  organization_id: string;
  name: string;
  channel: 'email' | 'sms';
  purpose: 'transactional' | 'marketing';
  content: TemplateContent;
  attach_ics: boolean;
  created_at: Date;
  updated_at: Date;
}

const T_COLUMNS = 'id, organization_id, name, channel, purpose, content, attach_ics, created_at, updated_at';

const nameTaken = () => errors.conflict('template_name_taken', 'Another message template of this organization has this name.');

export async function insertTemplate(
  tx: Queryable,
  orgId: string,
  t: Pick<TemplateRow, 'name' | 'channel' | 'purpose' | 'content' | 'attach_ics'>,
  principalId: string,
): Promise<TemplateRow> {
  try {
    const { rows } = await tx.query<TemplateRow>(
      `insert into message_templates (organization_id, name, channel, purpose, content, attach_ics, created_by_principal_id)
       values ($1, $2, $3, $4, $5, $6, $7) returning ${T_COLUMNS}`,
      [orgId, t.name, t.channel, t.purpose, JSON.stringify(t.content), t.attach_ics, principalId],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

export async function findTemplate(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<TemplateRow | null> {
  const { rows } = await tx.query<TemplateRow>(
    `select ${T_COLUMNS} from message_templates where organization_id = $1 and id = $2${forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function updateTemplate(
  tx: Queryable,
  orgId: string,
  id: string,
  t: Pick<TemplateRow, 'name' | 'purpose' | 'content' | 'attach_ics'>,
): Promise<TemplateRow> {
  try {
    const { rows } = await tx.query<TemplateRow>(
      `update message_templates set name = $3, purpose = $4, content = $5, attach_ics = $6
       where organization_id = $1 and id = $2 returning ${T_COLUMNS}`,
      [orgId, id, t.name, t.purpose, JSON.stringify(t.content), t.attach_ics],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

export async function deleteTemplate(tx: Queryable, orgId: string, id: string): Promise<void> {
  try {
    await tx.query('delete from message_templates where organization_id = $1 and id = $2', [orgId, id]);
  } catch (err) {
    if (isForeignKeyViolation(err)) throw errors.conflict('template_in_use', 'This template is still referenced.');
    throw err;
  }
}

/** Live rules whose actions name the template (they would fail at send time without it). */
export async function rulesUsingTemplate(tx: Queryable, orgId: string, id: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `select id from automation_rules where organization_id = $1 and deleted_at is null
       and exists (select 1 from jsonb_array_elements(actions) a where a ->> 'template_id' = $2::text)`,
    [orgId, id],
  );
  return rows.map((r) => r.id);
}

export async function listTemplates(
  tx: Queryable,
  orgId: string,
  f: { channel?: string; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: TemplateRow[]; total: number }> {
  const where = new SqlWhere();
  where.add('organization_id = ?', orgId);
  where.optional('channel = ?', f.channel);
  where.dateRange('created_at', f.created);
  return pageOf(tx, `select ${T_COLUMNS}`, `from message_templates where ${where.text}`, where, sort, page);
}

export interface MessageRow {
  id: string;
  organization_id: string;
  channel: 'email' | 'sms';
  purpose: 'transactional' | 'marketing';
  template_id: string | null;
  patient_id: string | null;
  appointment_id: string | null;
  run_id: string | null;
  action_index: number | null;
  to_address: string | null;
  language: string | null;
  subject: string | null;
  body_text: string | null;
  status: string;
  provider: string | null;
  provider_message_id: string | null;
  error: string | null;
  attempts: number;
  claimed_until: Date | null;
  created_at: Date;
  sent_at: Date | null;
  bounced_at: Date | null;
}

export const M_COLUMNS = `id, organization_id, channel, purpose, template_id, patient_id, appointment_id, run_id, action_index, to_address,
  language, subject, body_text, status, provider, provider_message_id, error, attempts, claimed_until, created_at, sent_at, bounced_at`;

export async function listMessages(
  tx: Queryable,
  orgId: string,
  f: {
    status?: string;
    channel?: string;
    patient_id?: string;
    appointment_id?: string;
    run_id?: string;
    template_id?: string;
    created: DateRange;
  },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: MessageRow[]; total: number }> {
  const where = new SqlWhere();
  where.add('organization_id = ?', orgId);
  where.optional('status = ?', f.status);
  where.optional('channel = ?', f.channel);
  where.optional('patient_id = ?::uuid', f.patient_id);
  where.optional('appointment_id = ?::uuid', f.appointment_id);
  where.optional('run_id = ?::uuid', f.run_id);
  where.optional('template_id = ?::uuid', f.template_id);
  where.dateRange('created_at', f.created);
  return pageOf(tx, `select ${M_COLUMNS}`, `from messages where ${where.text}`, where, sort, page);
}

export async function findMessage(tx: Queryable, orgId: string, id: string): Promise<MessageRow | null> {
  const { rows } = await tx.query<MessageRow>(`select ${M_COLUMNS} from messages where organization_id = $1 and id = $2`, [orgId, id]);
  return rows[0] ?? null;
}

export interface NewMessage {
  organization_id: string;
  channel: 'email' | 'sms';
  purpose: 'transactional' | 'marketing';
  template_id: string | null;
  patient_id: string | null;
  appointment_id: string | null;
  run_id: string | null;
  action_index: number | null;
  to_address: string;
  language: string;
  subject: string | null;
  body_text: string;
}

/**
 * Claims the send of (run, action): inserts the message in state `sending`, or takes over an existing one
 * that nobody holds (its last attempt ended in `retrying`, or a worker died with it in `sending` and its
 * claim ran out). Returns null when the message is finished or another worker holds it now. The attempt
 * count moves here, before the send, so a crash is counted too.
 */
export async function claimMessage(tx: Queryable, m: NewMessage, leaseSeconds: number): Promise<MessageRow | null> {
  const { rows } = await tx.query<MessageRow>(
    `insert into messages (organization_id, channel, purpose, template_id, patient_id, appointment_id, run_id, action_index,
                           to_address, language, subject, body_text, status, attempts, claimed_until)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'sending', 1, now() + make_interval(secs => $13))
     on conflict (organization_id, run_id, action_index) where run_id is not null do update
       set status = 'sending', attempts = messages.attempts + 1, claimed_until = excluded.claimed_until,
           to_address = excluded.to_address, language = excluded.language, subject = excluded.subject, body_text = excluded.body_text
       where messages.status in ('sending', 'retrying') and (messages.claimed_until is null or messages.claimed_until < now())
     returning ${M_COLUMNS}`,
    [
      m.organization_id,
      m.channel,
      m.purpose,
      m.template_id,
      m.patient_id,
      m.appointment_id,
      m.run_id,
      m.action_index,
      m.to_address,
      m.language,
      m.subject,
      m.body_text,
      leaseSeconds,
    ],
  );
  return rows[0] ?? null;
}

/**
 * When the claim on the message of (run, action) runs out, if another attempt holds it now (state sending
 * or retrying, claim in the future); null when nobody holds it (finished, or free to claim).
 */
export async function claimedUntil(tx: Queryable, orgId: string, runId: string, actionIndex: number): Promise<Date | null> {
  const { rows } = await tx.query<{ claimed_until: Date }>(
    `select claimed_until from messages where organization_id = $1 and run_id = $2 and action_index = $3
       and status in ('sending', 'retrying') and claimed_until > now()`,
    [orgId, runId, actionIndex],
  );
  return rows[0] ? new Date(rows[0].claimed_until) : null;
}

/** A message outside any run (a test send): inserted in state sending. */
export async function insertStandaloneMessage(tx: Queryable, m: NewMessage): Promise<MessageRow> {
  const { rows } = await tx.query<MessageRow>(
    `insert into messages (organization_id, channel, purpose, template_id, to_address, language, subject, body_text, status, attempts)
     values ($1, $2, $3, $4, $5, $6, $7, $8, 'sending', 1) returning ${M_COLUMNS}`,
    [m.organization_id, m.channel, m.purpose, m.template_id, m.to_address, m.language, m.subject, m.body_text],
  );
  return rows[0]!;
}

/** The outcome of a send, on the message the caller claimed (its status is still sending). */
export async function recordOutcome(
  tx: Queryable,
  orgId: string,
  id: string,
  o: { status: string; provider: string | null; providerMessageId: string | null; error: string | null },
): Promise<void> {
  await tx.query(
    `update messages set status = $3, provider = coalesce($4, provider), provider_message_id = $5, error = $6, claimed_until = null,
       sent_at = case when $3 = 'sent' then now() else sent_at end,
       bounced_at = case when $3 = 'bounced' then now() else bounced_at end
     where organization_id = $1 and id = $2`,
    [orgId, id, o.status, o.provider, o.providerMessageId, o.error],
  );
}
