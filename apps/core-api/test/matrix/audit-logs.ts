import type { Fragment, Row } from './types.ts';

/*
 * Audit-log API (spec 4.5; 2.7 audit_log.view_org; export also needs export.csv, granted to the admin
 * template by migration 0030). The organization is the one in scope (X-Organization-ID). Only the admin
 * holds the codes. A superadmin naming an organization gets 403 break_glass_required: tenant trails are
 * read through the console under a break-glass session (spec 4.7).
 */
const adminOnly: Row = {
  admin: 200,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 403,
  anonymous: 401,
};
const scoped = (f: { orgId: string }) => ({ headers: { 'x-organization-id': f.orgId } });

export const entries: Fragment = {
  listAuditLogs: { row: adminOnly, request: { method: 'GET', path: '/v1/audit-logs', prepare: scoped } },
  exportAuditLogs: { row: adminOnly, request: { method: 'GET', path: '/v1/audit-logs/export', prepare: scoped } },
  getAuditLog: {
    row: adminOnly,
    request: {
      method: 'GET',
      path: '/v1/audit-logs/{id}',
      prepare: async (f) => {
        const { rows } = await f.t.db.query<{ id: string }>(
          'select id from audit_logs where organization_id = $1 order by chain_seq limit 1',
          [f.orgId],
        );
        return { params: { id: rows[0]!.id }, ...scoped(f) };
      },
    },
  },
  listAccessLogs: { row: adminOnly, request: { method: 'GET', path: '/v1/audit-logs/access', prepare: scoped } },
  // Every signed-in person reads who read its own patient records (none for a caller with no record).
  listMyAccessLog: {
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
    request: { method: 'GET', path: '/v1/me/access-log' },
  },
};
