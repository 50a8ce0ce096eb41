import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { Database } from '@clinic/db';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  PublicLocation,
  PublicLocationQuery,
  PublicService,
  PublicServiceQuery,
  PublicSpecialist,
  PublicSpecialistParams,
  PublicSpecialistQuery,
  OrganizationQuery,
} from './schemas.ts';
import * as svc from './service.ts';

export interface PublicDirectoryDeps {
  db: Database;
}

const errorResponses = { 404: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse };
const tags = ['public'];
const WHICH =
  'Public (no token), rate limited per IP. The organization is `organization` (id or slug), else the request host as a verified custom domain.';

/**
 * What the clinic's public booking page may show before anyone signs in (spec 5.2-5.3): its bookable
 * specialists (never contact data), public services and locations.
 */
export function publicDirectoryRoutes(app: FastifyInstance, deps: PublicDirectoryDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // Per IP, shared by every public route (RATELIMIT_PUBLIC_*): the pipeline's, before validation (platform/limits.ts).
  const from = (request: FastifyRequest): svc.PublicRequest => ({
    query: request.query as svc.PublicRequest['query'],
    host: request.hostname,
  });

  r.get(
    '/v1/public/specialists',
    {
      config: { public: true },
      schema: {
        operationId: 'listPublicSpecialists',
        tags,
        summary: 'The specialists bookable online, as the booking page shows them',
        description: `${WHICH} Filters: specialty_id, location_id, service_id, language. Sort: display_name, created_at.`,
        querystring: PublicSpecialistQuery,
        response: { 200: ListOf(PublicSpecialist), ...errorResponses },
      },
    },
    async (request) => svc.listSpecialists(deps.db, from(request)),
  );

  r.get(
    '/v1/public/specialists/:id',
    {
      config: { public: true },
      schema: {
        operationId: 'getPublicSpecialist',
        tags,
        summary: "A bookable specialist's public profile",
        description: `${WHICH} 404 unless the specialist is bookable online at that organization.`,
        params: PublicSpecialistParams,
        querystring: OrganizationQuery,
        response: { 200: DataOf(PublicSpecialist), ...errorResponses },
      },
    },
    async (request) => ({ data: await svc.getSpecialist(deps.db, from(request), request.params.id) }),
  );

  r.get(
    '/v1/public/services',
    {
      config: { public: true },
      schema: {
        operationId: 'listPublicServices',
        tags,
        summary: 'The public services, with the bookable specialists and locations that deliver them',
        description: `${WHICH} Filters: location_id, specialist_id. Sort: name, duration_minutes, price_minor, created_at.`,
        querystring: PublicServiceQuery,
        response: { 200: ListOf(PublicService), ...errorResponses },
      },
    },
    async (request) => svc.listServices(deps.db, from(request)),
  );

  r.get(
    '/v1/public/locations',
    {
      config: { public: true },
      schema: {
        operationId: 'listPublicLocations',
        tags,
        summary: "The organization's locations (addresses, time zone, front desk)",
        description: `${WHICH} Sort: name, created_at.`,
        querystring: PublicLocationQuery,
        response: { 200: ListOf(PublicLocation), ...errorResponses },
      },
    },
    async (request) => svc.listLocations(deps.db, from(request)),
  );
}
