import { DataOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Runtime } from '../../platform/runtime.ts';
import { erasedObjectKeys } from './account-queries.ts';
import { deleteErasedObjects, deleteMe, leaveClinic } from './account-service.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['me'];

const LeaveResult = Type.Object(
  {
    organization_id: Uuid,
    patient_id: Uuid,
    withdrawn_consent_ids: Type.Array(Uuid, { description: 'Ledger rows withdrawn with reason left_clinic.' }),
  },
  { $id: 'LeaveClinicResult' },
);

/** The cascades of spec 3.2 that the person starts: leaving a clinic, deleting the account. */
export function accountRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = routesOf(app, { tags, errors: errorResponses });

  r.post(
    '/v1/me/clinics/:org_id/leave',
    {
      // Reachable while consents are missing: ending a relation never needs accepting new terms.
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'leaveClinic',
        summary: 'Stop being a patient of a clinic',
        description:
          "In one transaction: the caller's patient record at the clinic is soft-deleted and every consent held there is " +
          'withdrawn (org_terms and org_privacy_notice included, reason left_clinic). 404 not_found when the caller is not a ' +
          "patient there. Onboarding again revives the record and asks for the clinic's consents again.",
        params: Type.Object({ org_id: Uuid }),
        response: { 200: DataOf(LeaveResult) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => leaveClinic(tx, actor, request.params.org_id.toLowerCase())) };
    },
  );

  r.delete(
    '/v1/me',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'deleteMe',
        summary: "Delete the caller's account (anonymise it everywhere)",
        description:
          'In one transaction: every consent is withdrawn (platform_terms and platform_privacy_notice included, reason ' +
          'account_deleted), patient records are soft-deleted, memberships removed and the user row anonymised (email ' +
          'deleted-<id>@invalid, sign-in identity unlinked). The consent ledger and the audit trail are kept: they refer to ' +
          'the id. 409 last_admin when the caller is the last member of an organization who can manage its members. ' +
          'Signing in again with the same identity starts a new, empty account.',
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const erased = await request.inTx((tx) => deleteMe(tx, actor));
      await deleteErasedObjects(rt.assets, erasedObjectKeys(erased), request.log);
      return reply.status(204).send(null);
    },
  );
}
