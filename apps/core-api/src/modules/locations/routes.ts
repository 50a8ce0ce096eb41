import { DataOf, ErrorResponse, ListOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission, requireStaff as requireStaffGate } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { CreateLocationBody, Location, LocationListQuery, LocationParams, UpdateLocationBody } from './schemas.ts';
import { createLocation, deleteLocation, getLocation, listLocations, updateLocation } from './service.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['locations'];
const manage = requirePermission('locations.manage');

// Spec 4.5 makes locations readable by staff. Row-level security says the same (locations_read), so
// this gate only turns an empty answer into a clear 403.
const requireStaff = requireStaffGate('Locations are readable by staff members of the organization.');

/** Locations of an organization (spec 4.5, Planned). */
export function locationRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = routesOf(app, { tags, errors: errorResponses });

  r.post(
    '/v1/organizations/:id/locations',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createLocation',
        summary: 'Create a location',
        description:
          'Needs locations.manage. 409 location_name_taken when the organization has a location of that name. Honours Idempotency-Key.',
        params: Type.Object({ id: Uuid }),
        body: CreateLocationBody,
        response: { 201: DataOf(Location) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const location = await request.inTx((tx) => createLocation(tx, actor, request.params.id, request.body));
      return reply.status(201).send({ data: location });
    },
  );

  r.get(
    '/v1/organizations/:id/locations',
    {
      config: { orgParam: 'id' },
      onRequest: [requireStaff],
      schema: {
        operationId: 'listLocations',
        summary: 'List the locations of an organization (any staff member)',
        description: 'Pagination, sort (name, created_at; newest first by default), q (name or city substring), created_at_after/_before.',
        params: Type.Object({ id: Uuid }),
        querystring: LocationListQuery,
        response: { 200: ListOf(Location), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => listLocations(tx, request.params.id, request.query)),
  );

  r.get(
    '/v1/organizations/:id/locations/:locationId',
    {
      config: { orgParam: 'id' },
      onRequest: [requireStaff],
      schema: {
        operationId: 'getLocation',
        summary: 'Read a location (any staff member)',
        params: LocationParams,
        response: { 200: DataOf(Location) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getLocation(tx, request.params.id, request.params.locationId)) }),
  );

  r.patch(
    '/v1/organizations/:id/locations/:locationId',
    {
      config: { orgParam: 'id' },
      onRequest: [manage],
      schema: {
        operationId: 'updateLocation',
        summary: 'Change some fields of a location',
        description: 'Needs locations.manage. Send only the fields to change; null or an empty string clears an optional field.',
        params: LocationParams,
        body: UpdateLocationBody,
        response: { 200: DataOf(Location) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => updateLocation(tx, actor, request.params.id, request.params.locationId, request.body)) };
    },
  );

  r.delete(
    '/v1/organizations/:id/locations/:locationId',
    {
      config: { orgParam: 'id' },
      onRequest: [manage],
      schema: {
        operationId: 'deleteLocation',
        summary: 'Delete a location',
        description:
          'Needs locations.manage. The row is removed; the audit entry keeps its last state. 409 location_in_use while specialists or services are linked to it.',
        params: LocationParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      await request.inTx((tx) => deleteLocation(tx, actor, request.params.id, request.params.locationId));
      return reply.status(204).send(null);
    },
  );
}
