import { DataOf, enforceLimit, ErrorResponse, ListOf, Uuid, type RateLimiter } from '@clinic/http-kit';
import type { Database } from '@clinic/db';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireOrgAccess, requirePermission, requireSuperadmin } from '../../platform/gates.ts';
import {
  CreateOrganizationBody,
  Organization,
  OrganizationListQuery,
  OrganizationSettings,
  PublicOrganization,
  UpdateOrganizationBody,
} from './schemas.ts';
import { createOrganization, getOrganization, getOrgSettings, listOrganizations, resolvePublic, updateOrganization } from './service.ts';
import { actorOf, contextOf, errorSchemas, routesOf } from '../../platform/route.ts';

export interface OrganizationRouteDeps {
  db: Database;
  resolveLimiter: RateLimiter;
}

// Every authenticated route can answer 401 and 429; all but the list of one's own organizations also these.
const errorResponses = errorSchemas(400, 403, 404, 409);
const IdParams = Type.Object({ id: Uuid });

export function organizationRoutes(app: FastifyInstance, deps: OrganizationRouteDeps): void {
  const r = routesOf(app, { tags: ['organizations'], errors: errorSchemas(401, 429) });
  // Public routes (no token, config.public): not under the module's bearer security and error set.
  const open = app.withTypeProvider<TypeBoxTypeProvider>();

  open.get(
    '/v1/public/organizations/resolve',
    {
      config: { public: true },
      // In onRequest, before query validation: every request to the route is counted and carries
      // this route's X-RateLimit-* headers, including the 422s of the query schema (spec 8).
      onRequest: [
        async (request, reply) => {
          await enforceLimit(deps.resolveLimiter, `ip:${request.ip}`, reply);
        },
      ],
      schema: {
        operationId: 'resolveOrganization',
        tags: ['public'],
        summary: 'Resolve an organization by slug or by verified custom domain',
        description: `Public, rate limited per IP (RATELIMIT_PUBLIC_RESOLVE_LIMIT per RATELIMIT_PUBLIC_RESOLVE_WINDOW). Give exactly one of slug or domain.`,
        querystring: Type.Object({
          slug: Type.Optional(Type.String({ maxLength: 63 })),
          domain: Type.Optional(Type.String({ maxLength: 253 })),
        }),
        response: { 200: DataOf(PublicOrganization), 404: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request) => ({ data: await resolvePublic(deps.db, request.query) }),
  );

  r.get(
    '/v1/organizations',
    {
      schema: {
        operationId: 'listOrganizations',
        summary: 'List the organizations where the caller is a staff member (superadmin: all)',
        description:
          'Staff memberships only; organizations where the caller is a patient are listed by GET /v1/me/clinics. A ' +
          'superadmin (no memberships) gets every organization. Pagination; sort by name, slug, created_at (newest first ' +
          'by default; an unknown field is 422 validation_failed with fields.sort); q (substring of name or slug); ' +
          'created_at_after/_before.',
        querystring: OrganizationListQuery,
        response: { 200: ListOf(Organization), 401: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return request.inTx((tx) => listOrganizations(tx, ctx, request.query));
    },
  );

  r.post(
    '/v1/organizations',
    {
      // Creates a resource: Idempotency-Key is honoured (spec 4.1), after the superadmin gate.
      config: { idempotent: true },
      onRequest: [requireSuperadmin()],
      schema: {
        operationId: 'createOrganization',
        summary: 'Create an organization (superadmin); clones the system role templates atomically',
        body: CreateOrganizationBody,
        response: { 201: DataOf(Organization), ...errorResponses, 422: ErrorResponse },
      },
    },
    async (request, reply) => {
      const ctx = contextOf(request);
      const org = await request.inTx((tx) => createOrganization(tx, { ctx, ip: request.ip }, request.body));
      return reply.status(201).send({ data: org });
    },
  );

  r.get(
    '/v1/organizations/:id',
    {
      config: { orgParam: 'id' },
      onRequest: [requireOrgAccess()],
      schema: {
        operationId: 'getOrganization',
        summary: 'Read an organization (member, patient or superadmin)',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Organization), ...errorResponses },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getOrganization(tx, request.params.id)) }),
  );

  r.patch(
    '/v1/organizations/:id',
    {
      config: { orgParam: 'id' },
      onRequest: [requirePermission('organizations.update')],
      schema: {
        operationId: 'updateOrganization',
        summary: 'Change the name, slug or language of an organization',
        description:
          'Needs organizations.update in that organization (superadmins pass). Send only the fields to change; an empty ' +
          'body or an unknown field is 400 validation_error. language_code is stored as given: front-ends render en and ro ' +
          'and fall back to en for any other value. A slug used by another organization is 409 slug_taken. Audited as ' +
          'organization.updated with the changed fields (from, to); a body that changes nothing writes nothing.',
        params: IdParams,
        body: UpdateOrganizationBody,
        response: { 200: DataOf(Organization), ...errorResponses },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => updateOrganization(tx, actorOf(request), request.params.id.toLowerCase(), request.body)),
    }),
  );

  r.get(
    '/v1/organizations/:id/settings',
    {
      config: { orgParam: 'id' },
      onRequest: [requirePermission('organizations.view_directory')],
      schema: {
        operationId: 'getOrgSettings',
        summary: 'Read the settings of an organization',
        description:
          'Needs organizations.view_directory in that organization (spec 2.7; every system role holds it, patients do not). ' +
          "language_code is the organization's (front-ends render en and ro and fall back to en); default_timezone is " +
          'the IANA zone used where no location gives one.',
        params: IdParams,
        response: { 200: DataOf(OrganizationSettings), ...errorResponses },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getOrgSettings(tx, request.params.id.toLowerCase())) }),
  );
}
