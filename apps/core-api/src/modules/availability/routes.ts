import { DataOf, ErrorResponse } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { errorSchemas, orgActorOf, routesOf } from '../../platform/route.ts';
import { readGate, writeGate } from '../specialists/gates.ts';
import { Availability, AvailabilityParams, AvailabilityQuery, PutAvailabilityBody } from './schemas.ts';
import { getAvailability, MAX_WINDOW_DAYS, putAvailability } from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 422, 429);
const tags = ['specialists'];

/** A specialist's working hours (spec 4.5 Specialists): weekly rules per location and dated exceptions. */
export function availabilityRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/specialists/:id/availability',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getSpecialistAvailability',
        summary: "Read a specialist's availability",
        description: `specialists.view, or a patient of the organization. With from and to (local dates, at most ${MAX_WINDOW_DAYS} days): also the open windows as instants.`,
        params: AvailabilityParams,
        querystring: AvailabilityQuery,
        response: { 200: DataOf(Availability) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => getAvailability(tx, actor.orgId, request.params.id, request.query)) };
    },
  );

  r.put(
    '/v1/specialists/:id/availability',
    {
      config: { references: { ':id': 'specialists', 'rules[].location_id': 'locations', 'exceptions[].location_id': 'locations' } },
      onRequest: [writeGate],
      schema: {
        operationId: 'putSpecialistAvailability',
        summary: "Replace a specialist's availability",
        description:
          'specialists.update_org, or the specialist itself with specialists.update_self. Times are local wall-clock times in the ' +
          "rule's IANA zone (default: the location's), so they hold across daylight-saving changes. 422 validation_failed with " +
          'fields (e.g. rules[1].end) for an end before its start, overlapping rules, an unknown zone or a location the specialist ' +
          'is not linked to.',
        params: AvailabilityParams,
        body: PutAvailabilityBody,
        response: { 200: DataOf(Availability), 422: ErrorResponse },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => putAvailability(tx, actor, request.params.id, request.body)) };
    },
  );
}
