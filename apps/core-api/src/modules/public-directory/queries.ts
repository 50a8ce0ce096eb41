import type { Queryable } from '@clinic/db';
import { SqlWhere, type Pagination, type Sort } from '@clinic/http-kit';

/*
 * What the unauthenticated booking page may read (spec 5.3): every statement names one organization by
 * equality and selects an allow-list of columns, run on app_bypass by the routes. Never contact data,
 * user ids or custom fields. Specialists appear only when live and bookable online; services only when
 * public; a specialist's services are its public ones, a service's specialists its bookable ones.
 */

export interface PublicSpecialistRow {
  id: string;
  display_name: string;
  title: string | null;
  bio: string | null;
  languages: string[];
  gender: string | null;
  qualifications: { title: string; institution: string | null; year: number | null }[];
  practising_since: number | null;
  booking_note: string | null;
  specialties: { id: string; code: string; name: string }[];
  location_ids: string[];
  service_ids: string[];
}

const SPECIALIST_COLUMNS = `s.id, s.display_name, s.title, s.bio, s.languages, s.gender, s.qualifications, s.practising_since,
  s.booking_note,
  coalesce((select json_agg(json_build_object('id', sp.id, 'code', sp.code, 'name', sp.name) order by sp.name, sp.id)
            from specialist_specialties l join specialties sp on sp.organization_id = l.organization_id and sp.id = l.specialty_id
            where l.organization_id = s.organization_id and l.specialist_id = s.id), '[]'::json) as specialties,
  array(select l.location_id from specialist_locations l where l.organization_id = s.organization_id and l.specialist_id = s.id
        order by l.location_id) as location_ids,
  array(select l.service_id from service_specialists l join services sv on sv.organization_id = l.organization_id and sv.id = l.service_id
        where l.organization_id = s.organization_id and l.specialist_id = s.id and sv.is_public order by l.service_id) as service_ids`;
const BOOKABLE = 's.organization_id = ? and s.deleted_at is null and s.bookable_online';

export interface SpecialistFilter {
  specialtyId?: string | undefined;
  locationId?: string | undefined;
  serviceId?: string | undefined;
  language?: string | undefined;
}

export async function listPublicSpecialists(tx: Queryable, orgId: string, f: SpecialistFilter, sort: Sort, page: Pagination) {
  const where = new SqlWhere().add(BOOKABLE, orgId);
  const link = (table: string, column: string, value: string | undefined, extra = '') => {
    if (value)
      where.add(
        `exists (select 1 from ${table} l${extra} where l.organization_id = s.organization_id and l.specialist_id = s.id and l.${column} = ?)`,
        value,
      );
  };
  link('specialist_specialties', 'specialty_id', f.specialtyId);
  link('specialist_locations', 'location_id', f.locationId);
  link(
    'service_specialists',
    'service_id',
    f.serviceId,
    ' join services sv on sv.organization_id = l.organization_id and sv.id = l.service_id and sv.is_public',
  );
  if (f.language) where.add('? = any(s.languages)', f.language);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from specialists s where ${where.text}`, where.params);
  const { rows } = await tx.query<PublicSpecialistRow>(
    `select ${SPECIALIST_COLUMNS} from specialists s where ${where.text}
     order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export async function findPublicSpecialist(tx: Queryable, orgId: string, id: string): Promise<PublicSpecialistRow | null> {
  const where = new SqlWhere().add(BOOKABLE, orgId).add('s.id = ?', id);
  const { rows } = await tx.query<PublicSpecialistRow>(`select ${SPECIALIST_COLUMNS} from specialists s where ${where.text}`, where.params);
  return rows[0] ?? null;
}

export interface PublicServiceRow {
  id: string;
  name: string;
  description: string | null;
  duration_minutes: number;
  price_minor: number;
  currency: string;
  mode: string;
  min_notice_minutes: number;
  max_days_ahead: number;
  cancellation_window_minutes: number;
  location_ids: string[];
  specialist_ids: string[];
}

export async function listPublicServices(
  tx: Queryable,
  orgId: string,
  f: { locationId?: string | undefined; specialistId?: string | undefined },
  sort: Sort,
  page: Pagination,
) {
  const where = new SqlWhere().add('v.organization_id = ? and v.is_public', orgId);
  if (f.locationId)
    where.add(
      'exists (select 1 from service_locations l where l.organization_id = v.organization_id and l.service_id = v.id and l.location_id = ?)',
      f.locationId,
    );
  if (f.specialistId)
    where.add(
      `exists (select 1 from service_specialists l join specialists s on s.organization_id = l.organization_id and s.id = l.specialist_id
               where l.organization_id = v.organization_id and l.service_id = v.id and l.specialist_id = ?
                 and s.deleted_at is null and s.bookable_online)`,
      f.specialistId,
    );
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from services v where ${where.text}`, where.params);
  const { rows } = await tx.query<PublicServiceRow>(
    `select v.id, v.name, v.description, v.duration_minutes, v.price_minor, v.currency, v.mode, v.min_notice_minutes, v.max_days_ahead,
       v.cancellation_window_minutes,
       array(select l.location_id from service_locations l where l.organization_id = v.organization_id and l.service_id = v.id
             order by l.location_id) as location_ids,
       array(select l.specialist_id from service_specialists l join specialists s on s.organization_id = l.organization_id and s.id = l.specialist_id
             where l.organization_id = v.organization_id and l.service_id = v.id and s.deleted_at is null and s.bookable_online
             order by l.specialist_id) as specialist_ids
     from services v where ${where.text}
     order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export interface PublicLocationRow {
  id: string;
  name: string;
  address_line1: string | null;
  address_line2: string | null;
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
  timezone: string;
  phone: string | null;
}

/** The clinic's premises: their addresses and front-desk phone are the clinic's public contact, not a person's. */
export async function listPublicLocations(tx: Queryable, orgId: string, sort: Sort, page: Pagination) {
  const count = await tx.query<{ total: number }>('select count(*)::int as total from locations where organization_id = $1', [orgId]);
  const { rows } = await tx.query<PublicLocationRow>(
    `select id, name, address_line1, address_line2, city, region, postal_code, country, timezone, phone
     from locations where organization_id = $1 order by ${sort.sql} limit $2 offset $3`,
    [orgId, page.limit, page.offset],
  );
  return { rows, total: count.rows[0]!.total };
}
