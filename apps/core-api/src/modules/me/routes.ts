import { DataOf, ErrorResponse, PickerOf, Timestamp, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { currentUser, listMyClinics, switchOrganization, updateMe } from './service.ts';
import { contextOf, routesOf } from '../../platform/route.ts';

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
    preferred_language: Type.Union([Type.String(), Type.Null()], {
      description: "The user's own language; null inherits the language_code of the organization in scope.",
    }),
  },
  { $id: 'CurrentUser' },
);

// BCP 47-ish: a 2-3 letter primary language subtag, lower case, then subtags (en, ro, pt-BR, zh-Hant-TW).
const LANGUAGE_TAG = '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$';

const UpdateMeBody = Type.Object(
  {
    preferred_language: Type.Optional(
      Type.Union([Type.String({ pattern: LANGUAGE_TAG, maxLength: 35 }), Type.Null()], {
        description:
          "A language tag such as en, ro or pt-BR (stored as given), or null to inherit the organization's language_code. " +
          'Front-ends render en and ro and fall back to en for anything else.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Only the fields to change (at least one).' },
);

const UpdatedUser = Type.Object(
  {
    ...CurrentUser.properties,
    effective_language: Type.String({
      description: 'preferred_language, else the language_code of the organization in scope, else en.',
    }),
  },
  { $id: 'UpdatedCurrentUser' },
);

const MyClinic = Type.Object(
  {
    id: Uuid,
    slug: Type.String(),
    name: Type.String(),
    language_code: Type.String({ description: 'Front-ends render en and ro and fall back to en for anything else.' }),
    is_staff: Type.Boolean({ description: 'A membership row exists: staff app access (spec 5.7).' }),
    is_patient: Type.Boolean({ description: 'A live patient row exists: patient portal access (spec 5.7).' }),
    role_code: Type.Union([Type.String(), Type.Null()], { description: 'Staff role code, display only; null when only a patient.' }),
  },
  { $id: 'MyClinic' },
);

export function meRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags: ['me'], errors: {} });

  r.get(
    '/v1/me',
    {
      schema: {
        operationId: 'getMe',
        summary: 'The current user, with role and permissions at the organization in scope',
        response: { 200: DataOf(CurrentUser), 401: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request) => ({ data: currentUser(contextOf(request)) }),
  );

  r.put(
    '/v1/me/switch-organization',
    {
      schema: {
        operationId: 'switchOrganization',
        summary: 'Store the organization that later requests without X-Organization-ID default to',
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
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => switchOrganization(tx, ctx, request.body.organization_id.toLowerCase(), request.ip)) };
    },
  );

  r.patch(
    '/v1/me',
    {
      schema: {
        operationId: 'updateMe',
        summary: "Change the caller's own preferences (preferred language)",
        description:
          'Send only the fields to change; an empty body or an unknown field is 400 validation_error. preferred_language ' +
          "null inherits the organization's language_code. Returns the current user as GET /v1/me does, plus " +
          'effective_language (preferred_language, else the language_code of the organization in scope, else en). ' +
          'Audited as user.updated in platform scope.',
        body: UpdateMeBody,
        response: { 200: DataOf(UpdatedUser), 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => updateMe(tx, ctx, request.body, request.ip)) };
    },
  );

  r.get(
    '/v1/me/clinics',
    {
      schema: {
        operationId: 'listMyClinics',
        summary: 'Every organization the caller can enter, as staff and/or as patient',
        description:
          'Across organizations (it ignores X-Organization-ID): staff memberships and live patient links, by name. ' +
          'The whole list, without pagination: it is bounded by what the caller has been given, and a picker that ' +
          'dropped some would hide a clinic. A superadmin has no memberships: use GET /v1/organizations.',
        response: { 200: PickerOf(MyClinic), 401: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => listMyClinics(tx, ctx)) };
    },
  );
}
