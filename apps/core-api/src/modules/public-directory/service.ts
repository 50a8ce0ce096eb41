import type { Database, Queryable } from '@clinic/db';
import { errors, listEnvelope, parsePagination, parseSort } from '@clinic/http-kit';
import { canonicalLanguage } from '../../platform/locale.ts';
import { resolveBookingOrganization } from '../organizations/service.ts';
import * as q from './queries.ts';
import { PUBLIC_LOCATION_SORT, PUBLIC_SERVICE_SORT, PUBLIC_SPECIALIST_SORT } from './schemas.ts';

/** Where a public request comes from: its query and the host it was sent to. */
export interface PublicRequest {
  query: Record<string, unknown> & { organization?: string | undefined };
  host: string;
}

/**
 * Runs `read` for the organization the request names, on app_bypass: the public queries are narrow
 * (one organization by equality, allow-listed columns), not open row policies (spec 5.3).
 */
async function withOrganization<T>(db: Database, r: PublicRequest, read: (tx: Queryable, orgId: string) => Promise<T>): Promise<T> {
  const org = await resolveBookingOrganization(db, { organization: r.query.organization, host: r.host });
  return db.withScope({ role: 'app_bypass', principalId: null, orgId: null, permissions: [] }, (tx) => read(tx, org.id));
}

const text = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

export function listSpecialists(db: Database, r: PublicRequest) {
  const page = parsePagination(r.query);
  const sort = parseSort(r.query.sort, PUBLIC_SPECIALIST_SORT, '-created_at', 's.id');
  let language: string | undefined;
  if (text(r.query.language)) {
    language = canonicalLanguage(r.query.language as string) ?? undefined;
    if (!language) throw errors.queryValidation({ language: 'a BCP 47 language tag such as ro or en-GB' });
  }
  const filter = {
    specialtyId: text(r.query.specialty_id),
    locationId: text(r.query.location_id),
    serviceId: text(r.query.service_id),
    language,
  };
  return withOrganization(db, r, async (tx, orgId) => {
    const { rows, total } = await q.listPublicSpecialists(tx, orgId, filter, sort, page);
    return listEnvelope(rows, page, total);
  });
}

export function getSpecialist(db: Database, r: PublicRequest, id: string) {
  return withOrganization(db, r, async (tx, orgId) => {
    const row = await q.findPublicSpecialist(tx, orgId, id.toLowerCase());
    // Not bookable online, deleted, or of another organization: all the same 404.
    if (!row) throw errors.notFound('No specialist with this id is bookable online at this organization.');
    return row;
  });
}

export function listServices(db: Database, r: PublicRequest) {
  const page = parsePagination(r.query);
  const sort = parseSort(r.query.sort, PUBLIC_SERVICE_SORT, '-created_at', 'v.id');
  const filter = { locationId: text(r.query.location_id), specialistId: text(r.query.specialist_id) };
  return withOrganization(db, r, async (tx, orgId) => {
    const { rows, total } = await q.listPublicServices(tx, orgId, filter, sort, page);
    return listEnvelope(rows, page, total);
  });
}

export function listLocations(db: Database, r: PublicRequest) {
  const page = parsePagination(r.query);
  const sort = parseSort(r.query.sort, PUBLIC_LOCATION_SORT);
  return withOrganization(db, r, async (tx, orgId) => {
    const { rows, total } = await q.listPublicLocations(tx, orgId, sort, page);
    return listEnvelope(rows, page, total);
  });
}
