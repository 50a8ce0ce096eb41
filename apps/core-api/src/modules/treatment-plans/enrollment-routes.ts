import { DataOf, ErrorResponse, errors, ListOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import * as svc from './enrollment-service.ts';
import {
  EnrollBody,
  Enrollment,
  EnrollmentDetail,
  EnrollmentListQuery,
  MigrateBody,
  PlanParams,
  ReasonBody,
  ResumeBody,
} from './schemas.ts';

const tags = ['treatment-plans'];
const assign = requirePermission('treatment_plans.assign');
const READ_CODES = ['treatment_plans.view_org', 'treatment_plans.assign', 'telemetry.view_org'];

/** Staff who see plans, assign them or review telemetry; or a patient (its own, by the row policies). */
export async function enrollmentReader(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!READ_CODES.some((c) => hasPermission(ctx, c)) && !isPatientCaller(ctx))
    throw errors.forbidden('This needs treatment_plans.view_org, treatment_plans.assign or telemetry.view_org, or your own enrollment.');
}

/** Pausing and resuming: staff with treatment_plans.assign, or the patient its own. */
async function pauser(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'treatment_plans.assign') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs treatment_plans.assign, or your own enrollment.');
}

const Params = Type.Object({ id: Uuid });

/**
 * Enrollments: a patient in a published version of a plan, pinned, with its schedule; pause,
 * resume, cancel with reasons; staff migrate it to another version. None of these writes may be made with an
 * impersonation token (docs/decisions.md): they change the patient's treatment, not their portal data.
 */
export function enrollmentRoutes(app: FastifyInstance): void {
  const r = routesOf(app, { tags, errors: errorSchemas(400, 401, 403, 404, 409, 429) });
  const logRead = (request: FastifyRequest, rows: { id: string; patient_id: string }[]) => {
    if (rows.length)
      request.logAccess({
        action: 'enrollment.read',
        patientIds: rows.map((e) => e.patient_id),
        targetId: rows.length === 1 ? rows[0]!.id : null,
      });
  };

  r.post(
    '/v1/treatment-plans/:id/enrollments',
    {
      config: { references: { ':id': 'treatment_plans', patient_id: 'patients' }, idempotent: true },
      onRequest: [assign],
      schema: {
        operationId: 'enrollInTreatmentPlan',
        summary: 'Enroll a patient in a published version of the plan',
        description:
          'Needs treatment_plans.assign. The enrollment is pinned to the version (default the latest): a later publish changes nothing until staff migrate it. Plan day n is the n-th date from start_date on one of the weekdays, not paused. 409 plan_not_published, already_enrolled (one active or paused enrollment per patient and plan). Honours Idempotency-Key.',
        params: PlanParams,
        body: EnrollBody,
        response: { 201: DataOf(Enrollment) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.enroll(tx, actor, request.params.id, request.body)) });
    },
  );

  r.get(
    '/v1/treatment-plans/enrollments',
    {
      onRequest: [enrollmentReader],
      schema: {
        operationId: 'listEnrollments',
        summary: 'List enrollments',
        description:
          "Staff with treatment_plans.view_org, assign or telemetry.view_org: the organization's; a patient (or its caregiver): its own. Filters patient_id, treatment_plan_id, status (comma-separated); sort created_at, start_date.",
        querystring: EnrollmentListQuery,
        response: { 200: ListOf(Enrollment), 422: ErrorResponse },
      },
    },
    async (request) => {
      const list = await request.inTx((tx) => svc.listEnrollments(tx, orgIdOf(request), request.query));
      logRead(request, list.data);
      return list;
    },
  );

  r.get(
    '/v1/treatment-plans/enrollments/:id',
    {
      onRequest: [enrollmentReader],
      schema: {
        operationId: 'getEnrollment',
        summary: 'An enrollment, its pauses and the plan version it follows',
        params: Params,
        response: { 200: DataOf(EnrollmentDetail) },
      },
    },
    async (request) => {
      const e = await request.inTx((tx) => svc.getEnrollment(tx, orgIdOf(request), request.params.id));
      logRead(request, [e]);
      return { data: e };
    },
  );

  r.post(
    '/v1/treatment-plans/enrollments/:id/pause',
    {
      onRequest: [pauser],
      schema: {
        operationId: 'pauseEnrollment',
        summary: 'Pause an active enrollment, with a reason',
        description:
          'Staff with treatment_plans.assign, or the patient its own. From today (local) no date is scheduled until it resumes. 409 invalid_transition.',
        params: Params,
        body: ReasonBody,
        response: { 200: DataOf(EnrollmentDetail) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.pause(tx, actor, request.params.id, request.body.reason)) };
    },
  );

  r.post(
    '/v1/treatment-plans/enrollments/:id/resume',
    {
      onRequest: [pauser],
      schema: {
        operationId: 'resumeEnrollment',
        summary: 'Resume a paused enrollment',
        description:
          'Staff with treatment_plans.assign, or the patient its own. The plan continues with the next plan day. 409 invalid_transition.',
        params: Params,
        body: ResumeBody,
        response: { 200: DataOf(EnrollmentDetail) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.resume(tx, actor, request.params.id, request.body.reason)) };
    },
  );

  r.post(
    '/v1/treatment-plans/enrollments/:id/cancel',
    {
      onRequest: [assign],
      schema: {
        operationId: 'cancelEnrollment',
        summary: 'Cancel an enrollment, with a reason',
        description: 'Needs treatment_plans.assign. Active or paused -> cancelled (final). 409 invalid_transition.',
        params: Params,
        body: ReasonBody,
        response: { 200: DataOf(EnrollmentDetail) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.cancel(tx, actor, request.params.id, request.body.reason)) };
    },
  );

  r.post(
    '/v1/treatment-plans/enrollments/:id/migrate',
    {
      onRequest: [assign],
      schema: {
        operationId: 'migrateEnrollment',
        summary: 'Move an enrollment to another published version of its plan',
        description:
          'Needs treatment_plans.assign. Plan days continue by date; sessions already done keep the version they were done in. 404 for a version that does not exist; 409 invalid_transition for a cancelled enrollment.',
        params: Params,
        body: MigrateBody,
        response: { 200: DataOf(EnrollmentDetail) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.migrate(tx, actor, request.params.id, request.body.version)) };
    },
  );
}
