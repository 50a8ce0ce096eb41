import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { PLACEHOLDERS } from './templates.ts';

export const TEMPLATE_SORT = { created_at: 'created_at', name: 'name', channel: 'channel' } as const;
export const MESSAGE_SORT = { created_at: 'created_at', status: 'status', sent_at: 'sent_at' } as const;

export const IdParams = Type.Object({ id: Uuid });

const Parts = Type.Object(
  {
    subject: Type.Optional(Type.String({ maxLength: 300, description: 'Email only (required there).' })),
    text: Type.String({ minLength: 1, maxLength: 10_000, description: 'The text part (the whole message of an SMS).' }),
    html: Type.Optional(Type.String({ maxLength: 50_000, description: 'Email only: the HTML part; placeholder values are HTML-escaped.' })),
  },
  { additionalProperties: false },
);

const Content = Type.Record(Type.String({ maxLength: 35 }), Parts, {
  description: `Text per language (BCP 47 tag in canonical form, such as en, ro, en-GB). Placeholders: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}. The patient's preferred language is used, else the organization's, else the first given.`,
  maxProperties: 30,
});

export const Template = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  name: Type.String(),
  channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
  purpose: Type.Union([Type.Literal('transactional'), Type.Literal('marketing')], {
    description: 'marketing: sent only to patients whose marketing_email / marketing_sms consent is in force at send time.',
  }),
  content: Type.Record(
    Type.String(),
    Type.Object({ subject: Type.Optional(Type.String()), text: Type.String(), html: Type.Optional(Type.String()) }),
  ),
  attach_ics: Type.Boolean({ description: 'Email about an appointment: attach it as appointment.ics.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const name = Type.String({ minLength: 1, maxLength: 200 });

export const CreateTemplateBody = Type.Object(
  {
    name,
    channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
    purpose: Type.Optional(Type.Union([Type.Literal('transactional'), Type.Literal('marketing')])),
    content: Content,
    attach_ics: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdateTemplateBody = Type.Object(
  {
    name: Type.Optional(name),
    purpose: Type.Optional(Type.Union([Type.Literal('transactional'), Type.Literal('marketing')])),
    content: Type.Optional(Content),
    attach_ics: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const TemplateListQuery = ListQueryWith({
  sort: SortParam(TEMPLATE_SORT),
  channel: Type.Optional(Type.String({ description: '`email` or `sms`.' })),
  ...DateRangeQuery('created_at'),
});

export const TestSendBody = Type.Object(
  {
    to: Type.String({ minLength: 3, maxLength: 320, description: 'An email address (email templates) or an E.164 number (SMS).' }),
    language: Type.Optional(Type.String({ maxLength: 35 })),
  },
  { additionalProperties: false },
);

const Status = Type.String({
  description:
    '`sending` (handed to the provider, outcome not yet recorded), `retrying` (a temporary failure; another attempt is scheduled), `sent`, `refused` (the recipient was refused), `bounced` (the message was refused or bounced later), `failed`, `erased` (its person was erased).',
});

export const Message = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  channel: Type.String(),
  purpose: Type.String(),
  template_id: nullable(Uuid),
  patient_id: nullable(Uuid),
  appointment_id: nullable(Uuid),
  run_id: nullable(Uuid),
  to_address: nullable(Type.String()),
  language: nullable(Type.String()),
  subject: nullable(Type.String()),
  body_text: nullable(Type.String()),
  status: Status,
  provider: nullable(Type.String({ description: '`outbox` (the local folder of the embedded default), `ses`, `twilio`.' })),
  provider_message_id: nullable(Type.String()),
  error: nullable(Type.String()),
  attempts: Type.Integer(),
  created_at: Timestamp,
  sent_at: nullable(Timestamp),
  bounced_at: nullable(Timestamp),
});

export const MessageListQuery = ListQueryWith({
  sort: SortParam(MESSAGE_SORT),
  status: Type.Optional(Type.String()),
  channel: Type.Optional(Type.String()),
  patient_id: Type.Optional(Type.String()),
  appointment_id: Type.Optional(Type.String()),
  run_id: Type.Optional(Type.String()),
  template_id: Type.Optional(Type.String()),
  ...DateRangeQuery('created_at'),
});

export const TestSendResult = Type.Object({
  message_id: Uuid,
  status: Status,
  provider: nullable(Type.String()),
  error: nullable(Type.String()),
});
