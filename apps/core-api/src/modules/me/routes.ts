import { DataOf, ErrorResponse, Timestamp, Uuid } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { currentUser, switchOrganization } from './service.ts';

const Membership = Type.Object({ organization_id: Uuid, role_id: Uuid, role_code: Type.String() });

const CurrentUser = Type.Object(
  {
    id: Uuid,
    email: Type.String(),
    is_superadmin: Type.Boolean(),
    platform_roles: Type.Array(Type.String()),
    confirmed: Type.Boolean(),
    last_activity: Type.Union([Timestamp, Type.Null()]),
    current_organization_id: Type.Union([Uuid, Type.Null()]),
    memberships: Type.Array(Membership),
    current_role_code: Type.String({ description: 'Display label only: never branch authorization on it.' }),
    current_permissions: Type.Array(Type.String()),
    is_staff_at_current_org: Type.Boolean(),
    is_patient_at_current_org: Type.Boolean(),
    patient_org_ids: Type.Array(Uuid),
  },
  { $id: 'CurrentUser' },
);

const bearer = [{ bearerAuth: [] }];

export function meRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/v1/me',
    {
      schema: {
        operationId: 'getMe',
        tags: ['me'],
        summary: 'The current user, with role and permissions at the organization in scope',
        security: bearer,
        response: { 200: DataOf(CurrentUser), 401: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request) => ({ data: currentUser(request.ctx!) }),
  );

  r.put(
    '/v1/me/switch-organization',
    {
      schema: {
        operationId: 'switchOrganization',
        tags: ['me'],
        summary: 'Store the organization that later requests without X-Organization-ID default to',
        security: bearer,
        body: Type.Object({ organization_id: Uuid }, { additionalProperties: false }),
        response: {
          200: DataOf(Type.Object({ current_organization_id: Uuid, message: Type.String() })),
          400: ErrorResponse,
          401: ErrorResponse,
          403: ErrorResponse,
          404: ErrorResponse,
        },
      },
    },
    async (request) => {
      const ctx = request.ctx!;
      return { data: await request.inTx((tx) => switchOrganization(tx, ctx, request.body.organization_id.toLowerCase(), request.ip)) };
    },
  );
}
