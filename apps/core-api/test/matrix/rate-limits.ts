import { type Fragment, superadminOnly } from './types.ts';

/* The operator's per-organization rate limits (spec 8): superadmin only, a clinic admin included. */
const su = superadminOnly;
const PATH = '/v1/admin/organizations/{id}/rate-limits';
const ofFixtureOrg = { prepare: async (f: { orgId: string }) => ({ params: { id: f.orgId } }) };

export const entries: Fragment = {
  getOrganizationRateLimit: { row: su(200), request: { method: 'GET', path: PATH, ...ofFixtureOrg } },
  setOrganizationRateLimit: {
    row: su(200),
    request: { method: 'PUT', path: PATH, prepare: async (f) => ({ params: { id: f.orgId }, body: { route_limit: 100000 } }) },
  },
  clearOrganizationRateLimit: { row: su(204), request: { method: 'DELETE', path: PATH, ...ofFixtureOrg } },
};
