import { randomBytes } from 'node:crypto';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Segments (spec 4.5 Segments, 2.7 segments.*). Default grants of migration 0090: admin every
 * segments code; customer_support segments.view_org and segments.view_own_membership; specialist
 * segments.view_own_membership.
 * - The field catalog, the list and a segment are read with segments.view_org or manage (admin,
 *   customer_support, superadmin); create, change, delete and evaluate need segments.manage (admin,
 *   superadmin). The organization under test has a handful of patients, far under SEGMENTS_SYNC_LIMIT,
 *   so an evaluation finishes in the request: 200.
 * - Members: every member with view_org or manage; one's own membership with view_own_membership
 *   (specialist) or as a patient (row ownership): 200 (an empty page when not a member). A non-member and
 *   another organization's admin hold none of these: 403.
 * Without a token 401.
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
const readers = (status: number) => row({ admin: status, customer_support: status, superadmin: status });
const managers = (status: number) => row({ admin: status, superadmin: status });
const CRITERIA = { field: 'patient.last_name', op: 'is_set' };

async function freshSegment(f: Fixture): Promise<string> {
  const { rows } = await f.t.db.query<{ id: string }>(
    'insert into segments (organization_id, name, criteria) values ($1, $2, $3::jsonb) returning id',
    [f.orgId, `Matrix ${hex()}`, JSON.stringify(CRITERIA)],
  );
  return rows[0]!.id;
}
let sharedSegment: string | null = null;
const segmentId = async (f: Fixture) => (sharedSegment ??= await freshSegment(f));

export const entries: Fragment = {
  listSegmentFields: { row: readers(200), request: { method: 'GET', path: '/v1/segment-fields', prepare: (f) => as(f) } },
  listSegments: { row: readers(200), request: { method: 'GET', path: '/v1/segments', prepare: (f) => as(f) } },
  createSegment: {
    row: managers(201),
    request: { method: 'POST', path: '/v1/segments', prepare: (f) => as(f, { body: { name: `New ${hex()}`, criteria: CRITERIA } }) },
  },
  getSegment: {
    row: readers(200),
    request: { method: 'GET', path: '/v1/segments/{id}', prepare: async (f) => as(f, { params: { id: await segmentId(f) } }) },
  },
  updateSegment: {
    row: managers(200),
    request: {
      method: 'PATCH',
      path: '/v1/segments/{id}',
      prepare: async (f) => as(f, { params: { id: await segmentId(f) }, body: { name: `Renamed ${hex()}` } }),
    },
  },
  deleteSegment: {
    row: managers(204),
    request: { method: 'DELETE', path: '/v1/segments/{id}', prepare: async (f) => as(f, { params: { id: await freshSegment(f) } }) },
  },
  evaluateSegment: {
    row: managers(200),
    request: { method: 'POST', path: '/v1/segments/{id}/evaluate', prepare: async (f) => as(f, { params: { id: await segmentId(f) } }) },
  },
  listSegmentMembers: {
    row: row({ admin: 200, specialist: 200, customer_support: 200, patient: 200, superadmin: 200 }),
    request: { method: 'GET', path: '/v1/segments/{id}/members', prepare: async (f) => as(f, { params: { id: await segmentId(f) } }) },
  },
};
