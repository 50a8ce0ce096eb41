import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { actorOf, orgOf } from '../custom-fields/access.ts';
import {
  CreateTemplateBody,
  FormTemplate,
  FormTemplateVersion,
  TemplateIdParams,
  TemplateListQuery,
  TemplateRollbackBody,
  TemplateVersionListQuery,
  TemplateVersionParams,
  UpdateTemplateBody,
} from './schemas.ts';
import * as svc from './service.ts';
import { versionRoutes } from '../../platform/versioned/routes.ts';
import { bearer, contextOf, errorSchemas } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['form-templates'];
const view = requirePermission('form_templates.view');
const manage = requirePermission('form_templates.manage');

/** Form templates with publish / versions / rollback (spec 4.5, 9.6), gated by form_templates.view / .manage. */
export function formTemplateRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/v1/form-templates',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createFormTemplate',
        tags,
        security: bearer,
        summary: 'Create a form template (published, version 1)',
        description: 'Needs form_templates.manage. Fields are live custom fields of entity type form. Honours Idempotency-Key.',
        body: CreateTemplateBody,
        response: { 201: DataOf(FormTemplate), ...errorResponses },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createTemplate(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/form-templates',
    {
      onRequest: [view],
      schema: {
        operationId: 'listFormTemplates',
        tags,
        security: bearer,
        summary: 'List form templates',
        description: 'Needs form_templates.view. Pagination, sort (name, created_at), published, q, created_at_after/_before.',
        querystring: TemplateListQuery,
        response: { 200: ListOf(FormTemplate), ...errorResponses, 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listTemplates(tx, orgOf(contextOf(request)), request.query)),
  );

  r.get(
    '/v1/form-templates/:id',
    {
      onRequest: [view],
      schema: {
        operationId: 'getFormTemplate',
        tags,
        security: bearer,
        summary: 'Read a form template',
        params: TemplateIdParams,
        response: { 200: DataOf(FormTemplate), ...errorResponses },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getTemplate(tx, orgOf(contextOf(request)), request.params.id)) }),
  );

  r.patch(
    '/v1/form-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateFormTemplate',
        tags,
        security: bearer,
        summary: 'Edit the template as a draft (same version)',
        params: TemplateIdParams,
        body: UpdateTemplateBody,
        response: { 200: DataOf(FormTemplate), ...errorResponses },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => svc.updateTemplate(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/form-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteFormTemplate',
        tags,
        security: bearer,
        summary: 'Delete a form template (soft); existing forms keep their snapshots',
        params: TemplateIdParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      await request.inTx((tx) => svc.deleteTemplate(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );

  versionRoutes(app, {
    base: '/v1/form-templates',
    tags,
    errorResponses,
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
      idParams: TemplateIdParams,
      versionParams: TemplateVersionParams,
      rollbackBody: TemplateRollbackBody,
      versionListQuery: TemplateVersionListQuery,
    },
    actorOf,
    orgOf: (request) => orgOf(contextOf(request)),
    service: {
      publish: svc.publishTemplate,
      rollback: svc.rollbackTemplate,
      listVersions: svc.listTemplateVersions,
      getVersion: svc.getTemplateVersion,
    },
  });
}
