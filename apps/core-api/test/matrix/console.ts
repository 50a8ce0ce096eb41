import type { Caller, Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Console (spec 4.7): superadmins only, each route behind an open break-glass session of the caller for
 * the path's organization and the route's scope. The superadmin cell opens that session first (without
 * one the answer is 403 break_glass_required, tested in break-glass.test.ts); everyone else is 403.
 */
const row: Row = {
  admin: 403,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 200,
  anonymous: 401,
};

const withSession =
  (scope: string, extra: (f: Fixture) => Promise<Prepared> | Prepared = () => ({})) =>
  async (f: Fixture, caller: Caller): Promise<Prepared> => {
    if (caller === 'superadmin') {
      await f.setup(
        'POST',
        '/v1/break-glass/sessions',
        { organization_id: f.orgId, scope, reason_category: 'support_ticket', reason_text: 'Permission matrix check' },
        f.tokens.superadmin,
      );
    }
    return { params: { org_id: f.orgId }, ...(await extra(f)) };
  };

export const entries: Fragment = {
  consoleListPatients: {
    row,
    request: { method: 'GET', path: '/v1/console/organizations/{org_id}/patients', prepare: withSession('patient_list') },
  },
  consoleGetPatient: {
    row,
    request: {
      method: 'GET',
      path: '/v1/console/organizations/{org_id}/patients/{patient_id}',
      prepare: withSession('patient_detail', (f) => ({ params: { org_id: f.orgId, patient_id: f.patientRecordId } })),
    },
  },
  consoleListAuditLogs: {
    row,
    request: { method: 'GET', path: '/v1/console/organizations/{org_id}/audit-logs', prepare: withSession('audit_full') },
  },
  consoleListMembers: {
    row,
    request: { method: 'GET', path: '/v1/console/organizations/{org_id}/members', prepare: withSession('org_management') },
  },
  consoleLookupUser: {
    row,
    request: {
      method: 'GET',
      path: '/v1/console/organizations/{org_id}/lookup',
      prepare: withSession('cross_org_lookup', async (f) => {
        const { rows } = await f.t.db.query<{ email: string }>(
          'select u.email from patients p join users u on u.id = p.user_id where p.id = $1',
          [f.patientRecordId],
        );
        return { query: `email=${encodeURIComponent(rows[0]!.email)}` };
      }),
    },
  },
};
