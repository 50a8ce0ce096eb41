import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Pickers of the clinical resources (spec 4.1), for the organization in scope. Patients: staff who read
 * patients; specialists: staff with specialists.view and the organization's patients; specialties: anyone
 * with access there; services and plans: staff reading the catalog and patients (public rows); products:
 * staff reading the catalog. A non-member or another organization's admin is refused (403); a superadmin
 * passes every check.
 */
const as = (f: Fixture): Prepared => ({ headers: { 'x-organization-id': f.orgId } });
const row = (r: Partial<Row>): Row => ({
  admin: 200,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 200,
  anonymous: 401,
  ...r,
});
const staff = { specialist: 200, customer_support: 200 };
const entry = (path: string, r: Row) => ({ row: r, request: { method: 'GET', path, prepare: as } });

export const entries: Fragment = {
  pickPatients: entry('/v1/patients/picker', row(staff)),
  pickSpecialists: entry('/v1/specialists/picker', row({ ...staff, patient: 200 })),
  pickSpecialties: entry('/v1/specialties/picker', row({ ...staff, patient: 200 })),
  pickServices: entry('/v1/services/picker', row({ ...staff, patient: 200 })),
  pickServicePlans: entry('/v1/service-plans/picker', row({ ...staff, patient: 200 })),
  pickProducts: entry('/v1/products/picker', row(staff)),
};
