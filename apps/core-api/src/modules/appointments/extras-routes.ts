import type { AssetStore } from '@clinic/assets';
import { DataOf, ErrorResponse, errors } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { acceptUploads, type FileLimits, receiveUpload, sendFile } from '../../platform/file-store.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { AppointmentFile, AppointmentFileParams, AppointmentReview, CreateReviewBody } from './extras-schemas.ts';
import * as x from './extras-queries.ts';
import { addAppointmentFile, listAppointmentFiles, openAppointmentFile, removeAppointmentFile, visibleAppointment } from './files.ts';
import { appointmentEvent } from './icalendar.ts';
import { buildCalendar } from '../../platform/icalendar.ts';
import { createReview, listReviews } from './reviews.ts';
import { AppointmentParams } from './schemas.ts';

export interface AppointmentExtrasDeps {
  assets: AssetStore;
  /** FORM_FILE_MAX_BYTES and FORM_FILE_TYPES: appointment files take the form files' limits. */
  fileLimits: FileLimits;
  /** The host that names calendar entries (UID <appointment id>@host). */
  calendarHost: string;
}

/** Staff who may update the appointment, or a patient (its own, by the row policies); the service decides per appointment. */
async function attachGate(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'appointments.update_org') && !hasPermission(ctx, 'appointments.update_own') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs appointments.update_org or appointments.update_own, or the appointment to be yours.');
}

/** A patient (or its caregiver) acting on its own appointment. */
async function patientGate(request: FastifyRequest): Promise<void> {
  if (!isPatientCaller(contextOf(request)))
    throw errors.forbidden("An appointment is reviewed by its patient (or the patient's caregiver).");
}

/**
 * Files, reviews and the .ics of appointments (spec 4.5 Appointments). `readGate`
 * is the appointments' own: staff who see appointments, or a patient.
 */
