import { randomBytes } from 'node:crypto';
import type { Caller, Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Treatment plans (spec 2.7 treatment_plans.*). Default grants of migration 0081: admin holds every
 * staff code (view_org, manage, delete, assign, approve, promote_to_org); specialist view_org, manage, assign and
 * approve; customer_support none. Patients act by ownership (no code), so every plan route is 403 for them;
 * another clinic's admin and outsiders hold nothing here (403); superadmins pass every permission check.
 * - Reading plans and their versions: treatment_plans.view_org (admin, specialist, superadmin 200).
 * - Creating, editing, publishing, rolling back, duplicating and cloning: treatment_plans.manage.
 * - Approving: treatment_plans.approve; each cell's draft is written by someone else than the caller (a second
 *   clinician approves, and the author cannot: that rule has its own tests).
 * - Promoting a patient's plan into the library: treatment_plans.promote_to_org (admin, superadmin).
 * - Deleting: treatment_plans.delete (admin, superadmin).
 * - Telerehab settings: read by anyone with access to the organization (staff and its patients); changed with
 *   organizations.update (admin, superadmin).
 * - Enrollments: enrolling, cancelling and migrating need treatment_plans.assign (admin, specialist, superadmin);
 *   reading needs view_org, assign or telemetry.view_org, or is the patient's own (the patient caller is the one
 *   enrolled in each cell's fresh enrollment): admin, specialist, patient, superadmin 200; pausing and resuming
 *   are assign's or the patient's own: the same four.
 * - createOrgConsentPurpose (an organization's treatment_specific_* purpose): consents.manage (admin, superadmin).
 * - Plan sessions are the patient's own acts (treatment_plans.execute_own_session is ownership): starting,
 *   skipping and completing are the patient caller's (201/200) and 403 for everyone else, superadmins included.
 *   Reading them (the list, one session, today's plan) is for treatment_plans.view_org or telemetry.view_org
 *   (admin, specialist, superadmin) and the patient's own. The cells' plan is one duration-based item, which
 *   needs no consent; an earlier cell (restrictProcessing) restricted the patient, so the prepare step lifts it.
 * - Progress and the dashboard are served where the organization enabled telerehab (the prepare step enables it):
 *   progress to telemetry.view_org (admin, specialist, superadmin) and the patient its own; the dashboard to
 *   telemetry.view_org only.
 */

const hex = () => randomBytes(4).toString('hex');
const as = (f: Fixture, p: Prepared = {}): Prepared => ({ ...p, headers: { 'x-organization-id': f.orgId, ...p.headers } });
const row = (r: Partial<Row>): Row => ({
  admin: 403,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 403,
  anonymous: 401,
  ...r,
});
const viewers = (status: number) => row({ admin: status, specialist: status, superadmin: status });

const squatIds = new Map<string, Promise<string>>();
const squat = (f: Fixture) => {
  let p = squatIds.get(f.orgId);
  if (!p) {
    p = f.t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`).then((r) => r.rows[0]!.id);
    squatIds.set(f.orgId, p);
  }
  return p;
};

async function ok(res: { statusCode: number; body: string; json: () => any }): Promise<any> {
  if (res.statusCode >= 300) throw new Error(`treatment plan fixture failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

/** A fresh draft, written by `token` (the superadmin by default). */
export async function freshPlan(f: Fixture, opts: { token?: string; patientId?: string } = {}): Promise<string> {
  const body = {
    name: `Matrix plan ${hex()}`,
    ...(opts.patientId ? { patient_id: opts.patientId } : {}),
    phases: [{ name: 'Week 1', days: [{ items: [{ exercise_id: await squat(f), sets: [{ side: 'left', reps: 10 }] }] }] }],
  };
  return (await ok(await f.t.call('POST', '/v1/treatment-plans', { token: opts.token ?? f.tokens.superadmin, org: f.orgId, body }))).id;
}

/** A fresh plan with version 1 published. */
export async function publishedPlan(f: Fixture, opts: { patientId?: string } = {}): Promise<string> {
  const id = await freshPlan(f, opts);
  await ok(await f.t.call('POST', `/v1/treatment-plans/${id}/publish`, { token: f.tokens.superadmin, org: f.orgId }));
  return id;
}

/** Readers of enrollments: the staff codes of plans (admin, specialist), the patient its own, superadmins. */
const readers = (status: number) => row({ admin: status, specialist: status, patient: status, superadmin: status });

/** A fresh enrollment of the patient caller in a fresh plan (paused when asked). */
async function enrollment(f: Fixture, paused = false): Promise<string> {
  const plan = await publishedPlan(f);
  const body = { patient_id: f.patientRecordId, time_zone: 'UTC' };
  const e = await ok(await f.t.call('POST', `/v1/treatment-plans/${plan}/enrollments`, { token: f.tokens.superadmin, org: f.orgId, body }));
  if (paused)
    await ok(
      await f.t.call('POST', `/v1/treatment-plans/enrollments/${e.id}/pause`, {
        token: f.tokens.superadmin,
        org: f.orgId,
        body: { reason: 'x' },
      }),
    );
  return e.id;
}

const timedIds = new Map<string, Promise<string>>();
/** A published duration-based exercise of the organization (its items need no consent and no composer). */
const timed = (f: Fixture) => {
  let p = timedIds.get(f.orgId);
  if (!p) {
    p = (async () => {
      const body = { slug: `matrix-timed-${hex()}`, name: 'Matrix hold', kind: 'duration_based' };
      const e = await ok(await f.t.call('POST', '/v1/exercises', { token: f.tokens.superadmin, org: f.orgId, body }));
      await ok(
        await f.t.call('PUT', `/v1/exercises/${e.id}/status`, { token: f.tokens.superadmin, org: f.orgId, body: { status: 'published' } }),
      );
      return e.id as string;
    })();
    timedIds.set(f.orgId, p);
  }
  return p;
};

/** A fresh enrollment of the patient caller, today a plan day, in a plan of one duration-based item. */
async function timedEnrollment(f: Fixture): Promise<string> {
  await f.t.db.query(
    `update gdpr_restrictions r set lifted_at = now(), lifted_by_principal_id = p.user_id
     from patients p where p.id = $1 and r.user_id = p.user_id and r.lifted_at is null`,
    [f.patientRecordId],
  );
  const body = {
    name: `Timed ${hex()}`,
    phases: [{ name: 'P', days: [{ items: [{ exercise_id: await timed(f), duration_seconds: 30 }] }] }],
  };
  const plan = await ok(await f.t.call('POST', '/v1/treatment-plans', { token: f.tokens.superadmin, org: f.orgId, body }));
  await ok(await f.t.call('POST', `/v1/treatment-plans/${plan.id}/publish`, { token: f.tokens.superadmin, org: f.orgId }));
  const e = await ok(
    await f.t.call('POST', `/v1/treatment-plans/${plan.id}/enrollments`, {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { patient_id: f.patientRecordId, time_zone: 'UTC' },
    }),
  );
  return e.id;
}

/** A plan session the patient caller started (and, when asked, skipped). */
async function patientSession(f: Fixture, skipped = false): Promise<string> {
  const e = await timedEnrollment(f);
  const path = skipped ? `/v1/treatment-plans/enrollments/${e}/skip` : `/v1/treatment-plans/enrollments/${e}/sessions`;
  const body = skipped ? { item_index: 0, reason: 'matrix' } : { item_index: 0 };
  const s = await ok(await f.t.call('POST', path, { token: f.tokens.patient, org: f.orgId, body }));
  return skipped ? s.id : s.session.id;
}

const patientOnly = (status: number) => row({ patient: status });

/** Telerehab enabled at the organization under test, its intended-use statement accepted. */
async function telerehabOn(f: Fixture): Promise<void> {
  await ok(
    await f.t.call('PUT', '/v1/treatment-plans/settings', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { enabled: true, accept_intended_use: true },
    }),
  );
}

/** Someone other than the caller writes the draft to approve. */
const authorFor = (f: Fixture, caller: Caller) => (caller === 'specialist' ? f.tokens.admin : f.tokens.specialist);

// prettier-ignore
export const entries: Fragment = {
  getTelerehabSettings: {
    row: row({ admin: 200, specialist: 200, customer_support: 200, patient: 200, superadmin: 200 }),
    request: { method: 'GET', path: '/v1/treatment-plans/settings', prepare: (f) => as(f) },
  },
  updateTelerehabSettings: {
    row: row({ admin: 200, superadmin: 200 }),
    request: { method: 'PUT', path: '/v1/treatment-plans/settings', prepare: (f) => as(f, { body: { require_plan_approval: false } }) },
  },
  createTreatmentPlan: {
    row: viewers(201),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans',
      prepare: async (f) =>
        as(f, {
          body: {
            name: 'Matrix',
            phases: [{ name: 'P', days: [{ items: [{ exercise_id: await squat(f), sets: [{ side: 'left', reps: 5 }] }] }] }],
          },
        }),
    },
  },
  listTreatmentPlans: { row: viewers(200), request: { method: 'GET', path: '/v1/treatment-plans', prepare: (f) => as(f) } },
  getTreatmentPlan: {
    row: viewers(200),
    request: { method: 'GET', path: '/v1/treatment-plans/{id}', prepare: async (f) => as(f, { params: { id: await freshPlan(f) } }) },
  },
  updateTreatmentPlan: {
    row: viewers(200),
    request: {
      method: 'PATCH',
      path: '/v1/treatment-plans/{id}',
      prepare: async (f) => as(f, { params: { id: await freshPlan(f) }, body: { name: `Renamed ${hex()}` } }),
    },
  },
  deleteTreatmentPlan: {
    row: row({ admin: 204, superadmin: 204 }),
    request: { method: 'DELETE', path: '/v1/treatment-plans/{id}', prepare: async (f) => as(f, { params: { id: await freshPlan(f) } }) },
  },
  approveTreatmentPlan: {
    row: viewers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/approve',
      prepare: async (f, caller) => as(f, { params: { id: await freshPlan(f, { token: authorFor(f, caller) }) } }),
    },
  },
  duplicateTreatmentPlan: {
    row: viewers(201),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/duplicate',
      prepare: async (f) => as(f, { params: { id: await freshPlan(f) }, body: {} }),
    },
  },
  cloneTreatmentPlan: {
    row: viewers(201),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/clone',
      prepare: async (f) => as(f, { params: { id: await publishedPlan(f) }, body: { patient_id: f.patientRecordId } }),
    },
  },
  promoteTreatmentPlan: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/promote',
      prepare: async (f) => as(f, { params: { id: await publishedPlan(f, { patientId: f.patientRecordId }) }, body: {} }),
    },
  },
  publishTreatmentPlan: {
    row: viewers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/publish',
      prepare: async (f) => as(f, { params: { id: await freshPlan(f) } }),
    },
  },
  rollbackTreatmentPlan: {
    row: viewers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/rollback',
      prepare: async (f) => as(f, { params: { id: await publishedPlan(f) }, body: { version: 1 } }),
    },
  },
  listTreatmentPlanVersions: {
    row: viewers(200),
    request: {
      method: 'GET',
      path: '/v1/treatment-plans/{id}/versions',
      prepare: async (f) => as(f, { params: { id: await publishedPlan(f) } }),
    },
  },
  getTreatmentPlanVersion: {
    row: viewers(200),
    request: {
      method: 'GET',
      path: '/v1/treatment-plans/{id}/versions/{version}',
      prepare: async (f) => as(f, { params: { id: await publishedPlan(f), version: '1' } }),
    },
  },
  enrollInTreatmentPlan: {
    row: viewers(201),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/{id}/enrollments',
      prepare: async (f) => as(f, { params: { id: await publishedPlan(f) }, body: { patient_id: f.patientRecordId, time_zone: 'UTC' } }),
    },
  },
  listEnrollments: {
    row: readers(200),
    request: { method: 'GET', path: '/v1/treatment-plans/enrollments', prepare: (f) => as(f) },
  },
  getEnrollment: {
    row: readers(200),
    request: {
      method: 'GET',
      path: '/v1/treatment-plans/enrollments/{id}',
      prepare: async (f) => as(f, { params: { id: await enrollment(f) } }),
    },
  },
  pauseEnrollment: {
    row: readers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/enrollments/{id}/pause',
      prepare: async (f) => as(f, { params: { id: await enrollment(f) }, body: { reason: 'matrix' } }),
    },
  },
  resumeEnrollment: {
    row: readers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/enrollments/{id}/resume',
      prepare: async (f) => as(f, { params: { id: await enrollment(f, true) }, body: {} }),
    },
  },
  cancelEnrollment: {
    row: viewers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/enrollments/{id}/cancel',
      prepare: async (f) => as(f, { params: { id: await enrollment(f) }, body: { reason: 'matrix' } }),
    },
  },
  migrateEnrollment: {
    row: viewers(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/enrollments/{id}/migrate',
      prepare: async (f) => as(f, { params: { id: await enrollment(f) }, body: { version: 1 } }),
    },
  },
  createOrgConsentPurpose: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/organizations/{id}/consent-purposes',
      prepare: () => ({
        body: { code: `treatment_specific_matrix_${hex()}`, name: 'Matrix purpose', description: 'A purpose of the matrix.' },
      }),
    },
  },
  getTodayPlan: {
    row: readers(200),
    request: { method: 'GET', path: '/v1/treatment-plans/today', prepare: (f) => as(f, { query: `patient_id=${f.patientRecordId}` }) },
  },
  startPlanSession: {
    row: patientOnly(201),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/enrollments/{id}/sessions',
      prepare: async (f) => as(f, { params: { id: await timedEnrollment(f) }, body: { item_index: 0 } }),
    },
  },
  skipPlanItem: {
    row: patientOnly(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/enrollments/{id}/skip',
      prepare: async (f) => as(f, { params: { id: await timedEnrollment(f) }, body: { item_index: 0, reason: 'matrix' } }),
    },
  },
  completePlanSession: {
    row: patientOnly(200),
    request: {
      method: 'POST',
      path: '/v1/treatment-plans/sessions/{id}/complete',
      prepare: async (f) => as(f, { params: { id: await patientSession(f) }, body: {} }),
    },
  },
  listPlanSessions: {
    row: readers(200),
    request: { method: 'GET', path: '/v1/treatment-plans/sessions', prepare: (f) => as(f) },
  },
  getPlanSession: {
    row: readers(200),
    request: {
      method: 'GET',
      path: '/v1/treatment-plans/sessions/{id}',
      prepare: async (f) => as(f, { params: { id: await patientSession(f, true) } }),
    },
  },
  getEnrollmentProgress: {
    row: readers(200),
    request: {
      method: 'GET',
      path: '/v1/treatment-plans/enrollments/{id}/progress',
      prepare: async (f) => {
        await telerehabOn(f);
        return as(f, { params: { id: await timedEnrollment(f) } });
      },
    },
  },
  getTelerehabDashboard: {
    row: viewers(200),
    request: {
      method: 'GET',
      path: '/v1/treatment-plans/analytics',
      prepare: async (f) => {
        await telerehabOn(f);
        return as(f);
      },
    },
  },
};
