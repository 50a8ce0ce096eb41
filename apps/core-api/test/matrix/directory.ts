import { randomBytes } from 'node:crypto';
import { uniqueEmail } from '../helpers.ts';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * The directory (spec 4.5 Specialties; Specialists' availability). Every request names the organization
 * in X-Organization-ID. Specialties are read by anyone with access to the organization (its staff and
 * patients) and written with services.manage (migration 0060: admin). A specialist's availability is
 * read like the specialist (specialists.view for the three staff roles, and the organization's patients)
 * and replaced with specialists.update_org (admin), or update_self on one's OWN profile: the cells use
 * another specialist's profile, so the specialist caller is 403.
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
const orgRead = { admin: 200, specialist: 200, customer_support: 200, patient: 200, superadmin: 200 };

const freshSpecialty = async (f: Fixture) =>
  (
    await f.t.call('POST', '/v1/specialties', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { code: `m-${hex()}`, name: `Matrix ${hex()}` },
    })
  ).json().data.id as string;
const shared = new WeakMap<Fixture, { specialty: Promise<string>; specialist: Promise<string> }>();
function sharedOf(f: Fixture) {
  let s = shared.get(f);
  if (!s) {
    const specialist = (async () => {
      const user = (
        await f.setup('POST', `/v1/organizations/${f.orgId}/members`, { email: uniqueEmail('matrix-dir'), role_code: 'specialist' })
      ).user_id as string;
      return (
        await f.t.call('POST', '/v1/specialists', {
          token: f.tokens.superadmin,
          org: f.orgId,
          body: { user_id: user, display_name: 'Dr M' },
        })
      ).json().data.id as string;
    })();
    s = { specialty: freshSpecialty(f), specialist };
    shared.set(f, s);
  }
  return s;
}

export const entries: Fragment = {
  listSpecialties: { row: row(orgRead), request: { method: 'GET', path: '/v1/specialties', prepare: (f) => as(f) } },
  createSpecialty: {
    row: row({ admin: 201, superadmin: 201 }),
    request: { method: 'POST', path: '/v1/specialties', prepare: (f) => as(f, { body: { code: `n-${hex()}`, name: `New ${hex()}` } }) },
  },
  getSpecialty: {
    row: row(orgRead),
    request: { method: 'GET', path: '/v1/specialties/{id}', prepare: async (f) => as(f, { params: { id: await sharedOf(f).specialty } }) },
  },
  updateSpecialty: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PATCH',
      path: '/v1/specialties/{id}',
      prepare: async (f) => as(f, { params: { id: await sharedOf(f).specialty }, body: { name: `Renamed ${hex()}` } }),
    },
  },
  deleteSpecialty: {
    row: row({ admin: 204, superadmin: 204 }),
    request: { method: 'DELETE', path: '/v1/specialties/{id}', prepare: async (f) => as(f, { params: { id: await freshSpecialty(f) } }) },
  },
  getSpecialistAvailability: {
    row: row(orgRead),
    request: {
      method: 'GET',
      path: '/v1/specialists/{id}/availability',
      prepare: async (f) => as(f, { params: { id: await sharedOf(f).specialist } }),
    },
  },
  putSpecialistAvailability: {
    row: row({ admin: 200, superadmin: 200 }),
    request: {
      method: 'PUT',
      path: '/v1/specialists/{id}/availability',
      prepare: async (f) => as(f, { params: { id: await sharedOf(f).specialist }, body: { rules: [] } }),
    },
  },
};
