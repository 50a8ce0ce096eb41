import { type Fragment, superadminOnly } from './types.ts';

/* The console's operator views of the platform (system status, audit chain verification): superadmin only. */
export const entries: Fragment = {
  getSystemStatus: { row: superadminOnly(200), request: { method: 'GET', path: '/v1/admin/system-status' } },
  verifyAuditChain: {
    row: superadminOnly(200),
    request: { method: 'POST', path: '/v1/admin/audit-chains/verify', prepare: (f) => ({ body: { organization_id: f.orgId } }) },
  },
};
