import { randomBytes } from 'node:crypto';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Messages, automations and segments (spec 4.5 Automations and Segments, 2.7 segments.*).
 * Default grants of migration 0090: admin automations.view_org, automations.manage, messages.view_org and
 * every segments code; customer_support automations.view_org, messages.view_org, segments.view_org and
 * segments.view_own_membership; specialist segments.view_own_membership.
 * - Templates, rules, the execution trail and quiet hours are read with automations.view_org or manage
 *   (admin, customer_support, superadmin) and written with automations.manage (admin, superadmin).
 * - The message log is read with messages.view_org (admin, customer_support, superadmin); a patient lists
 *   its own (200, empty here) and does not find a message of the clinic's (404: row policy).
 * Everyone else is refused at the gate (403); without a token 401.
 */
const hex = () => randomBytes(5).toString('hex');
const as = (f: Fixture, p: Prepared = {}): Prepared => ({ ...p, headers: { 'x-organization-id': f.orgId, ...p.headers } });
const row = (r: Partial<Row>): Row => ({
  admin: 403,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 403,
  anonymous: 401,
  ...r,
});
const readers = (status: number) => row({ admin: status, customer_support: status, superadmin: status });
const managers = (status: number) => row({ admin: status, superadmin: status });

async function freshTemplate(f: Fixture): Promise<string> {
  const { rows } = await f.t.db.query<{ id: string }>(
    `insert into message_templates (organization_id, name, channel, content) values ($1, $2, 'email', '{"en": {"subject": "Hi", "text": "Hello"}}') returning id`,
    [f.orgId, `Matrix ${hex()}`],
  );
  return rows[0]!.id;
}
let sharedTemplate: string | null = null;
const templateId = async (f: Fixture) => (sharedTemplate ??= await freshTemplate(f));

async function freshRule(f: Fixture): Promise<string> {
  const { rows } = await f.t.db.query<{ id: string }>(
    `insert into automation_rules (organization_id, name, "trigger", actions) values ($1, $2, '{"type": "event", "event_type": "appointment.created"}', '[{"type": "call_webhooks"}]') returning id`,
    [f.orgId, `Matrix ${hex()}`],
  );
  return rows[0]!.id;
}
let sharedRule: string | null = null;
const ruleId = async (f: Fixture) => (sharedRule ??= await freshRule(f));

let sharedMessage: string | null = null;
async function messageId(f: Fixture): Promise<string> {
  if (sharedMessage) return sharedMessage;
  const { rows } = await f.t.db.query<{ id: string }>(
    `insert into messages (organization_id, channel, purpose, to_address, language, subject, body_text, status)
     values ($1, 'email', 'transactional', 'someone@example.org', 'en', 'Hi', 'Hello', 'sent') returning id`,
    [f.orgId],
  );
  sharedMessage = rows[0]!.id;
  return sharedMessage;
}

export const entries: Fragment = {
  listMessageTemplates: { row: readers(200), request: { method: 'GET', path: '/v1/message-templates', prepare: (f) => as(f) } },
  createMessageTemplate: {
    row: managers(201),
    request: {
      method: 'POST',
      path: '/v1/message-templates',
      prepare: (f) => as(f, { body: { name: `New ${hex()}`, channel: 'sms', content: { en: { text: 'Hello {{patient.first_name}}' } } } }),
    },
  },
  getMessageTemplate: {
    row: readers(200),
    request: { method: 'GET', path: '/v1/message-templates/{id}', prepare: async (f) => as(f, { params: { id: await templateId(f) } }) },
  },
  updateMessageTemplate: {
    row: managers(200),
    request: {
      method: 'PATCH',
      path: '/v1/message-templates/{id}',
      prepare: async (f) => as(f, { params: { id: await templateId(f) }, body: { name: `Renamed ${hex()}` } }),
    },
  },
  deleteMessageTemplate: {
    row: managers(204),
    request: {
      method: 'DELETE',
      path: '/v1/message-templates/{id}',
      prepare: async (f) => as(f, { params: { id: await freshTemplate(f) } }),
    },
  },
  testMessageTemplate: {
    // 200 whatever the provider answered (here the outbox folder of a test app, which it cannot write: failed).
    row: managers(200),
    request: {
      method: 'POST',
      path: '/v1/message-templates/{id}/test',
      prepare: async (f) => as(f, { params: { id: await templateId(f) }, body: { to: 'matrix@example.org' } }),
    },
  },
  listMessages: {
    row: row({ admin: 200, customer_support: 200, superadmin: 200, patient: 200 }),
    request: { method: 'GET', path: '/v1/messages', prepare: (f) => as(f) },
  },
  getMessage: {
    row: row({ admin: 200, customer_support: 200, superadmin: 200, patient: 404 }),
    request: { method: 'GET', path: '/v1/messages/{id}', prepare: async (f) => as(f, { params: { id: await messageId(f) } }) },
  },
  listAutomationRules: { row: readers(200), request: { method: 'GET', path: '/v1/automation-rules', prepare: (f) => as(f) } },
  createAutomationRule: {
    row: managers(201),
    request: {
      method: 'POST',
      path: '/v1/automation-rules',
      prepare: (f) =>
        as(f, {
          body: {
            name: `Rule ${hex()}`,
            trigger: { type: 'appointment_offset', offset_minutes: -1440 },
            actions: [{ type: 'call_webhooks' }],
          },
        }),
    },
  },
  getAutomationRule: {
    row: readers(200),
    request: { method: 'GET', path: '/v1/automation-rules/{id}', prepare: async (f) => as(f, { params: { id: await ruleId(f) } }) },
  },
  updateAutomationRule: {
    row: managers(200),
    request: {
      method: 'PATCH',
      path: '/v1/automation-rules/{id}',
      prepare: async (f) => as(f, { params: { id: await ruleId(f) }, body: { name: `Renamed ${hex()}` } }),
    },
  },
  deleteAutomationRule: {
    row: managers(204),
    request: { method: 'DELETE', path: '/v1/automation-rules/{id}', prepare: async (f) => as(f, { params: { id: await freshRule(f) } }) },
  },
  listAutomationExecutions: { row: readers(200), request: { method: 'GET', path: '/v1/automation-executions', prepare: (f) => as(f) } },
  getAutomationSettings: { row: readers(200), request: { method: 'GET', path: '/v1/automation-settings', prepare: (f) => as(f) } },
  putAutomationSettings: {
    row: managers(200),
    request: {
      method: 'PUT',
      path: '/v1/automation-settings',
      prepare: (f) => as(f, { body: { quiet_hours_start: '21:00', quiet_hours_end: '08:00' } }),
    },
  },
};
