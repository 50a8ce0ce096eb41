import type { Queryable } from '@clinic/db';
import { DataOf, ErrorResponse, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requireOrgAccess, requirePermission } from '../../platform/gates.ts';
import { errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { versionRoutes } from '../../platform/versioned/routes.ts';
import { activeEnrollmentsOf } from './enrollment-queries.ts';
import { analyticsRoutes } from './analytics-routes.ts';
import { enrollmentRoutes } from './enrollment-routes.ts';
import { type SessionDeps, sessionRoutes } from './session-routes.ts';
import { findPlan } from './queries.ts';
import {
  CloneBody,
  CreatePlanBody,
  DuplicateBody,
  PlanListQuery,
  PlanParams,
  PromoteBody,
  TelerehabSettings,
  TreatmentPlan,
  TreatmentPlanVersion,
  UpdatePlanBody,
  UpdateSettingsBody,
} from './schemas.ts';
import * as svc from './service.ts';

const tags = ['treatment-plans'];
const view = requirePermission('treatment_plans.view_org');
const manage = requirePermission('treatment_plans.manage');

/** A read of a patient's plan is a read of patient data (spec 6.2): recorded in the access log. */
function logPlanRead(request: FastifyRequest, plans: { id: string; patient_id: string | null }[], action = 'treatment_plan.read'): void {
  const patientIds = plans.flatMap((p) => (p.patient_id ? [p.patient_id] : []));
  if (patientIds.length) request.logAccess({ action, patientIds, targetId: plans.length === 1 ? plans[0]!.id : null });
}

/**
 * Treatment plans (docs/telerehab.md): library and patient plans with the versioned lifecycle of
 * platform/versioned (publish, rollback, versions), approval by a second clinician, duplicate, clone, promote;
 * and the organization's telerehab settings (the regulatory boundary). Staff routes only: patients see the
 * version they are enrolled in through their enrollments.
 */
export function treatmentPlanRoutes(app: FastifyInstance, deps: SessionDeps): void {
  const r = routesOf(app, { tags, errors: errorSchemas(400, 401, 403, 404, 409, 429) });
  enrollmentRoutes(app);
  sessionRoutes(app, deps);
  analyticsRoutes(app, deps);

  r.get(
    '/v1/treatment-plans/settings',
    {
      onRequest: [requireOrgAccess()],
      schema: {
        operationId: 'getTelerehabSettings',
        summary: "The organization's telerehab settings and the intended-use statement",
        description:
          'Staff and patients of the organization in scope. `enabled` decides whether form scores, progress and analytics are served (the regulatory boundary, docs/telerehab.md).',
        response: { 200: DataOf(TelerehabSettings) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => svc.getSettings(tx, orgIdOf(request))) }),
  );

  r.put(
    '/v1/treatment-plans/settings',
    {
      onRequest: [requirePermission('organizations.update')],
      schema: {
        operationId: 'updateTelerehabSettings',
        summary: 'Enable telerehab, or require a second clinician to approve plans',
        description:
          'Needs organizations.update. Enabling needs the current intended-use statement accepted (accept_intended_use: true, once per statement version).',
        body: UpdateSettingsBody,
        response: { 200: DataOf(TelerehabSettings) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updateSettings(tx, actor, request.body)) };
    },
  );

  r.post(
    '/v1/treatment-plans',
    {
      // The service names these with the plan's other problems.
      config: {
        references: { patient_id: 'patients', 'phases[].days[].items[].exercise_id': 'exercises?shared' },
        referencesInService: true,
        idempotent: true,
      },
      onRequest: [manage],
      schema: {
        operationId: 'createTreatmentPlan',
        summary: 'Create a treatment plan (a draft)',
        description:
          "Needs treatment_plans.manage. Without patient_id a library plan, with it that patient's plan. Exercises must be published and visible to the organization; reps-based items take sets, duration-based ones duration_seconds. Honours Idempotency-Key.",
        body: CreatePlanBody,
        response: { 201: DataOf(TreatmentPlan) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const plan = await request.inTx((tx) => svc.createPlan(tx, actor, request.body));
      return reply.status(201).send({ data: plan });
    },
  );

  r.get(
    '/v1/treatment-plans',
    {
      onRequest: [view],
      schema: {
        operationId: 'listTreatmentPlans',
        summary: 'List treatment plans',
        description:
          'Needs treatment_plans.view_org. Filters kind (library, patient), patient_id, published, q, created_at_after/_before; sort name, created_at, updated_at; include_deleted=true (data.view_deleted) lists deleted plans too.',
        querystring: PlanListQuery,
        response: { 200: ListOf(TreatmentPlan), 422: ErrorResponse },
      },
    },
    async (request) => {
      const includeDeleted = includeDeletedOf(request);
      const list = await request.inTx((tx) => svc.listPlans(tx, orgIdOf(request), request.query, includeDeleted));
      logPlanRead(request, list.data);
      return list;
    },
  );

  r.get(
    '/v1/treatment-plans/:id',
    {
      onRequest: [view],
      schema: {
        operationId: 'getTreatmentPlan',
        summary: 'Read a treatment plan (its draft or its published content)',
        params: PlanParams,
        response: { 200: DataOf(TreatmentPlan) },
      },
    },
    async (request) => {
      const plan = await request.inTx((tx) => svc.getPlan(tx, orgIdOf(request), request.params.id));
      logPlanRead(request, [plan]);
      return { data: plan };
    },
  );

  r.patch(
    '/v1/treatment-plans/:id',
    {
      // The service names these with the plan's other problems.
      config: {
        references: { ':id': 'treatment_plans', 'phases[].days[].items[].exercise_id': 'exercises?shared' },
        referencesInService: true,
      },
      onRequest: [manage],
      schema: {
        operationId: 'updateTreatmentPlan',
        summary: 'Edit the draft (same version)',
        description:
          'Only a draft changes (spec 3.5): a published plan is 409 plan_not_draft; POST /{id}/rollback makes a draft from a version. A change drops any approval.',
        params: PlanParams,
        body: UpdatePlanBody,
        response: { 200: DataOf(TreatmentPlan) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updatePlan(tx, actor, request.params.id, request.body)) };
    },
  );

  r.delete(
    '/v1/treatment-plans/:id',
    {
      onRequest: [requirePermission('treatment_plans.delete')],
      schema: {
        operationId: 'deleteTreatmentPlan',
        summary: 'Delete a treatment plan (soft); its versions stay for the enrollments that ended',
        description: 'Needs treatment_plans.delete. 409 plan_in_use while an enrollment in it is active or paused.',
        params: PlanParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const id = request.params.id;
      await request.inTx((tx) => svc.deletePlan(tx, actor, id, (t) => activeEnrollmentsOf(t, actor.orgId, id)));
      return reply.status(204).send(null);
    },
  );

  r.post(
    '/v1/treatment-plans/:id/approve',
    {
      onRequest: [requirePermission('treatment_plans.approve')],
      schema: {
        operationId: 'approveTreatmentPlan',
        summary: 'A second clinician approves the draft as it is',
        description:
          'Needs treatment_plans.approve; the clinician who last changed the draft cannot (403 second_clinician_required). Where the organization requires it, only an approved draft is published (409 approval_required otherwise). Any change of the content drops the approval. 409 plan_not_draft.',
        params: PlanParams,
        response: { 200: DataOf(TreatmentPlan) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.approvePlan(tx, actor, request.params.id)) };
    },
  );

  r.post(
    '/v1/treatment-plans/:id/duplicate',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'duplicateTreatmentPlan',
        summary: 'Copy a plan within the organization (a new draft of the same kind)',
        params: PlanParams,
        body: DuplicateBody,
        response: { 201: DataOf(TreatmentPlan) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.duplicatePlan(tx, actor, request.params.id, request.body)) });
    },
  );

  r.post(
    '/v1/treatment-plans/:id/clone',
    {
      config: { references: { ':id': 'treatment_plans', patient_id: 'patients' }, idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'cloneTreatmentPlan',
        summary: 'Copy a published version of a library plan into a plan for one patient (a draft)',
        description: '409 not_a_library_plan, plan_not_published; 404 for a version that does not exist.',
        params: PlanParams,
        body: CloneBody,
        response: { 201: DataOf(TreatmentPlan) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.clonePlan(tx, actor, request.params.id, request.body)) });
    },
  );

  r.post(
    '/v1/treatment-plans/:id/promote',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('treatment_plans.promote_to_org')],
      schema: {
        operationId: 'promoteTreatmentPlan',
        summary: "Turn a published version of a patient's plan into a library plan (a new draft)",
        description: "Needs treatment_plans.promote_to_org. The patient's plan stays as it is. 409 not_a_patient_plan, plan_not_published.",
        params: PlanParams,
        body: PromoteBody,
        response: { 201: DataOf(TreatmentPlan) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const plan = await request.inTx((tx) => svc.promotePlan(tx, actor, request.params.id, request.body));
      return reply.status(201).send({ data: plan });
    },
  );

  versionRoutes(r, {
    base: '/v1/treatment-plans',
    manage,
    read: view,
    text: {
      publish: {
        operationId: 'publishTreatmentPlan',
        summary: 'Publish the draft as the next version',
        description:
          '409 already_published when there is no draft; 409 approval_required where the organization requires a second clinician and the draft is not approved. Enrollments stay on the version they pinned.',
      },
      rollback: { operationId: 'rollbackTreatmentPlan', summary: 'Make a draft from a version (publishing it makes the next number)' },
      listVersions: { operationId: 'listTreatmentPlanVersions', summary: 'Published versions, newest first' },
      getVersion: { operationId: 'getTreatmentPlanVersion', summary: 'One published version' },
    },
    schemas: { resource: TreatmentPlan, version: TreatmentPlanVersion },
    actorOf: orgActorOf,
    orgOf: orgIdOf,
    service: svc.planLifecycle,
    afterRead: async (request: FastifyRequest, tx: Queryable, id: string) => {
      const plan = await findPlan(tx, orgIdOf(request), id);
      if (plan) logPlanRead(request, [plan], 'treatment_plan_version.read');
    },
  });
}
