import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errors } from '@clinic/http-kit';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { type AppointmentExtrasDeps, appointmentExtraRoutes } from './extras-routes.ts';
import { Appointment, AppointmentListQuery, AppointmentParams, CreateAppointmentBody, PatchAppointmentBody } from './schemas.ts';
import * as svc from './service.ts';

/** Staff who see appointments (their own or the clinic's), or a patient (its own, by the row policies). */
async function readGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'appointments.view_org') && !hasPermission(ctx, 'appointments.view_own') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs appointments.view_org or appointments.view_own.');
}

/**
 * Who may change some appointment: staff with update or cancel rights (the clinic's or their own), or a
 * patient (its own, by the row policies). Anyone else is refused here, before the row is looked for.
 */
async function changeGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  const codes = ['appointments.update_org', 'appointments.cancel_org', 'appointments.update_own', 'appointments.cancel_own'];
  if (!codes.some((c) => hasPermission(ctx, c)) && !isPatientCaller(ctx))
    throw errors.forbidden('This needs appointments.update_org, cancel_org, update_own or cancel_own.');
}

/** Appointments (spec 4.5, 3.5): CRUD with a state machine (docs/scheduling.md); files, reviews and .ics (extras-routes.ts). */
export async function appointmentRoutes(app: FastifyInstance, deps: AppointmentExtrasDeps): Promise<void> {
  const r = routesOf(app, { tags: ['appointments'], errors: errorSchemas(400, 401, 403, 404, 409, 429) });

  r.get(
    '/v1/appointments',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'listAppointments',
        summary: 'List appointments',
        description:
          'appointments.view_org (the clinic), view_own (a specialist: its own), or a patient (its own). Filters: status (comma-separated, or upcoming), specialist_id, patient_id, location_id, service_id, starts_at_after/_before. Sort: starts_at (default), created_at, status.',
        querystring: AppointmentListQuery,
        response: { 200: ListOf(Appointment), 422: ErrorResponse },
      },
    },
    async (request) => request.inTx((tx) => svc.listAppointments(tx, orgIdOf(request), request.query, isPatientCaller(contextOf(request)))),
  );

  r.post(
    '/v1/appointments',
    {
      config: {
        references: { location_id: 'locations', patient_id: 'patients', service_id: 'services', specialist_id: 'specialists' },
        idempotent: true,
      },
      schema: {
        operationId: 'createAppointment',
        summary: 'Book an appointment',
        description:
          'Staff with appointments.create book for patient_id (any service, any free time of the specialist). A patient (or its caregiver, X-Patient-ID) books for itself a public service within its booking rules. The slot must be free: 409 slot_unavailable otherwise, also when a concurrent booking takes it. Video visits need the telemedicine consent (403 consent_required). Honours Idempotency-Key.',
        body: CreateAppointmentBody,
        response: { 201: DataOf(Appointment), 422: ErrorResponse },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createAppointment(tx, actor, request.body)) });
    },
  );

  r.get(
    '/v1/appointments/:id',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getAppointment',
        summary: 'Read an appointment',
        params: AppointmentParams,
        response: { 200: DataOf(Appointment) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) =>
        svc.getAppointment(tx, orgIdOf(request), request.params.id.toLowerCase(), isPatientCaller(contextOf(request))),
      ),
    }),
  );

  r.patch(
    '/v1/appointments/:id',
    {
      config: { references: { ':id': 'appointments', location_id: 'locations', patient_id: 'patients', specialist_id: 'specialists' } },
      onRequest: [changeGate],
      schema: {
        operationId: 'updateAppointment',
        summary: 'Move an appointment through its states, reschedule it, or change its details',
        description:
          'status: a move of the state machine (409 invalid_transition otherwise; docs/scheduling.md). start (and specialist_id, location_id): reschedule; a new appointment takes the time and this one becomes rescheduled. Staff with appointments.update_org / cancel_org (or update_own / cancel_own for their own); the patient cancels, confirms or reschedules its own before the cancellation window (409 cancellation_window_passed).',
        params: AppointmentParams,
        body: PatchAppointmentBody,
        response: { 200: DataOf(Appointment), 422: ErrorResponse },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.patchAppointment(tx, actor, request.params.id.toLowerCase(), request.body)) };
    },
  );

  r.delete(
    '/v1/appointments/:id',
    {
      onRequest: [requirePermission('appointments.delete')],
      schema: {
        operationId: 'deleteAppointment',
        summary: 'Delete a booking that never took place',
        description: 'Needs appointments.delete. 409 appointment_took_place for one checked in, in progress or done.',
        params: AppointmentParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deleteAppointment(tx, actor, request.params.id.toLowerCase()));
      return reply.status(204).send(null);
    },
  );

  await appointmentExtraRoutes(app, deps, readGate);
}
