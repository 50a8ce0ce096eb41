import { randomBytes } from 'node:crypto';
import { uniqueEmail } from '../helpers.ts';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Patients and specialists (spec 4.5, 5.8). Every request names the organization in
 * X-Organization-ID. Default grants (migration 0024): patients.view_org and patients.update_org for
 * admin, specialist and customer_support; patients.onboard for admin and customer_support;
 * patients.delete for admin. The patient reads and replaces its own record by ownership (getPatient,
 * updatePatient on the patient caller's record) but does not list patients.
 * Specialists: specialists.view for the three staff roles; the organization's patients read the
 * directory too (contact details stripped). specialists.create, update_org and delete are admin's;
 * update_self lets a specialist edit its OWN profile only, so updating another profile is 403 for
 * the specialist caller.
 */

const hex = () => randomBytes(5).toString('hex');
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

const freshMember = async (f: Fixture) =>
  (await f.setup('POST', `/v1/organizations/${f.orgId}/members`, { email: uniqueEmail('matrix-spec'), role_code: 'specialist' }))
    .user_id as string;
const freshSpecialist = async (f: Fixture) =>
  (
    await f.t.call('POST', '/v1/specialists', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { user_id: await freshMember(f), display_name: `Dr ${hex()}` },
    })
  ).json().data.id as string;
const shared = new WeakMap<Fixture, Promise<string>>();
const sharedSpecialist = (f: Fixture) => {
  let p = shared.get(f);
  if (!p) {
    p = freshSpecialist(f);
    shared.set(f, p);
  }
  return p;
};

const staffRead = { admin: 200, specialist: 200, customer_support: 200, superadmin: 200 };

export const entries: Fragment = {
  listPatients: { row: row(staffRead), request: { method: 'GET', path: '/v1/patients', prepare: (f) => as(f) } },
  createPatient: {
    row: row({ admin: 201, customer_support: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/patients',
      prepare: (f) => as(f, { body: { email: uniqueEmail('matrix-new-patient'), first_name: 'New' } }),
    },
  },
  getPatient: {
    row: row({ ...staffRead, patient: 200 }),
    request: { method: 'GET', path: '/v1/patients/{id}', prepare: (f) => as(f, { params: { id: f.patientRecordId } }) },
  },
  updatePatient: {
    row: row({ ...staffRead, patient: 200 }),
    request: {
      method: 'PUT',
      path: '/v1/patients/{id}',
      prepare: (f) => as(f, { params: { id: f.patientRecordId }, body: { first_name: `Name ${hex()}` } }),
    },
  },
  getPatientProfile: {
    row: row({ ...staffRead, patient: 200 }),
    request: { method: 'GET', path: '/v1/patients/{id}/profile', prepare: (f) => as(f, { params: { id: f.patientRecordId } }) },
  },
  updatePatientProfile: {
    row: row({ ...staffRead, patient: 200 }),
    request: {
      method: 'PUT',
      path: '/v1/patients/{id}/profile',
      prepare: (f) => as(f, { params: { id: f.patientRecordId }, body: { first_name: `Name ${hex()}`, city: 'Iași' } }),
    },
  },
  deletePatient: {
    row: row({ admin: 204, superadmin: 204 }),
    request: { method: 'DELETE', path: '/v1/patients/{id}', prepare: async (f) => as(f, { params: { id: await f.freshPatientRecord() } }) },
  },

  listSpecialists: { row: row({ ...staffRead, patient: 200 }), request: { method: 'GET', path: '/v1/specialists', prepare: (f) => as(f) } },
  createSpecialist: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/specialists',
      prepare: async (f) => as(f, { body: { user_id: await freshMember(f), display_name: `Dr ${hex()}` } }),
    },
  },
  getSpecialist: {
    row: row({ ...staffRead, patient: 200 }),
    request: { method: 'GET', path: '/v1/specialists/{id}', prepare: async (f) => as(f, { params: { id: await sharedSpecialist(f) } }) },
  },
  updateSpecialist: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PUT',
      path: '/v1/specialists/{id}',
      prepare: async (f) => as(f, { params: { id: await sharedSpecialist(f) }, body: { display_name: `Dr ${hex()}` } }),
    },
  },
  // patients.impersonate: admin and customer_support (migration 0065); superadmins use break-glass.
  impersonatePatient: {
    row: row({ admin: 201, customer_support: 201 }),
    request: {
      method: 'POST',
      path: '/v1/patients/{id}/impersonate',
      prepare: (f) => as(f, { params: { id: f.patientRecordId }, body: { reason: 'Matrix: helping with the portal' } }),
    },
  },
  // Only the staff member who started the session ends it: another staff member does not even see it
  // (404), a superadmin sees it and is refused (403).
  endImpersonation: {
    row: row({ admin: 204, customer_support: 404 }),
    request: {
      method: 'DELETE',
      path: '/v1/impersonation-sessions/{id}',
      prepare: async (f) => {
        const res = await f.t.call('POST', `/v1/patients/${f.patientRecordId}/impersonate`, {
          token: f.tokens.admin,
          org: f.orgId,
          body: { reason: 'Matrix: a session to end' },
        });
        return as(f, { params: { id: res.json().data.id } });
      },
    },
  },
  // Caregivers: staff who read patients and the patient itself list them; staff with patients.update_org
  // or the patient add them (the patient is the matrix's own record); removal by the same people.
  listCaregivers: {
    row: row({ ...staffRead, patient: 200 }),
    request: { method: 'GET', path: '/v1/patients/{id}/caregivers', prepare: (f) => as(f, { params: { id: f.patientRecordId } }) },
  },
  addCaregiver: {
    row: row({ admin: 201, specialist: 201, customer_support: 201, patient: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/patients/{id}/caregivers',
      prepare: (f) => as(f, { params: { id: f.patientRecordId }, body: { email: uniqueEmail('matrix-caregiver') } }),
    },
  },
  removeCaregiver: {
    row: row({ admin: 204, specialist: 204, customer_support: 204, patient: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/patients/{id}/caregivers/{linkId}',
      prepare: async (f) => {
        const res = await f.t.call('POST', `/v1/patients/${f.patientRecordId}/caregivers`, {
          token: f.tokens.admin,
          org: f.orgId,
          body: { email: uniqueEmail('matrix-caregiver') },
        });
        return as(f, { params: { id: f.patientRecordId, linkId: res.json().data.id } });
      },
    },
  },
  listMyCaregiving: {
    row: row({ admin: 200, specialist: 200, customer_support: 200, patient: 200, non_member: 200, other_org_admin: 200, superadmin: 200 }),
    request: { method: 'GET', path: '/v1/me/caregiving' },
  },
  getSpecialistProfile: {
    row: row({ ...staffRead, patient: 200 }),
    request: {
      method: 'GET',
      path: '/v1/specialists/{id}/profile',
      prepare: async (f) => as(f, { params: { id: await sharedSpecialist(f) } }),
    },
  },
  updateSpecialistProfile: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PUT',
      path: '/v1/specialists/{id}/profile',
      prepare: async (f) => as(f, { params: { id: await sharedSpecialist(f) }, body: { display_name: `Dr ${hex()}`, gender: 'female' } }),
    },
  },
  deleteSpecialist: {
    row: row({ admin: 204, superadmin: 204 }),
    request: { method: 'DELETE', path: '/v1/specialists/{id}', prepare: async (f) => as(f, { params: { id: await freshSpecialist(f) } }) },
  },
};
