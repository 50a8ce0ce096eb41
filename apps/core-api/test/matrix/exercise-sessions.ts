import type { Fixture, Fragment } from './types.ts';

/*
 * Exercise sessions (spec 4.11). startExerciseSession: the patient of the organization in scope,
 * for itself (ownership, spec 5.8), with an active biometric consent: the patient cell grants it first;
 * everyone else, superadmins included, is not a patient there: 403. Reading (getExerciseSession,
 * getExerciseSessionReplay): the patient who owns the session, or telemetry.view_org, which migration
 * 0050 grants to the admin and specialist templates (superadmins pass every permission check); the
 * rest 403. An earlier cell (restrictProcessing) restricted the patient; the prepare step lifts it. The session has no replay yet (nothing was ingested), so the replay cells of callers who
 * pass the gate are 404 not_found. The JWKS is public (spec 5.2).
 */
const org = (f: Fixture) => ({ 'x-organization-id': f.orgId });
const versions = new Map<string, Promise<number>>();

async function biometricGranted(f: Fixture): Promise<void> {
  // restrictProcessing (an earlier cell) restricted this patient, which wins over any consent: lift it,
  // as the clinic would, so the cell tests the gate of this route alone.
  await f.t.db.query(
    `update gdpr_restrictions r set lifted_at = now(), lifted_by_principal_id = p.user_id
     from patients p where p.id = $1 and r.user_id = p.user_id and r.lifted_at is null`,
    [f.patientRecordId],
  );
  let v = versions.get(f.orgId);
  if (!v) {
    v = f
      .setup('POST', '/v1/admin/consent-purposes/biometric/versions', { body_translations: { en: 'Biometric telemetry (matrix)' } })
      .then((d) => d.version as number);
    versions.set(f.orgId, v);
  }
  const version = await v;
  await f.setup(
    'POST',
    '/v1/me/consents',
    { grants: [{ organization_id: f.orgId, purpose_code: 'biometric', purpose_version: version, source: 'self_toggle' }] },
    f.tokens.patient,
  );
}
const squat = async (f: Fixture) => (await f.t.db.query<{ id: string }>(`select id from exercises where slug = 'squat'`)).rows[0]!.id;
async function patientSession(f: Fixture): Promise<string> {
  await biometricGranted(f);
  const res = await f.t.call('POST', '/v1/exercise-sessions', {
    token: f.tokens.patient,
    org: f.orgId,
    body: { exercise_id: await squat(f) },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().data.id as string;
}

// prettier-ignore
export const entries: Fragment = {
  startExerciseSession: {
    row: {
      admin: 403,
      specialist: 403,
      customer_support: 403,
      patient: 201,
      non_member: 403,
      other_org_admin: 403,
      superadmin: 403,
      anonymous: 401,
    },
    request: {
      method: 'POST',
      path: '/v1/exercise-sessions',
      prepare: async (f, caller) => {
        if (caller === 'patient') await biometricGranted(f);
        return { headers: org(f), body: { exercise_id: await squat(f) } };
      },
    },
  },
  getExerciseSession: {
    row: {
      admin: 200,
      specialist: 200,
      customer_support: 403,
      patient: 200,
      non_member: 403,
      other_org_admin: 403,
      superadmin: 200,
      anonymous: 401,
    },
    request: {
      method: 'GET',
      path: '/v1/exercise-sessions/{id}',
      prepare: async (f) => ({ params: { id: await patientSession(f) }, headers: org(f) }),
    },
  },
  getExerciseSessionReplay: {
    row: {
      admin: 404,
      specialist: 404,
      customer_support: 403,
      patient: 404,
      non_member: 403,
      other_org_admin: 403,
      superadmin: 404,
      anonymous: 401,
    },
    request: {
      method: 'GET',
      path: '/v1/exercise-sessions/{id}/replay',
      prepare: async (f) => ({ params: { id: await patientSession(f) }, headers: org(f) }),
    },
  },
  getTelemetryJwks: {
    row: {
      admin: 200,
      specialist: 200,
      customer_support: 200,
      patient: 200,
      non_member: 200,
      other_org_admin: 200,
      superadmin: 200,
      anonymous: 200,
    },
    request: { method: 'GET', path: '/v1/public/telemetry/jwks.json' },
  },
};
