import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { actorOf, isPatientCaller, orgOf } from '../custom-fields/access.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { CreateSpecialistBody, PutSpecialistBody, Specialist, SpecialistListQuery, SpecialistParams } from './schemas.ts';
import * as svc from './service.ts';
import { bearer, contextOf, errorSchemas } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['specialists'];

/** specialists.view, or a patient of the organization (the clinic's directory, without contact details). */
async function readGate(request: FastifyRequest): Promise<void> {
  const ctx = request.ctx;
  if (!ctx) throw errors.unauthorized();
  if (!hasPermission(ctx, 'specialists.view') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs the specialists.view permission in the organization.');
}
/** specialists.update_org, or specialists.update_self (the service checks that the profile is the caller's own). */
async function writeGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'specialists.update_org') && !hasPermission(ctx, 'specialists.update_self')) {
    throw errors.forbidden('This needs the specialists.update_org or specialists.update_self permission in the organization.');
  }
}

/** Specialists (spec 4.5) as far as forms need them: a staff member's profile with custom field values. */
export function specialistRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/v1/specialists',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'listSpecialists',
        tags,
        security: bearer,
        summary: 'List the specialists of the organization',
        description:
          'specialists.view, or a patient of the organization (contact details stripped). Pagination, sort (display_name, created_at), q, created_at_after/_before.',
        querystring: SpecialistListQuery,
        response: { 200: ListOf(Specialist), ...errorResponses, 422: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return request.inTx((tx) => svc.listSpecialists(tx, orgOf(ctx), request.query, isPatientCaller(ctx)));
    },
  );

  r.post(
    '/v1/specialists',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('specialists.create')],
      schema: {
        operationId: 'createSpecialist',
        tags,
        security: bearer,
        summary: 'Create the specialist profile of a staff member',
        description:
          'Needs specialists.create. user_id must be a member of the organization. 409 specialist_exists. Honours Idempotency-Key.',
        body: CreateSpecialistBody,
        response: { 201: DataOf(Specialist), ...errorResponses },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createSpecialist(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/specialists/:id',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getSpecialist',
        tags,
        security: bearer,
        summary: 'Read a specialist',
        params: SpecialistParams,
        response: { 200: DataOf(Specialist), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => svc.getSpecialist(tx, orgOf(ctx), request.params.id, isPatientCaller(ctx))) };
    },
  );

  r.put(
    '/v1/specialists/:id',
    {
      onRequest: [writeGate],
      schema: {
        operationId: 'updateSpecialist',
        tags,
        security: bearer,
        summary: 'Replace a specialist profile',
        description: 'specialists.update_org, or the specialist itself with specialists.update_self.',
        params: SpecialistParams,
        body: PutSpecialistBody,
        response: { 200: DataOf(Specialist), ...errorResponses },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => svc.putSpecialist(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/specialists/:id',
    {
      onRequest: [requirePermission('specialists.delete')],
      schema: {
        operationId: 'deleteSpecialist',
        tags,
        security: bearer,
        summary: 'Delete a specialist profile (soft)',
        params: SpecialistParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      await request.inTx((tx) => svc.deleteSpecialist(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );
}
