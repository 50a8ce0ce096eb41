import { DataOf, ErrorResponse, ListOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { CreateRoleBody, Role, RoleListQuery, RoleParams, UpdateRoleBody } from './schemas.ts';
import { createRole, deleteRole, listRoles, updateRole, type RoleDeps } from './service.ts';
import { actorOf, errorSchemas, orgIdOf, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['roles'];
const gate = requirePermission('organizations.manage_members');

const orgOf = orgIdOf;

/** Roles of an organization (spec 2.7, 4.2): list, custom roles, permission editing. */
export function roleRoutes(app: FastifyInstance, rt: Runtime): void {
  const deps: RoleDeps = { permissionCatalog: rt.permissionCatalog };
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/organizations/:id/roles',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'listRoles',
        summary: 'List the roles of an organization: system clones and custom roles',
        description:
          'Needs organizations.manage_members. Pagination; sort by code, name, created_at (newest first by default); filters is_system, code.',
        params: Type.Object({ id: Uuid }),
        querystring: RoleListQuery,
        response: { 200: ListOf(Role), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => listRoles(tx, orgOf(request), request.query)),
  );

  r.post(
    '/v1/organizations/:id/roles',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [gate],
      schema: {
        operationId: 'createRole',
        summary: 'Create a custom role',
        description:
          'Needs organizations.manage_members. 400 validation_error with fields.permissions for codes outside the catalog; ' +
          '409 role_code_taken when the organization has a role with that code. Honours Idempotency-Key.',
        params: Type.Object({ id: Uuid }),
        body: CreateRoleBody,
        response: { 201: DataOf(Role), 422: ErrorResponse },
      },
    },
    async (request, reply) => {
      const role = await request.inTx((tx) => createRole(tx, deps, actorOf(request), orgOf(request), request.body));
      return reply.status(201).send({ data: role });
    },
  );

  r.patch(
    '/v1/organizations/:id/roles/:roleId',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'updateRole',
        summary: 'Rename a role or replace its permission set',
        description:
          'Needs organizations.manage_members. Send only what changes; permissions is the full new set. 409 system_role_immutable ' +
          'when changing the code of a system role; 409 role_code_taken; 409 last_admin when removing organizations.manage_members ' +
          'from the only role that gives it to members.',
        params: RoleParams,
        body: UpdateRoleBody,
        response: { 200: DataOf(Role) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) =>
        updateRole(tx, deps, actorOf(request), orgOf(request), request.params.roleId.toLowerCase(), request.body),
      ),
    }),
  );

  r.delete(
    '/v1/organizations/:id/roles/:roleId',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'deleteRole',
        summary: 'Delete a custom role',
        description:
          'Needs organizations.manage_members. 409 system_role_immutable for system roles; 409 role_in_use while members hold it.',
        params: RoleParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await request.inTx((tx) => deleteRole(tx, actorOf(request), orgOf(request), request.params.roleId.toLowerCase()));
      return reply.status(204).send(null);
    },
  );
}
