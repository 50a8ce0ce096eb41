import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';
import { readGate, writeGate } from './gates.ts';
import { getSpecialistProfile, putSpecialistProfile } from './profile.ts';
import {
  CreateSpecialistBody,
  PutSpecialistBody,
  PutSpecialistProfileBody,
  Specialist,
  SpecialistListQuery,
  SpecialistParams,
  SpecialistProfile,
} from './schemas.ts';
import * as svc from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['specialists'];

/** Specialists (spec 4.5) as far as forms need them: a staff member's profile with custom field values. */
export function specialistRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/specialists',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'listSpecialists',
        summary: 'List the specialists of the organization',
        description:
          'specialists.view, or a patient of the organization (contact details stripped). Pagination, sort (display_name, created_at), q, created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted specialists too.',
        querystring: SpecialistListQuery,
        response: { 200: ListOf(Specialist), 422: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const includeDeleted = includeDeletedOf(request);
      return request.inTx((tx) => svc.listSpecialists(tx, orgIdOf(request), request.query, isPatientCaller(ctx), includeDeleted));
    },
  );

  r.post(
    '/v1/specialists',
    {
      config: {
        references: { user_id: 'memberships.user_id', 'location_ids[]': 'locations', 'specialty_ids[]': 'specialties' },
        idempotent: true,
      },
      onRequest: [requirePermission('specialists.create')],
      schema: {
        operationId: 'createSpecialist',
        summary: 'Create the specialist profile of a staff member',
        description:
          'Needs specialists.create. user_id must be a member of the organization. 409 specialist_exists. Honours Idempotency-Key.',
        body: CreateSpecialistBody,
        response: { 201: DataOf(Specialist) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createSpecialist(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/specialists/:id',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getSpecialist',
        summary: 'Read a specialist',
        params: SpecialistParams,
        response: { 200: DataOf(Specialist) },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => svc.getSpecialist(tx, orgIdOf(request), request.params.id, isPatientCaller(ctx))) };
    },
  );

  r.put(
    '/v1/specialists/:id',
    {
      config: { references: { ':id': 'specialists', 'location_ids[]': 'locations', 'specialty_ids[]': 'specialties' } },
      onRequest: [writeGate],
      schema: {
        operationId: 'updateSpecialist',
        summary: 'Replace a specialist profile',
        description: 'specialists.update_org, or the specialist itself with specialists.update_self.',
        params: SpecialistParams,
        body: PutSpecialistBody,
        response: { 200: DataOf(Specialist) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.putSpecialist(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/specialists/:id',
    {
      onRequest: [requirePermission('specialists.delete')],
      schema: {
        operationId: 'deleteSpecialist',
        summary: 'Delete a specialist profile (soft)',
        params: SpecialistParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteSpecialist(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );

  r.get(
    '/v1/specialists/:id/profile',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getSpecialistProfile',
        summary: "Read a specialist's professional profile",
        description: 'specialists.view, or a patient of the organization (without private custom fields). Never contact data.',
        params: SpecialistParams,
        response: { 200: DataOf(SpecialistProfile) },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => getSpecialistProfile(tx, orgIdOf(request), request.params.id, isPatientCaller(ctx))) };
    },
  );

  r.put(
    '/v1/specialists/:id/profile',
    {
      onRequest: [writeGate],
      schema: {
        operationId: 'updateSpecialistProfile',
        summary: "Replace a specialist's professional profile",
        description: 'specialists.update_org, or the specialist itself with specialists.update_self.',
        params: SpecialistParams,
        body: PutSpecialistProfileBody,
        response: { 200: DataOf(SpecialistProfile) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => putSpecialistProfile(tx, actor, request.params.id, request.body)) };
    },
  );
}
