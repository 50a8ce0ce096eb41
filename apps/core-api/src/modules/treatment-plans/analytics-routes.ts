import { DataOf, ErrorResponse, errors, Uuid } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config.ts';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgIdOf, routesOf } from '../../platform/route.ts';
import * as svc from './analytics-service.ts';
import { Dashboard, DashboardQuery, Progress } from './schemas.ts';

const tags = ['treatment-plans'];

/** A patient reads its own progress; staff need telemetry.view_org (spec 2.7). */
async function progressReader(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'telemetry.view_org') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs the telemetry.view_org permission, or your own enrollment.');
}

/**
 * Progress and the clinic dashboard: clinical decision-support outputs, served only where the
 * organization enabled telerehab (403 telerehab_disabled), every read recorded in the access log, every answer
 * with the device labelling and the algorithm versions behind its numbers (docs/telerehab.md).
 */
export function analyticsRoutes(app: FastifyInstance, deps: { systemInfo: Config['systemInfo'] }): void {
  const r = routesOf(app, { tags, errors: errorSchemas(400, 401, 403, 404, 409, 429) });

  r.get(
    '/v1/treatment-plans/enrollments/:id/progress',
    {
      onRequest: [progressReader],
      schema: {
        operationId: 'getEnrollmentProgress',
        summary: "An enrollment's progress: adherence, reps, form scores and range of motion over time, self-reports",
        description:
          'The patient (or its caregiver) its own; staff with telemetry.view_org. 403 telerehab_disabled where the organization has not enabled telerehab. Definitions in docs/telerehab.md.',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(Progress) },
      },
    },
    async (request) => {
      const p = await request.inTx((tx) => svc.progress(tx, orgIdOf(request), request.params.id, deps.systemInfo));
      request.logAccess({ action: 'treatment_progress.read', patientIds: [p.enrollment.patient_id], targetId: p.enrollment.id });
      return { data: p };
    },
  );

  r.get(
    '/v1/treatment-plans/analytics',
    {
      onRequest: [requirePermission('telemetry.view_org')],
      schema: {
        operationId: 'getTelerehabDashboard',
        summary: 'The clinic dashboard: live enrollments by adherence and form trend over a window',
        description:
          'Needs telemetry.view_org. Over the window_days (7-90, default 14) dates before today: adherence (due plan days whose items were all completed), the form score mean and least-squares trend; falling_behind below 0.7 adherence, worsening_form for a fall of 10 points or more across the window over at least 3 scored sessions. Filters falling_behind, worsening_form, treatment_plan_id; sort adherence (default, worst first), form_trend, last_completed_at. 403 telerehab_disabled.',
        querystring: DashboardQuery,
        response: { 200: Dashboard, 422: ErrorResponse },
      },
    },
    async (request) => {
      const d = await request.inTx((tx) => svc.dashboard(tx, orgIdOf(request), request.query, deps.systemInfo));
      if (d.data.length) request.logAccess({ action: 'treatment_analytics.read', patientIds: d.data.map((x) => x.patient_id) });
      return d;
    },
  );
}
