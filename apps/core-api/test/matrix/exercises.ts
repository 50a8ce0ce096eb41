import { randomBytes } from 'node:crypto';
import type { Fixture, Fragment } from './types.ts';

/*
 * Exercise library (spec 2.12, 3.5). Migration 0050 grants exercises.manage_org to the admin
 * template: createExercise (in the organization named by X-Organization-ID) and setExerciseStatus are
 * 2xx for admin and superadmin, 403 for the rest. Reading is for any signed-in caller: row-level security
 * decides what they see (the platform library's published exercises are everyone's), so 200 for all.
 * updateExercise, deleteExercise and bumpExerciseAssetVersion of a fresh exercise of the organization: like
 * setExerciseStatus (exercises.manage_org: admin and superadmin; the rest 403 at the gate). propagateExercise
 * (a platform exercise copied into organizations) is for superadmins only: 403 for every other caller.
 */
const hex = () => randomBytes(5).toString('hex');
const org = (f: Fixture) => ({ 'x-organization-id': f.orgId });
const squat = async (f: Fixture) => (await f.t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
const freshExercise = async (f: Fixture) => {
  const res = await f.t.call('POST', '/v1/exercises', {
    token: f.tokens.superadmin,
    org: f.orgId,
    body: { slug: `matrix-${hex()}`, name: 'Matrix exercise', kind: 'reps_based' },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().data.id as string;
};

/** exercises.manage_org at the organization in scope: admin and superadmin. */
const manageRow = (status: number) => ({
  admin: status,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: status,
  anonymous: 401,
});

// prettier-ignore
export const entries: Fragment = {
  createExercise: {
    row: {
      admin: 201,
      specialist: 403,
      customer_support: 403,
      patient: 403,
      non_member: 403,
      other_org_admin: 403,
      superadmin: 201,
      anonymous: 401,
    },
    request: {
      method: 'POST',
      path: '/v1/exercises',
      prepare: (f) => ({ headers: org(f), body: { slug: `matrix-${hex()}`, name: 'Matrix exercise', kind: 'reps_based' } }),
    },
  },
  listExercises: {
    row: {
      admin: 200,
      specialist: 200,
      customer_support: 200,
      patient: 200,
      non_member: 200,
      other_org_admin: 200,
      superadmin: 200,
      anonymous: 401,
    },
    request: { method: 'GET', path: '/v1/exercises', prepare: (f) => ({ headers: org(f) }) },
  },
  getExercise: {
    row: {
      admin: 200,
      specialist: 200,
      customer_support: 200,
      patient: 200,
      non_member: 200,
      other_org_admin: 200,
      superadmin: 200,
      anonymous: 401,
    },
    request: { method: 'GET', path: '/v1/exercises/{id}', prepare: async (f) => ({ params: { id: await squat(f) }, headers: org(f) }) },
  },
  setExerciseStatus: {
    row: {
      admin: 200,
      specialist: 403,
      customer_support: 403,
      patient: 403,
      non_member: 403,
      other_org_admin: 403,
      superadmin: 200,
      anonymous: 401,
    },
    request: {
      method: 'PUT',
      path: '/v1/exercises/{id}/status',
      prepare: async (f) => ({ params: { id: await freshExercise(f) }, headers: org(f), body: { status: 'published' } }),
    },
  },
  updateExercise: {
    row: manageRow(200),
    request: {
      method: 'PATCH',
      path: '/v1/exercises/{id}',
      prepare: async (f) => ({ params: { id: await freshExercise(f) }, headers: org(f), body: { name: 'Renamed' } }),
    },
  },
  deleteExercise: {
    row: manageRow(204),
    request: {
      method: 'DELETE',
      path: '/v1/exercises/{id}',
      prepare: async (f) => ({ params: { id: await freshExercise(f) }, headers: org(f) }),
    },
  },
  bumpExerciseAssetVersion: {
    row: manageRow(200),
    request: {
      method: 'POST',
      path: '/v1/exercises/{id}/asset-version',
      prepare: async (f) => ({ params: { id: await freshExercise(f) }, headers: org(f) }),
    },
  },
  propagateExercise: {
    row: {
      admin: 403,
      specialist: 403,
      customer_support: 403,
      patient: 403,
      non_member: 403,
      other_org_admin: 403,
      superadmin: 200,
      anonymous: 401,
    },
    request: {
      method: 'POST',
      path: '/v1/exercises/{id}/propagate',
      prepare: async (f) => ({ params: { id: await squat(f) }, body: { organization_ids: [f.orgId] } }),
    },
  },
};
