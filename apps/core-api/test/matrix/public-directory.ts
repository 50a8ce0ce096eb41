import type { Fragment, Row } from './types.ts';

/*
 * The public booking directory (spec 5.2-5.3): no token, so every caller (anonymous included) gets 200
 * for the organization it names; a token changes nothing.
 */
const everyone: Row = {
  admin: 200,
  specialist: 200,
  customer_support: 200,
  patient: 200,
  non_member: 200,
  other_org_admin: 200,
  superadmin: 200,
  anonymous: 200,
};

export const entries: Fragment = {
  listPublicSpecialists: {
    row: everyone,
    request: { method: 'GET', path: '/v1/public/specialists', prepare: (f) => ({ query: `organization=${f.orgSlug}` }) },
  },
  getPublicSpecialist: {
    row: everyone,
    request: {
      method: 'GET',
      path: '/v1/public/specialists/{id}',
      prepare: async (f) => {
        const member = await f.setup('POST', `/v1/organizations/${f.orgId}/members`, {
          email: `public-${Math.random().toString(36).slice(2)}@example.com`,
          role_code: 'specialist',
        });
        const s = (
          await f.t.call('POST', '/v1/specialists', {
            token: f.tokens.superadmin,
            org: f.orgId,
            body: { user_id: member.user_id, display_name: 'Dr Public', bookable_online: true },
          })
        ).json().data;
        return { params: { id: s.id }, query: `organization=${f.orgId}` };
      },
    },
  },
  listPublicServices: {
    row: everyone,
    request: { method: 'GET', path: '/v1/public/services', prepare: (f) => ({ query: `organization=${f.orgId}` }) },
  },
  listPublicLocations: {
    row: everyone,
    request: { method: 'GET', path: '/v1/public/locations', prepare: (f) => ({ query: `organization=${f.orgSlug}` }) },
  },
};
