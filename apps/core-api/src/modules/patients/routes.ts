import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { actorOf, isPatientCaller, orgOf } from '../custom-fields/access.ts';
import { CreatePatientBody, Patient, PatientListQuery, PatientParams, PutPatientBody } from './schemas.ts';
import * as svc from './service.ts';
import { bearer, contextOf, errorSchemas } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['patients'];

/** Staff reading patients need patients.view_org (or patients.view); a patient reads its own record by ownership. */
const canRead = (request: FastifyRequest) => {
  const ctx = request.ctx;
  if (!ctx) throw errors.unauthorized();
  return hasPermission(ctx, 'patients.view_org') || hasPermission(ctx, 'patients.view');
};

async function readGate(request: FastifyRequest): Promise<void> {
  if (!canRead(request) && !isPatientCaller(contextOf(request)))
    throw errors.forbidden('This needs the patients.view_org permission in the organization.');
}
async function listGate(request: FastifyRequest): Promise<void> {
  if (!canRead(request)) throw errors.forbidden('This needs the patients.view_org permission in the organization.');
}
async function writeGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'patients.update_org') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs the patients.update_org permission in the organization.');
}

/** Patients as far as forms need them (spec 4.5). */
export function patientRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/v1/patients',
    {
      onRequest: [listGate],
      schema: {
        operationId: 'listPatients',
        tags,
        security: bearer,
        summary: 'List the patients of the organization',
        description:
          'Needs patients.view_org. Pagination, sort (last_name, first_name, created_at), q (name or phone), created_at_after/_before.',
        querystring: PatientListQuery,
        response: { 200: ListOf(Patient), ...errorResponses, 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listPatients(tx, orgOf(contextOf(request)), request.query)),
  );

  r.post(
    '/v1/patients',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('patients.onboard')],
      schema: {
        operationId: 'createPatient',
        tags,
        security: bearer,
        summary: 'Create a patient record for a person named by email',
        description:
          'Needs patients.onboard. The person is linked on first sign-in with this email. 409 patient_exists. Honours Idempotency-Key.',
        body: CreatePatientBody,
        response: { 201: DataOf(Patient), ...errorResponses },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createPatient(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/patients/:id',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getPatient',
        tags,
        security: bearer,
        summary: 'Read a patient record',
        description: 'patients.view_org, or the patient itself (without staff notes, private fields and internal ids).',
        params: PatientParams,
        response: { 200: DataOf(Patient), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      return { data: await request.inTx((tx) => svc.getPatient(tx, orgOf(ctx), request.params.id, isPatientCaller(ctx))) };
    },
  );

  r.put(
    '/v1/patients/:id',
    {
      onRequest: [writeGate],
      schema: {
        operationId: 'updatePatient',
        tags,
        security: bearer,
        summary: 'Replace the editable patient record',
        description:
          'patients.update_org, or the patient itself: ownership fields and staff notes are silently dropped from a patient body.',
        params: PatientParams,
        body: PutPatientBody,
        response: { 200: DataOf(Patient), ...errorResponses },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => svc.putPatient(tx, actor, request.params.id, request.body, isPatientCaller(actor.ctx))) };
    },
  );

  r.delete(
    '/v1/patients/:id',
    {
      onRequest: [requirePermission('patients.delete')],
      schema: {
        operationId: 'deletePatient',
        tags,
        security: bearer,
        summary: 'Delete a patient record (soft)',
        params: PatientParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      await request.inTx((tx) => svc.deletePatient(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );
}
