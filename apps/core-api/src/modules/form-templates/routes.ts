import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import { errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import {
  CreateTemplateBody,
  FormTemplate,
  FormTemplateVersion,
  TemplateIdParams,
  TemplateListQuery,
  UpdateTemplateBody,
} from './schemas.ts';
import * as svc from './service.ts';
import { versionRoutes } from '../../platform/versioned/routes.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['form-templates'];
const view = requirePermission('form_templates.view');
const manage = requirePermission('form_templates.manage');

/** Form templates with publish / versions / rollback (spec 4.5, 9.6), gated by form_templates.view / .manage. */
export function formTemplateRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.post(
    '/v1/form-templates',
    {
      config: { references: { 'fields[].custom_field_id': 'custom_fields' }, idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createFormTemplate',
        summary: 'Create a form template (published, version 1)',
        description: 'Needs form_templates.manage. Fields are live custom fields of entity type form. Honours Idempotency-Key.',
        body: CreateTemplateBody,
        response: { 201: DataOf(FormTemplate) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createTemplate(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/form-templates',
    {
      onRequest: [view],
      schema: {
        operationId: 'listFormTemplates',
        summary: 'List form templates',
        description:
          'Needs form_templates.view. Pagination, sort (name, created_at), published, q, created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted templates too.',
        querystring: TemplateListQuery,
        response: { 200: ListOf(FormTemplate), 422: ErrorResponse },
      },
    },
    async (request) => {
      const includeDeleted = includeDeletedOf(request);
      return request.inTx((tx) => svc.listTemplates(tx, orgIdOf(request), request.query, includeDeleted));
    },
  );

  r.get(
    '/v1/form-templates/:id',
    {
      onRequest: [view],
      schema: {
        operationId: 'getFormTemplate',
        summary: 'Read a form template',
        params: TemplateIdParams,
        response: { 200: DataOf(FormTemplate) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getTemplate(tx, orgIdOf(request), request.params.id)) }),
  );

  r.patch(
    '/v1/form-templates/:id',
    {
      config: { references: { ':id': 'form_templates', 'fields[].custom_field_id': 'custom_fields' } },
      onRequest: [manage],
      schema: {
        operationId: 'updateFormTemplate',
        summary: 'Edit the template as a draft (same version)',
        params: TemplateIdParams,
        body: UpdateTemplateBody,
        response: { 200: DataOf(FormTemplate) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateTemplate(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/form-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteFormTemplate',
        summary: 'Delete a form template (soft); existing forms keep their snapshots',
        params: TemplateIdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteTemplate(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );

  versionRoutes(r, {
    base: '/v1/form-templates',
    manage,
    read: view,
    text: {
      publish: {
        operationId: 'publishFormTemplate',
        summary: 'Publish the draft as the next version',
        description: '409 already_published when there is no draft.',
      },
      rollback: { operationId: 'rollbackFormTemplate', summary: 'Restore a version as the draft' },
      listVersions: { operationId: 'listFormTemplateVersions', summary: 'Published versions, newest first' },
      getVersion: { operationId: 'getFormTemplateVersion', summary: 'One published version' },
    },
    schemas: {
      resource: FormTemplate,
      version: FormTemplateVersion,
    },
    actorOf: orgActorOf,
    orgOf: orgIdOf,
    service: svc.templateLifecycle,
  });
}
