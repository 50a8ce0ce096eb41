import { DataOf, ErrorResponse, errors, PaginationSchema, Uuid, isUuid } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import {
  CompleteBody,
  Labelling,
  PlanSession,
  SessionListQuery,
  SkipBody,
  StartBody,
  StartedSession,
  TodayPlan,
  TodayQuery,
} from './schemas.ts';
import * as svc from './session-service.ts';

export type { SessionDeps } from './session-service.ts';
import { currentPatientId } from './session-queries.ts';

const tags = ['treatment-plans'];
const READ_CODES = ['treatment_plans.view_org', 'telemetry.view_org'];

/** Sessions are the patient's own acts (treatment_plans.execute_own_session is ownership, not a role's code). */
async function patientOnly(request: FastifyRequest): Promise<void> {
  if (!isPatientCaller(contextOf(request)))
    throw errors.forbidden('Plan sessions are started, completed and skipped by the patient (or its caregiver), for itself.');
}

async function sessionReader(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!READ_CODES.some((c) => hasPermission(ctx, c)) && !isPatientCaller(ctx))
    throw errors.forbidden('This needs treatment_plans.view_org or telemetry.view_org, or your own sessions.');
}

const SessionWithLabelling = Type.Object({ ...PlanSession.properties, labelling: Labelling });
const Params = Type.Object({ id: Uuid });

/**
 * Plan sessions: today's plan, start (the exercise session of 4.11, its telemetry token and the
 * item's composed video), complete (the telemetry results already written at session end), skip with a reason,
 * and reads. The writes are the patient's own and are not impersonable: they record the patient's body and
 * statements (biometric capture, pain), which nobody makes in their name.
 */
export function sessionRoutes(app: FastifyInstance, deps: svc.SessionDeps): void {
  const r = routesOf(app, { tags, errors: errorSchemas(400, 401, 403, 404, 409, 429) });
  const logRead = (request: FastifyRequest, rows: { id: string; patient_id: string }[], action = 'plan_session.read') => {
    if (rows.length)
      request.logAccess({ action, patientIds: rows.map((s) => s.patient_id), targetId: rows.length === 1 ? rows[0]!.id : null });
  };

  r.get(
    '/v1/treatment-plans/today',
    {
      onRequest: [sessionReader],
      schema: {
        operationId: 'getTodayPlan',
        summary: "Today's plan: each live enrollment's plan day, its items and what was done with them",
        description:
          "A patient (or its caregiver, X-Patient-ID) reads its own; staff with treatment_plans.view_org or telemetry.view_org name the patient with patient_id. 'Today' is the date in each enrollment's zone.",
        querystring: TodayQuery,
        response: { 200: DataOf(TodayPlan), 422: ErrorResponse },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const orgId = orgIdOf(request);
      const asked = request.query.patient_id;
      const patient = isPatientCaller(ctx);
      if (!patient && !isUuid(asked))
        throw errors.queryValidation({ patient_id: 'required for staff: the patient record whose day to show' });
      const data = await request.inTx(async (tx) => {
        const patientId = patient ? await currentPatientId(tx) : asked!.toLowerCase();
        if (!patientId) throw errors.notFound('You are not a patient of this organization.');
        return { patientId, plan: await svc.today(tx, orgId, patientId, patient) };
      });
      if (data.plan.enrollments.length) request.logAccess({ action: 'treatment_plan.today', patientIds: [data.patientId] });
      return { data: data.plan };
    },
  );

  r.post(
    '/v1/treatment-plans/enrollments/:id/sessions',
    {
      config: { idempotent: true },
      onRequest: [patientOnly],
      schema: {
        operationId: 'startPlanSession',
        summary: "Start an item of today's plan day",
        description:
          "The patient (or its caregiver) of an active enrollment, on a plan day. Scored items (reps-based exercises with a movement definition) need the biometric consent and create the exercise session of spec 4.11: its token authenticates the pose batches and the end at the telemetry service. The video is composed with the item's sets and a stable seed (null, with the reason, when the composer cannot give it). Every purpose the plan requires must be granted (403 consent_required). Starting an item again makes a new exercise session. 409 enrollment_not_active, not_a_plan_day, plan_session_closed, exercise_unavailable. Honours Idempotency-Key.",
        params: Params,
        body: StartBody,
        response: { 201: DataOf(StartedSession) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const data = await svc.startSession((fn) => request.inTx(fn), deps, actor, request.params.id, request.body.item_index);
      return reply.status(201).send({ data });
    },
  );

  r.post(
    '/v1/treatment-plans/enrollments/:id/skip',
    {
      onRequest: [patientOnly],
      schema: {
        operationId: 'skipPlanItem',
        summary: "Skip an item of today's plan day, with a reason",
        description:
          'The patient (or its caregiver). A started item may be skipped too. 409 plan_session_closed, not_a_plan_day, enrollment_not_active.',
        params: Params,
        body: SkipBody,
        response: { 200: DataOf(SessionWithLabelling) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      const { item_index, reason } = request.body;
      return { data: await request.inTx((tx) => svc.skipItem(tx, deps, actor, request.params.id, item_index, reason)) };
    },
  );

  r.post(
    '/v1/treatment-plans/sessions/:id/complete',
    {
      onRequest: [patientOnly],
      schema: {
        operationId: 'completePlanSession',
        summary: 'Complete a started session with the telemetry results and the self-reports',
        description:
          "For a scored item the exercise session must have ended at the telemetry service (409 session_not_ended): its result (reps, form score, range of motion) is stored with the scoring algorithm's version and this software's version and UDI-DI. pain and effort are required when the plan asks for them. 409 plan_session_closed.",
        params: Params,
        body: CompleteBody,
        response: { 200: DataOf(SessionWithLabelling) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.completeSession(tx, deps, actor, request.params.id, request.body)) };
    },
  );

  r.get(
    '/v1/treatment-plans/sessions',
    {
      onRequest: [sessionReader],
      schema: {
        operationId: 'listPlanSessions',
        summary: 'List plan sessions',
        description:
          "Staff with treatment_plans.view_org or telemetry.view_org: the organization's; a patient: its own. Results are served only where telerehab is enabled (results_withheld otherwise). Filters enrollment_id, patient_id, status, scheduled_on_after/_before; sort scheduled_on (default newest), created_at, completed_at.",
        querystring: SessionListQuery,
        response: {
          200: Type.Object({ data: Type.Array(PlanSession), pagination: PaginationSchema, labelling: Labelling }),
          422: ErrorResponse,
        },
      },
    },
    async (request) => {
      const list = await request.inTx((tx) => svc.listSessions(tx, deps, orgIdOf(request), request.query));
      logRead(request, list.data);
      return list;
    },
  );

  r.get(
    '/v1/treatment-plans/sessions/:id',
    {
      onRequest: [sessionReader],
      schema: {
        operationId: 'getPlanSession',
        summary: 'A plan session and its results',
        params: Params,
        response: { 200: DataOf(SessionWithLabelling) },
      },
    },
    async (request) => {
      const s = await request.inTx((tx) => svc.sessionRead(tx, deps, orgIdOf(request), request.params.id));
      logRead(request, [s]);
      return { data: s };
    },
  );
}
