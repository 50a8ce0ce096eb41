import type { Fragment } from './types.ts';

/* POST /v1/break-glass/sessions (spec 4.7): superadmin only. */
export const entries: Fragment = {
  openBreakGlassSession: {
    row: {
      admin: 403,
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
      path: '/v1/break-glass/sessions',
      prepare: (f) => ({
        body: {
          organization_id: f.orgId,
          scope: 'patient_list',
          reason_category: 'support_ticket',
          reason_text: 'Permission matrix check',
        },
      }),
    },
  },
  endBreakGlassSession: {
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
      path: '/v1/break-glass/sessions/{id}/end',
      // A short session of the superadmin caller's own: its longer sessions (the other cells') stay open. The
      // other callers are refused before the id is looked at, and opening one per caller would spend the
      // superadmin's break-glass rate limit that the console cells need.
      prepare: async (f, caller) => {
        if (caller !== 'superadmin') return { params: { id: '01900000-0000-7000-8000-000000000000' } };
        const s = await f.setup(
          'POST',
          '/v1/break-glass/sessions',
          {
            organization_id: f.orgId,
            scope: 'patient_list',
            reason_category: 'support_ticket',
            reason_text: 'Permission matrix check of ending',
            expires_in_minutes: 1,
          },
          f.tokens.superadmin,
        );
        return { params: { id: s.id } };
      },
    },
  },
};
