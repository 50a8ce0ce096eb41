import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { actorOf, contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import type { Channels } from './channels.ts';
import * as s from './schemas.ts';
import * as svc from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const manage = requirePermission('automations.manage');
const READ_NOTE = 'automations.view_org or automations.manage.';

const readTemplates = async (request: FastifyRequest) => {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'automations.view_org') && !hasPermission(ctx, 'automations.manage'))
    throw errors.forbidden('This needs the automations.view_org or automations.manage permission in the organization.');
};
/** messages.view_org for the organization's log; a patient (or its caregiver) reads its own messages. */
const readMessages = async (request: FastifyRequest) => {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'messages.view_org') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs the messages.view_org permission in the organization.');
};

/** Message templates (used by automation rules) and the message log (docs/automations.md). */
export function messageRoutes(app: FastifyInstance, deps: { channels: Channels }): void {
  const r = routesOf(app, { tags: ['messages'], errors: errorResponses });
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  r.get(
    '/v1/message-templates',
    {
      onRequest: [readTemplates],
      schema: {
        operationId: 'listMessageTemplates',
        summary: 'List the message templates of the organization',
        description: `${READ_NOTE} Pagination, sort (created_at, name, channel; newest first by default), channel, created_at_after/_before.`,
        querystring: s.TemplateListQuery,
        response: { 200: ListOf(s.Template), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listTemplates(tx, orgIdOf(request), request.query as Record<string, unknown>)),
  );

  r.post(
    '/v1/message-templates',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createMessageTemplate',
        summary: 'Create a message template (email or SMS, text per language)',
        description:
          'Needs automations.manage. Every placeholder must be known and every language a canonical BCP 47 tag (400 with fields). 409 template_name_taken. Honours Idempotency-Key.',
        body: s.CreateTemplateBody,
        response: { 201: DataOf(s.Template) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createTemplate(tx, actor, request.body as svc.TemplateBody)) });
    },
  );

  r.get(
    '/v1/message-templates/:id',
    {
      onRequest: [readTemplates],
      schema: {
        operationId: 'getMessageTemplate',
        summary: 'Read a message template',
        description: READ_NOTE,
        params: s.IdParams,
        response: { 200: DataOf(s.Template) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getTemplate(tx, orgIdOf(request), idOf(request))) }),
  );

  r.patch(
    '/v1/message-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateMessageTemplate',
        summary: 'Change a message template',
        description:
          'Needs automations.manage. content replaces every language at once; the channel never changes. Sends already made keep what they said.',
        params: s.IdParams,
        body: s.UpdateTemplateBody,
        response: { 200: DataOf(s.Template) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateTemplate(tx, actor, idOf(request), request.body as Partial<svc.TemplateBody>)) };
    },
  );

  r.delete(
    '/v1/message-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteMessageTemplate',
        summary: 'Delete a message template',
        description: 'Needs automations.manage. 409 template_in_use while a rule sends it. Messages sent with it stay in the log.',
        params: s.IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteTemplate(tx, actor, idOf(request)));
      return reply.status(204).send(null);
    },
  );

  r.post(
    '/v1/message-templates/:id/test',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'testMessageTemplate',
        summary: 'Send the template now, with sample values, to an address you give',
        description:
          "Needs automations.manage. Goes through the organization's email or SMS provider like any message (the outbox folder when none is configured) and is logged; never retried. 200 whatever the provider answered: see status and error. Honours Idempotency-Key.",
        params: s.IdParams,
        body: s.TestSendBody,
        response: { 200: DataOf(s.TestSendResult) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return {
        data: await svc.sendTest(
          (fn) => request.inTx(fn),
          actor,
          deps.channels,
          idOf(request),
          request.body as { to: string; language?: string },
        ),
      };
    },
  );

  r.get(
    '/v1/messages',
    {
      onRequest: [readMessages],
      schema: {
        operationId: 'listMessages',
        summary: 'The message log: every email and SMS sent, with its outcome',
        description:
          'messages.view_org; a patient sees its own. Pagination, sort (created_at, status, sent_at; newest first by default), status, channel, patient_id, appointment_id, run_id, template_id, created_at_after/_before.',
        querystring: s.MessageListQuery,
        response: { 200: ListOf(s.Message), 422: ErrorResponse },
      },
    },
    async (request) =>
      request.inTx((tx) => svc.listMessages(tx, actorOf(request), orgIdOf(request), request.query as Record<string, unknown>)),
  );

  r.get(
    '/v1/messages/:id',
    {
      onRequest: [readMessages],
      schema: {
        operationId: 'getMessage',
        summary: 'Read one message of the log',
        description: 'messages.view_org; a patient reads its own.',
        params: s.IdParams,
        response: { 200: DataOf(s.Message) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getMessage(tx, actorOf(request), orgIdOf(request), idOf(request))) }),
  );
}
