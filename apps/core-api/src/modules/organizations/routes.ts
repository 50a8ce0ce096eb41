import { DataOf, ErrorResponse, errors, rateLimitHeaders, Uuid, type RateLimiter } from '@clinic/http-kit';
import type { Database } from '@clinic/db';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireOrgAccess, requireSuperadmin } from '../../platform/pipeline.ts';
import { CreateOrganizationBody, Organization, PublicOrganization } from './schemas.ts';
import { createOrganization, getOrganization, resolvePublic } from './service.ts';

export interface OrganizationRouteDeps {
  db: Database;
  resolveLimiter: RateLimiter;
}

const errorResponses = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse };
const bearer = [{ bearerAuth: [] }];

export function organizationRoutes(app: FastifyInstance, deps: OrganizationRouteDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/v1/public/organizations/resolve',
    {
      config: { public: true },
      schema: {
        operationId: 'resolveOrganization',
        tags: ['public'],
        summary: 'Resolve an organization by slug or by verified custom domain',
        description: `Public, rate limited per IP (RATELIMIT_PUBLIC_RESOLVE_LIMIT per RATELIMIT_PUBLIC_RESOLVE_WINDOW). Give exactly one of slug or domain.`,
        querystring: Type.Object({ slug: Type.Optional(Type.String({ maxLength: 63 })), domain: Type.Optional(Type.String({ maxLength: 253 })) }),
        response: { 200: DataOf(PublicOrganization), 404: ErrorResponse, 422: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request, reply) => {
      const decision = await deps.resolveLimiter.consume(`ip:${request.ip}`);
      reply.headers(rateLimitHeaders(decision));
      if (!decision.allowed) throw errors.rateLimited(decision.resetSeconds);
      return { data: await resolvePublic(deps.db, request.query) };
    },
  );

  r.post(
    '/v1/organizations',
    {
      onRequest: [requireSuperadmin()],
      schema: {
        operationId: 'createOrganization',
        tags: ['organizations'],
        summary: 'Create an organization (superadmin); clones the system role templates atomically',
        security: bearer,
        body: CreateOrganizationBody,
        response: { 201: DataOf(Organization), ...errorResponses },
      },
    },
    async (request, reply) => {
      const ctx = request.ctx!;
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
        tags: ['organizations'],
        summary: 'Read an organization (member, patient or superadmin)',
        security: bearer,
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Organization), ...errorResponses },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getOrganization(tx, request.params.id)) }),
  );
}
