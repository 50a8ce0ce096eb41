import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { RULE_REFERENCES } from './definition.ts';
import * as s from './schemas.ts';
import * as svc from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const manage = requirePermission('automations.manage');
const READ_NOTE = 'automations.view_org or automations.manage.';
const read = async (request: FastifyRequest) => {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'automations.view_org') && !hasPermission(ctx, 'automations.manage'))
    throw errors.forbidden('This needs the automations.view_org or automations.manage permission in the organization.');
};

/** Automation rules (spec 4.5 Automations), the execution trail and quiet hours (docs/automations.md). */
export function automationRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags: ['automations'], errors: errorResponses });
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  r.get(
    '/v1/automation-rules',
    {
      onRequest: [read],
      schema: {
        operationId: 'listAutomationRules',
        summary: 'List the automation rules of the organization',
        description: `${READ_NOTE} Pagination, sort (created_at, name, status, updated_at; newest first by default), status, trigger_type, created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted rules too.`,
        querystring: s.RuleListQuery,
        response: { 200: ListOf(s.Rule), 422: ErrorResponse },
      },
    },
    async (request) => {
      const includeDeleted = includeDeletedOf(request);
      return request.inTx((tx) => svc.listRules(tx, orgIdOf(request), request.query as Record<string, unknown>, includeDeleted));
    },
  );

  r.post(
    '/v1/automation-rules',
    {
      config: {
        references: RULE_REFERENCES,
        referencesInService: true,
        idempotent: true,
      },
      onRequest: [manage],
      schema: {
        operationId: 'createAutomationRule',
        summary: 'Create an automation rule: a trigger, optional conditions and its actions',
        description:
          'Needs automations.manage. The trigger, conditions (segment criteria) and actions are checked as a whole, with their templates, form templates and segment (400 with fields). Honours Idempotency-Key.',
        body: s.CreateRuleBody,
        response: { 201: DataOf(s.Rule) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createRule(tx, actor, request.body as svc.RuleBody)) });
    },
  );

  r.get(
    '/v1/automation-rules/:id',
    {
      onRequest: [read],
      schema: {
        operationId: 'getAutomationRule',
        summary: 'Read an automation rule',
        description: READ_NOTE,
        params: s.IdParams,
        response: { 200: DataOf(s.Rule) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getRule(tx, orgIdOf(request), idOf(request))) }),
  );

  r.patch(
    '/v1/automation-rules/:id',
    {
      config: {
        references: { ':id': 'automation_rules', ...RULE_REFERENCES },
        referencesInService: true,
      },
      onRequest: [manage],
      schema: {
        operationId: 'updateAutomationRule',
        summary: 'Change, pause or resume an automation rule',
        description:
          'Needs automations.manage. Each change moves version and is audited with what changed. status paused stops the rule: nothing new fires and runs waiting to act end as skipped.',
        params: s.IdParams,
        body: s.UpdateRuleBody,
        response: { 200: DataOf(s.Rule) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateRule(tx, actor, idOf(request), request.body as Partial<svc.RuleBody>)) };
    },
  );

  r.delete(
    '/v1/automation-rules/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteAutomationRule',
        summary: 'Delete an automation rule',
        description: 'Needs automations.manage. It never fires again; its runs and executions stay in the trail.',
        params: s.IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteRule(tx, actor, idOf(request)));
      return reply.status(204).send(null);
    },
  );

  r.get(
    '/v1/automation-executions',
    {
      onRequest: [read],
      schema: {
        operationId: 'listAutomationExecutions',
        summary: 'The execution trail: one row per run of every action (append-only)',
        description: `${READ_NOTE} Pagination, sort (created_at, status; newest first by default), rule_id, run_id, status, action_type, patient_id, created_at_after/_before.`,
        querystring: s.ExecutionListQuery,
        response: { 200: ListOf(s.Execution), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listExecutions(tx, orgIdOf(request), request.query as Record<string, unknown>)),
  );

  r.get(
    '/v1/automation-settings',
    {
      onRequest: [read],
      schema: {
        operationId: 'getAutomationSettings',
        summary: "The organization's quiet hours",
        description: `${READ_NOTE} Messages that come due inside quiet hours wait for their end (in the organization's zone).`,
        response: { 200: DataOf(s.Settings) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getSettings(tx, orgIdOf(request))) }),
  );

  r.put(
    '/v1/automation-settings',
    {
      onRequest: [manage],
      schema: {
        operationId: 'putAutomationSettings',
        summary: 'Set or clear the quiet hours',
        description: 'Needs automations.manage. Both bounds HH:MM (the window may pass midnight, 21:00 to 08:00), or both null for none.',
        body: s.PutSettingsBody,
        response: { 200: DataOf(s.Settings) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return {
        data: await request.inTx((tx) =>
          svc.putSettings(tx, actor, request.body as { quiet_hours_start: string | null; quiet_hours_end: string | null }),
        ),
      };
    },
  );
}
