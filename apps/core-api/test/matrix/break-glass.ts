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
};
