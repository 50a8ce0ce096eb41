import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireOrgAccess, requirePermission } from '../../platform/gates.ts';
import { errorSchemas, orgActorOf, routesOf } from '../../platform/route.ts';
import { CreateSpecialtyBody, Specialty, SpecialtyListQuery, SpecialtyParams, UpdateSpecialtyBody } from './schemas.ts';
import * as svc from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['specialties'];
// The directory is open to the organization's staff and patients; the catalog's managers edit it.
const read = requireOrgAccess();
const manage = requirePermission('services.manage');
const READ_NOTE = 'Any staff member or patient of the organization (X-Organization-ID).';
const WRITE_NOTE = 'Needs services.manage (the catalog).';

/** Specialties (spec 4.5): what the organization's specialists practise. */
export function specialtyRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/specialties',
    {
      onRequest: [read],
      schema: {
        operationId: 'listSpecialties',
        summary: 'List the specialties of the organization',
        description: `${READ_NOTE} Pagination, sort (name, code, created_at), q (name or code substring), created_at_after/_before.`,
        querystring: SpecialtyListQuery,
        response: { 200: ListOf(Specialty), 422: ErrorResponse },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return request.inTx((tx) => svc.listSpecialties(tx, actor.orgId, request.query));
    },
  );

  r.post(
    '/v1/specialties',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createSpecialty',
        summary: 'Create a specialty',
        description: `${WRITE_NOTE} 409 specialty_code_taken. Honours Idempotency-Key.`,
        body: CreateSpecialtyBody,
        response: { 201: DataOf(Specialty) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createSpecialty(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/specialties/:id',
    {
      onRequest: [read],
      schema: {
        operationId: 'getSpecialty',
        summary: 'Read a specialty',
        description: READ_NOTE,
        params: SpecialtyParams,
        response: { 200: DataOf(Specialty) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.getSpecialty(tx, actor.orgId, request.params.id)) };
    },
  );

  r.patch(
    '/v1/specialties/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updateSpecialty',
        summary: 'Change a specialty',
        description: `${WRITE_NOTE} 409 specialty_code_taken.`,
        params: SpecialtyParams,
        body: UpdateSpecialtyBody,
        response: { 200: DataOf(Specialty) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateSpecialty(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/specialties/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deleteSpecialty',
        summary: 'Delete a specialty',
        description: `${WRITE_NOTE} 409 specialty_in_use while specialists hold it.`,
        params: SpecialtyParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteSpecialty(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );
}
