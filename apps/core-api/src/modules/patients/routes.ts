import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';
import { getProfile, putProfile } from './profile.ts';
import {
  CreatePatientBody,
  Patient,
  PatientListQuery,
  PatientParams,
  PatientProfile,
  PutPatientBody,
  PutPatientProfileBody,
} from './schemas.ts';
import * as svc from './service.ts';

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
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/patients',
    {
      onRequest: [listGate],
      schema: {
        operationId: 'listPatients',
        summary: 'List the patients of the organization',
        description:
          'Needs patients.view_org. Pagination, sort (last_name, first_name, created_at), q (name, phone or email), created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted patients too.',
        querystring: PatientListQuery,
        response: { 200: ListOf(Patient), 422: ErrorResponse },
      },
    },
    async (request) => {
      const includeDeleted = includeDeletedOf(request);
      const page = await request.inTx((tx) => svc.listPatients(tx, orgIdOf(request), request.query, includeDeleted));
      request.logAccess({ action: 'patient.listed', patientIds: page.data.map((p) => p.id) });
      return page;
    },
  );

  r.post(
    '/v1/patients',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('patients.onboard')],
      schema: {
        operationId: 'createPatient',
        summary: 'Create a patient record for a person named by email',
        description:
          'Needs patients.onboard. The person is linked on first sign-in with this email. 409 patient_exists. Honours Idempotency-Key.',
        body: CreatePatientBody,
        response: { 201: DataOf(Patient) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createPatient(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/patients/:id',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getPatient',
        summary: 'Read a patient record',
        description: 'patients.view_org, or the patient itself (without staff notes, private fields and internal ids).',
        params: PatientParams,
        response: { 200: DataOf(Patient) },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const data = await request.inTx((tx) => svc.getPatient(tx, orgIdOf(request), request.params.id, isPatientCaller(ctx)));
      request.logAccess({ action: 'patient.read', patientIds: [data.id] });
      return { data };
    },
  );

  r.put(
    '/v1/patients/:id',
    {
      // Made for the patient under impersonation too: its audit entry says so.
      config: { impersonable: true },
      onRequest: [writeGate],
      schema: {
        operationId: 'updatePatient',
        summary: 'Replace the editable patient record',
        description:
          'patients.update_org, or the patient itself: ownership fields and staff notes are silently dropped from a patient body.',
        params: PatientParams,
        body: PutPatientBody,
        response: { 200: DataOf(Patient) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.putPatient(tx, actor, request.params.id, request.body, isPatientCaller(actor.ctx))) };
    },
  );

  r.delete(
    '/v1/patients/:id',
    {
      onRequest: [requirePermission('patients.delete')],
      schema: {
        operationId: 'deletePatient',
        summary: 'Delete a patient record (soft)',
        params: PatientParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deletePatient(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );

  r.get(
    '/v1/patients/:id/profile',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getPatientProfile',
        summary: "Read a patient's profile (demographics)",
        description: 'patients.view_org, or the patient itself (without the clinic record number and private fields).',
        params: PatientParams,
        response: { 200: DataOf(PatientProfile) },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const data = await request.inTx((tx) => getProfile(tx, orgIdOf(request), request.params.id, isPatientCaller(ctx)));
      request.logAccess({ action: 'patient_profile.read', patientIds: [data.patient_id] });
      return { data };
    },
  );

  r.put(
    '/v1/patients/:id/profile',
    {
      // Made for the patient under impersonation too: its audit entry says so.
      config: { impersonable: true },
      onRequest: [writeGate],
      schema: {
        operationId: 'updatePatientProfile',
        summary: "Replace a patient's profile",
        description: 'patients.update_org, or the patient itself. Staff notes are not part of the profile and stay as they are.',
        params: PatientParams,
        body: PutPatientProfileBody,
        response: { 200: DataOf(PatientProfile) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => putProfile(tx, actor, request.params.id, request.body, isPatientCaller(actor.ctx))) };
    },
  );
}
