import { DataOf, ErrorResponse, ListOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { AddMemberBody, Member, MemberListQuery, MemberParams } from './schemas.ts';
import { addMember, listMembers, removeMember } from './service.ts';
import { actorOf, errorSchemas, orgIdOf, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['members'];
const gate = requirePermission('organizations.manage_members');

const orgOf = orgIdOf;

/** Members of an organization (spec 4.2): list, add or upsert by email, remove. */
export function memberRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/organizations/:id/members',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'listMembers',
        summary: 'List the members of an organization',
        description:
          'Needs organizations.manage_members. Pagination; sort by email, created_at, role_code (newest first by default); ' +
          'filters role_code, kind, q (email substring); created_at_after/_before (when the user became a member).',
        params: Type.Object({ id: Uuid }),
        querystring: MemberListQuery,
        response: { 200: ListOf(Member), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => listMembers(tx, orgOf(request), request.query)),
  );

  r.post(
    '/v1/organizations/:id/members',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [gate],
      schema: {
        operationId: 'addMember',
        summary: 'Add a member by email, or change the role of an existing member',
        description:
          'Needs organizations.manage_members. 201 when the user becomes a member (a user who has never signed in is ' +
          'created by email and linked on first sign-in); 200 when the user already was a member, with the role now ' +
          'given (changed or not: one role per organization). 400 validation_error with fields.role_code for an unknown ' +
          'role; 409 last_admin when the change would leave no member with organizations.manage_members. Honours Idempotency-Key.',
        params: Type.Object({ id: Uuid }),
        body: AddMemberBody,
        response: { 200: DataOf(Member), 201: DataOf(Member), 422: ErrorResponse },
      },
    },
    async (request, reply) => {
      const { member, outcome } = await request.inTx((tx) => addMember(tx, actorOf(request), orgOf(request), request.body));
      return reply.status(outcome === 'added' ? 201 : 200).send({ data: member });
    },
  );

  r.delete(
    '/v1/organizations/:id/members/:userId',
    {
      config: { orgParam: 'id' },
      onRequest: [gate],
      schema: {
        operationId: 'removeMember',
        summary: 'Remove a member from the organization',
        description:
          'Needs organizations.manage_members. 404 not_found when the user is not a member; 409 last_admin when the member ' +
          'is the last one holding organizations.manage_members. The user row itself stays (it may be a member elsewhere).',
        params: MemberParams,
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      await request.inTx((tx) => removeMember(tx, actorOf(request), orgOf(request), request.params.userId.toLowerCase()));
      return reply.status(204).send(null);
    },
  );
}
