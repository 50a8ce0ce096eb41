import { DataOf, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { errorSchemas, orgActorOf, routesOf } from '../../platform/route.ts';
import { DEFAULT_MINUTES, endImpersonation, MAX_MINUTES, startImpersonation } from './service.ts';

const Session = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    patient_id: Uuid,
    staff_user_id: Uuid,
    reason: Type.String(),
    started_at: Timestamp,
    expires_at: Timestamp,
    ended_at: nullable(Timestamp),
  },
  { $id: 'ImpersonationSession' },
);

/** Patient impersonation (spec 4.5 Patients, 2.7 patients.impersonate). */
export function impersonationRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags: ['patients'], errors: errorSchemas(400, 401, 403, 404, 409, 429) });
  const gate = requirePermission('patients.impersonate');

  r.post(
    '/v1/patients/:id/impersonate',
    {
      config: { idempotent: true },
      onRequest: [gate],
      schema: {
        operationId: 'impersonatePatient',
        summary: 'Act as a patient in the portal, for a reason, for a few minutes',
        description: `Needs patients.impersonate (staff; superadmins use break-glass). Returns a token, once, that acts as the patient at this organization for \`minutes\` (default ${DEFAULT_MINUTES}, at most ${MAX_MINUTES}). Every request made with it is recorded in the access log with action_context impersonation, which the patient sees at GET /v1/me/access-log; changes it makes carry the same context in the audit log. It reads, edits the patient's record and profile and fills forms; it never grants or withdraws consent, signs, books or changes the account (403 impersonation_forbidden). Honours Idempotency-Key.`,
        params: Type.Object({ id: Uuid }),
        body: Type.Object(
          {
            reason: Type.String({ minLength: 1, maxLength: 500, description: 'Why: shown to the patient and the auditors.' }),
            minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_MINUTES })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: DataOf(
            Type.Object({
              ...Session.properties,
              token: Type.String({ description: 'Bearer token for the portal: Authorization: Bearer imp_...; shown once.' }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const data = await request.inTx((tx) => startImpersonation(tx, actor, request.params.id.toLowerCase(), request.body));
      return reply.status(201).send({ data });
    },
  );

  r.delete(
    '/v1/impersonation-sessions/:id',
    {
      onRequest: [gate],
      schema: {
        operationId: 'endImpersonation',
        summary: 'End an impersonation session early',
        description: 'The staff member who started it. Its token stops working at once. 409 session_ended when it already has.',
        params: Type.Object({ id: Uuid }),
        response: { 204: Type.Null({ description: 'Ended' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => endImpersonation(tx, actor, request.params.id.toLowerCase()));
      return reply.status(204).send(null);
    },
  );
}