export async function appointmentExtraRoutes(
  app: FastifyInstance,
  deps: AppointmentExtrasDeps,
  readGate: (request: FastifyRequest) => Promise<void>,
): Promise<void> {
  const limits = deps.fileLimits;
  // Multipart only in this scope: other routes keep accepting JSON alone.
  await app.register(async (scope) => {
    await acceptUploads(scope, limits);
    const r = routesOf(scope, { tags: ['appointments'], errors: errorSchemas(400, 401, 403, 404, 409, 429) });

    r.post(
      '/v1/appointments/:id/files',
      {
        config: { idempotent: true },
        onRequest: [attachGate],
        schema: {
          operationId: 'addAppointmentFile',
          summary: 'Attach a file to an appointment (multipart field "file")',
          description: `Staff who may update the appointment (appointments.update_org, or update_own for its specialist), or its patient (or caregiver). At most ${limits.maxBytes} bytes (413 file_too_large); types ${limits.types.join(', ')}, whose bytes must match the declared type (415 unsupported_media_type). 409 appointment_closed for a cancelled or rescheduled appointment. Honours Idempotency-Key: the key names the upload; a retry gets the first file back.`,
          params: AppointmentParams,
          consumes: ['multipart/form-data'],
          response: { 201: DataOf(AppointmentFile), 413: ErrorResponse, 415: ErrorResponse },
        },
      },
      async (request, reply) => {
        const actor = orgActorOf(request);
        const id = request.params.id.toLowerCase();
        const row = await receiveUpload(request, limits, (getUpload) =>
          addAppointmentFile(request.inTx.bind(request), deps.assets, limits, actor, id, getUpload),
        );
        return reply.status(201).send({ data: row });
      },
    );

    r.get(
      '/v1/appointments/:id/files',
      {
        onRequest: [readGate],
        schema: {
          operationId: 'listAppointmentFiles',
          summary: 'Files attached to an appointment',
          description: 'Whoever reads the appointment: appointments.view_org, view_own (its specialist), or its patient.',
          params: AppointmentParams,
          response: { 200: Type.Object({ data: Type.Array(AppointmentFile) }) },
        },
      },
      async (request) => {
        const { patientId, files } = await request.inTx((tx) =>
          listAppointmentFiles(tx, orgIdOf(request), request.params.id.toLowerCase()),
        );
        if (patientId) request.logAccess({ action: 'appointment_file.listed', patientIds: [patientId], targetId: request.params.id });
        return { data: files };
      },
    );

    r.get(
      '/v1/appointments/:id/files/:fileId',
      {
        onRequest: [readGate],
        schema: { operationId: 'downloadAppointmentFile', summary: 'Download a file of an appointment', params: AppointmentFileParams },
      },
      async (request, reply) => {
        const { row, body, patientId } = await request.inTx((tx) =>
          openAppointmentFile(tx, deps.assets, orgIdOf(request), request.params.id.toLowerCase(), request.params.fileId.toLowerCase()),
        );
        if (patientId) request.logAccess({ action: 'appointment_file.read', patientIds: [patientId], targetId: row.id });
        return sendFile(reply, row, body);
      },
    );

    r.delete(
      '/v1/appointments/:id/files/:fileId',
      {
        onRequest: [attachGate],
        schema: {
          operationId: 'deleteAppointmentFile',
          summary: 'Remove a file from an appointment',
          description:
            'Staff who may update the appointment remove any file; its patient (or caregiver) only those its side added (403 otherwise). The stored object is deleted after commit.',
          params: AppointmentFileParams,
          response: { 204: Type.Null({ description: 'Removed' }) },
        },
      },
      async (request, reply) => {
        const actor = orgActorOf(request);
        await removeAppointmentFile(
          request.inTx.bind(request),
          deps.assets,
          actor,
          request.params.id.toLowerCase(),
          request.params.fileId.toLowerCase(),
        );
        return reply.status(204).send(null);
      },
    );
  });

  const r = routesOf(app, { tags: ['appointments'], errors: errorSchemas(400, 401, 403, 404, 409, 429) });

  r.post(
    '/v1/appointments/:id/reviews',
    {
      config: { idempotent: true },
      onRequest: [patientGate],
      schema: {
        operationId: 'createAppointmentReview',
        summary: 'Review a visit that is done',
        description:
          "The appointment's patient (or its caregiver), once: 409 review_exists for a second review, 409 appointment_not_done before the visit is done. rating 1 to 5, an optional comment. Staff read it at GET /v1/appointments/{id}/reviews. Honours Idempotency-Key.",
        params: AppointmentParams,
        body: CreateReviewBody,
        response: { 201: DataOf(AppointmentReview) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const review = await request.inTx((tx) => createReview(tx, actor, request.params.id.toLowerCase(), request.body));
      return reply.status(201).send({ data: review });
    },
  );

  r.get(
    '/v1/appointments/:id/reviews',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'listAppointmentReviews',
        summary: "An appointment's review (none or one)",
        description: 'Whoever reads the appointment: appointments.view_org, view_own (its specialist), or its patient.',
        params: AppointmentParams,
        response: { 200: Type.Object({ data: Type.Array(AppointmentReview) }) },
      },
    },
    async (request) => {
      const { patientId, reviews } = await request.inTx((tx) => listReviews(tx, orgIdOf(request), request.params.id.toLowerCase()));
      if (patientId && reviews.length)
        request.logAccess({ action: 'appointment_review.read', patientIds: [patientId], targetId: request.params.id });
      return { data: reviews };
    },
  );

  r.get(
    '/v1/appointments/:id.ics',
    {
      onRequest: [readGate],
      schema: {
        operationId: 'getAppointmentIcs',
        summary: 'The appointment as an iCalendar file (.ics)',
        description:
          "Whoever reads the appointment. One VEVENT (UTC times; UID <id>@host, so a re-import updates the entry): the service, the specialist, the location or how it is held, STATUS CANCELLED for a cancelled or moved one. Never the patient's name or contact data. text/calendar.",
        params: AppointmentParams,
      },
    },
    async (request, reply) => {
      const id = request.params.id.toLowerCase();
      const entry = await request.inTx(async (tx) => {
        await visibleAppointment(tx, orgIdOf(request), id);
        return (await x.calendarEntry(tx, orgIdOf(request), id))!;
      });
      const body = buildCalendar({ product: 'Scheduling', events: [appointmentEvent(entry, deps.calendarHost, { withSpecialist: true })] });
      return reply
        .header('content-type', 'text/calendar; charset=utf-8')
        .header('content-disposition', `attachment; filename="appointment-${id}.ics"`)
        .header('cache-control', 'private, no-store')
        .send(body);
    },
  );
}
