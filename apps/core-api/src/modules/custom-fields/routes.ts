import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import { errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { requireStaff } from '../../platform/gates.ts';
import { CreateFieldBody, CustomField, CustomFieldVersion, FieldListQuery, IdParams, UpdateFieldBody } from './schemas.ts';
import * as svc from './service.ts';
import { versionRoutes } from '../../platform/versioned/routes.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['custom-fields'];
const manage = requirePermission('custom_fields.manage');
const scoped = 'The organization is the one in scope (X-Organization-ID).';

/** Custom fields with versions (spec 2.10, 3.1, 4.8). */
export function customFieldRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.post(
    '/v1/custom-fields',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createCustomField',
        summary: 'Create a custom field (published, version 1)',
        description: `Needs custom_fields.manage. The version 1 snapshot is archived. 409 custom_field_key_taken, system_key_taken. Honours Idempotency-Key. ${scoped}`,
        body: CreateFieldBody,
        response: { 201: DataOf(CustomField) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createField(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/custom-fields',
    {
      onRequest: [requireStaff()],
      schema: {
        operationId: 'listCustomFields',
        summary: 'List the live custom fields (any staff member)',
        description: `Pagination, sort (key, label, created_at; newest first by default), entity_type, published, q, created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted fields too. ${scoped}`,
        querystring: FieldListQuery,
        response: { 200: ListOf(CustomField), 422: ErrorResponse },
      },
    },
    async (request) => {
      const includeDeleted = includeDeletedOf(request);
      return request.inTx((tx) => svc.listFields(tx, orgIdOf(request), request.query, includeDeleted));
    },
  );

  r.get(
    '/v1/custom-fields/:id',
    {
      onRequest: [requireStaff()],
      schema: {
        operationId: 'getCustomField',
        summary: 'Read a custom field (current state, draft or published)',
        params: IdParams,
        response: { 200: DataOf(CustomField) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getField(tx, orgIdOf(request), request.params.id)) }),
  );

  r.patch(
    '/v1/custom-fields/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateCustomField',
        summary: 'Edit the field as a draft (same version)',
        description:
          'Needs custom_fields.manage. The field becomes a draft edited in place; new forms and records keep using the last published version.',
        params: IdParams,
        body: UpdateFieldBody,
        response: { 200: DataOf(CustomField) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateField(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/custom-fields/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteCustomField',
        summary: 'Delete a custom field (soft)',
        description: 'Needs custom_fields.manage. Version snapshots and the snapshots inside forms survive.',
        params: IdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteField(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );

  versionRoutes(r, {
    base: '/v1/custom-fields',
    manage,
    read: requireStaff(),
    text: {
      publish: {
        operationId: 'publishCustomField',
        summary: 'Publish the draft as the next version',
        description: 'Needs custom_fields.manage. No body. 409 already_published when there is no draft.',
      },
      rollback: {
        operationId: 'rollbackCustomField',
        summary: 'Restore a version as the draft',
        description: 'Needs custom_fields.manage. 404 when the version does not exist. Publishing the draft makes the next version number.',
      },
      listVersions: { operationId: 'listCustomFieldVersions', summary: 'Published versions, newest first (any staff member)' },
      getVersion: { operationId: 'getCustomFieldVersion', summary: 'One published version (any staff member)' },
    },
    schemas: {
      resource: CustomField,
      version: CustomFieldVersion,
    },
    actorOf: orgActorOf,
    orgOf: orgIdOf,
    service: svc.fieldLifecycle,
  });
}
