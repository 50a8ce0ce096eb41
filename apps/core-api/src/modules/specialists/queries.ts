import { isForeignKeyViolation, isUniqueViolation, prepared, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';
import { markDeleted } from '../../platform/deleted.ts';

export interface SpecialistRow {
  id: string;
  organization_id: string;
  user_id: string;
  display_name: string;
  title: string | null;
  bio: string | null;
  contact_email: string | null;
  contact_phone: string | null;
  custom_field_values: Record<string, unknown>;
  languages: string[];
  bookable_online: boolean;
  specialty_ids: string[];
  location_ids: string[];
  /** The services that name this specialist among those who deliver them (edited on the service). */
  service_ids: string[];
  gender: string | null;
  registration_number: string | null;
  qualifications: Qualification[];
  practising_since: number | null;
  booking_note: string | null;
  created_at: Date;
  updated_at: Date;
}

export const PROFILE_COLUMNS = ['display_name', 'title', 'bio', 'contact_email', 'contact_phone'] as const;
export type ProfileColumn = (typeof PROFILE_COLUMNS)[number];
export type Profile = { display_name: string } & Record<Exclude<ProfileColumn, 'display_name'>, string | null> & {
    custom_field_values: Record<string, unknown>;
    languages: string[];
    bookable_online: boolean;
  };
export interface Qualification {
  title: string;
  institution: string | null;
  year: number | null;
}
/** What GET, PUT /v1/specialists/{id}/profile show and replace. */
export interface ProfessionalProfile {
  display_name: string;
  title: string | null;
  bio: string | null;
  languages: string[];
  gender: string | null;
  registration_number: string | null;
  qualifications: Qualification[];
  practising_since: number | null;
  booking_note: string | null;
  custom_field_values: Record<string, unknown>;
}
/** The links a PUT replaces as a whole. */
export interface Links {
  specialty_ids: string[];
  location_ids: string[];
}

// Links are read through their tables' policies: a patient sees only the public services among service_ids.
const COLUMNS = `s.id, s.organization_id, s.user_id, ${PROFILE_COLUMNS.map((c) => `s.${c}`).join(', ')}, s.custom_field_values,
  s.languages, s.bookable_online,
  array(select l.specialty_id from specialist_specialties l where l.organization_id = s.organization_id and l.specialist_id = s.id order by l.specialty_id) as specialty_ids,
  array(select l.location_id from specialist_locations l where l.organization_id = s.organization_id and l.specialist_id = s.id order by l.location_id) as location_ids,
  array(select l.service_id from service_specialists l join services sv on sv.organization_id = l.organization_id and sv.id = l.service_id
        where l.organization_id = s.organization_id and l.specialist_id = s.id order by l.service_id) as service_ids,
  s.gender, s.registration_number, s.qualifications, s.practising_since, s.booking_note, s.created_at, s.updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

/** The new profile's id. */
export async function insertSpecialist(tx: Queryable, orgId: string, userId: string, p: Profile): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      `insert into specialists (organization_id, user_id, display_name, title, bio, contact_email, contact_phone, custom_field_values,
         languages, bookable_online)
       values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10) returning id`,
      [
        orgId,
        userId,
        p.display_name,
        p.title,
        p.bio,
        p.contact_email,
        p.contact_phone,
        JSON.stringify(p.custom_field_values),
        p.languages,
        p.bookable_online,
      ],
    );
    return rows[0]!.id;
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.conflict('specialist_exists', 'This staff member already has a specialist profile.');
    // 23503: the (user, organization) pair names no membership.
    if (isForeignKeyViolation(err)) throw errors.validation({ user_id: 'must be a staff member of this organization' });
    throw err;
  }
}

export async function findSpecialist(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<SpecialistRow | null> {
  const { rows } = await tx.query<SpecialistRow>(
    `select ${COLUMNS} from specialists s where s.id = $1 and s.organization_id = $2 and s.deleted_at is null${opts.forUpdate ? ' for update of s' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export async function updateSpecialist(tx: Queryable, orgId: string, id: string, p: Profile): Promise<void> {
  await tx.query(
    `update specialists set display_name = $3, title = $4, bio = $5, contact_email = $6, contact_phone = $7, custom_field_values = $8::jsonb,
       languages = $9, bookable_online = $10
     where id = $1 and organization_id = $2`,
    [
      id,
      orgId,
      p.display_name,
      p.title,
      p.bio,
      p.contact_email,
      p.contact_phone,
      JSON.stringify(p.custom_field_values),
      p.languages,
      p.bookable_online,
    ],
  );
}

export async function updateProfessionalProfile(tx: Queryable, orgId: string, id: string, p: ProfessionalProfile): Promise<void> {
  await tx.query(
    `update specialists set display_name = $3, title = $4, bio = $5, languages = $6, gender = $7, registration_number = $8,
       qualifications = $9::jsonb, practising_since = $10, booking_note = $11, custom_field_values = $12::jsonb
     where id = $1 and organization_id = $2`,
    [
      id,
      orgId,
      p.display_name,
      p.title,
      p.bio,
      p.languages,
      p.gender,
      p.registration_number,
      JSON.stringify(p.qualifications),
      p.practising_since,
      p.booking_note,
      JSON.stringify(p.custom_field_values),
    ],
  );
}

/**
 * Replaces the specialty and location links. An id that names nothing in the organization fails the
 * link's foreign key (400 naming the field); dropping a location that availability rules still use
 * fails theirs (409 location_in_use).
 */
export async function replaceLinks(tx: Queryable, orgId: string, id: string, links: Links): Promise<void> {
  const tables = [
    { table: 'specialist_specialties', column: 'specialty_id', field: 'specialty_ids', ids: links.specialty_ids },
    { table: 'specialist_locations', column: 'location_id', field: 'location_ids', ids: links.location_ids },
  ];
  for (const t of tables) {
    try {
      await tx.query(`delete from ${t.table} where organization_id = $1 and specialist_id = $2 and ${t.column} <> all($3::uuid[])`, [
        orgId,
        id,
        t.ids,
      ]);
    } catch (err) {
      if (isForeignKeyViolation(err))
        throw errors.conflict(
          'location_in_use',
          'Availability of this specialist uses a location being removed; change the availability first.',
        );
      throw err;
    }
    try {
      await tx.query(
        `insert into ${t.table} (organization_id, specialist_id, ${t.column}) select $1, $2, unnest($3::uuid[]) on conflict do nothing`,
        [orgId, id, t.ids],
      );
    } catch (err) {
      if (isForeignKeyViolation(err)) throw errors.validation({ [t.field]: "every id must name one of the organization's records" });
      throw err;
    }
  }
}

/** The row as it was: after the mark, specialists_read hides it from a caller without data.view_deleted. */
export async function softDeleteSpecialist(tx: Queryable, orgId: string, id: string): Promise<SpecialistRow | null> {
  const row = await findSpecialist(tx, orgId, id, { forUpdate: true });
  if (!row) return null;
  await markDeleted(tx, 'specialists', orgId, id);
  return row;
}

export async function listSpecialists(
  tx: Queryable,
  orgId: string,
  f: {
    q?: string | undefined;
    created: DateRange;
    specialtyId?: string | undefined;
    locationId?: string | undefined;
    serviceId?: string | undefined;
    language?: string | undefined;
    includeDeleted?: boolean;
  },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: SpecialistRow[]; total: number }> {
  const where = new SqlWhere().add('s.organization_id = ?', orgId);
  if (!f.includeDeleted) where.add('s.deleted_at is null');
  where.dateRange('s.created_at', f.created);
  if (f.q) {
    const p = containsPattern(f.q);
    where.add('(s.display_name ilike ? or s.title ilike ?)', p, p);
  }
  const link = (table: string, column: string, value: string | undefined) => {
    if (value)
      where.add(
        `exists (select 1 from ${table} l where l.organization_id = s.organization_id and l.specialist_id = s.id and l.${column} = ?)`,
        value,
      );
  };
  link('specialist_specialties', 'specialty_id', f.specialtyId);
  link('specialist_locations', 'location_id', f.locationId);
  link('service_specialists', 'service_id', f.serviceId);
  if (f.language) where.add('? = any(s.languages)', f.language);
  // Both at once (one round trip), prepared: their texts come from a few sorts and filters, and planning the
  // page with its link columns' policies cost more than running it (bench/directory.ts).
  const countText = `select count(*)::int as total from specialists s where ${where.text}`;
  const countParams = [...where.params];
  const pageText = `select ${COLUMNS} from specialists s where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`;
  const [count, { rows }] = await Promise.all([
    tx.query<{ total: number }>(countText, countParams, prepared(countText)),
    tx.query<SpecialistRow>(pageText, where.params, prepared(pageText)),
  ]);
  return { rows, total: count.rows[0]!.total };
}
