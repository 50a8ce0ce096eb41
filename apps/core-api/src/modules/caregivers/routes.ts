import { DataOf, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errors } from '@clinic/http-kit';
import { requireOrgAccess } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { addCaregiver, listCaregivers, myCaregiving, removeCaregiver } from './service.ts';

const RELATIONSHIPS = ['parent', 'guardian', 'spouse', 'partner', 'child', 'relative', 'other'] as const;

const CaregiverLink = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    patient_id: Uuid,
    // No user id: adding someone by email must not tell whether that email has an account.
    caregiver_email: nullable(Type.String()),
    relationship: nullable(Type.String({ description: RELATIONSHIPS.join(', ') })),
    approved_by: Type.String({ description: 'patient (the patient added it) or staff (the clinic did).' }),
    created_at: Timestamp,
    revoked_at: nullable(Timestamp),
  },
  { $id: 'CaregiverLink' },
);
const Caregiving = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  organization_name: Type.String(),
  patient_id: Uuid,
  first_name: nullable(Type.String()),
  last_name: nullable(Type.String()),
  relationship: nullable(Type.String()),
  created_at: Timestamp,
});
const Params = Type.Object({ id: Uuid });

/** Staff who read patients, or a person of the organization (the patient, its caregiver): rows decide. */
async function readGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'patients.view_org') && !hasPermission(ctx, 'patients.view') && !(ctx.isPatient && !ctx.isStaff))
    throw errors.forbidden('This needs the patients.view_org permission in the organization.');
}

/** Caregivers of a patient (spec 2.3): who may act for it in the portal. */
export function caregiverRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags: ['patients'], errors: errorSchemas(400, 401, 403, 404, 409, 429) });

  r.get(
    '/v1/patients/:id/caregivers',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'listCaregivers',
        summary: "A patient's active caregivers",
        description: 'patients.view_org, the patient itself, or one of its caregivers.',
        params: Params,
        response: { 200: DataOf(Type.Array(CaregiverLink)) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => listCaregivers(tx, orgIdOf(request), request.params.id.toLowerCase())) }),
  );

  r.post(
    '/v1/patients/:id/caregivers',
    {
      config: { idempotent: true },
      onRequest: [requireOrgAccess()],
      schema: {
        operationId: 'addCaregiver',
        summary: 'Let a person act for the patient in the portal',
        description:
          "By the patient itself (its approval) or staff with patients.update_org (the clinic's). The person named by email (made if new, linked on its first sign-in) then acts for the patient with X-Patient-ID. 409 caregiver_exists. Honours Idempotency-Key.",
        params: Params,
        body: Type.Object(
          {
            email: Type.String({ minLength: 3, maxLength: 254 }),
            relationship: Type.Optional(nullable(Type.Union(RELATIONSHIPS.map((r) => Type.Literal(r))))),
          },
          { additionalProperties: false },
        ),
        response: { 201: DataOf(CaregiverLink) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply
        .status(201)
        .send({ data: await request.inTx((tx) => addCaregiver(tx, actor, request.params.id.toLowerCase(), request.body)) });
    },
  );

  r.delete(
    '/v1/patients/:id/caregivers/:linkId',
    {
      onRequest: [requireOrgAccess()],
      schema: {
        operationId: 'removeCaregiver',
        summary: 'End a caregiver link',
        description:
          'Staff with patients.update_org, the patient, or the caregiver itself. The caregiver stops acting for the patient at once.',
        params: Type.Object({ id: Uuid, linkId: Uuid }),
        response: { 204: Type.Null({ description: 'Removed' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => removeCaregiver(tx, actor, request.params.id.toLowerCase(), request.params.linkId.toLowerCase()));
      return reply.status(204).send(null);
    },
  );

  r.get(
    '/v1/me/caregiving',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'listMyCaregiving',
        tags: ['me'],
        summary: 'The patients I act for as a caregiver, at every clinic',
        description: 'Send X-Organization-ID and X-Patient-ID with a patient of this list to act for it.',
        response: { 200: DataOf(Type.Array(Caregiving)) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => myCaregiving(tx)) }),
  );
}
