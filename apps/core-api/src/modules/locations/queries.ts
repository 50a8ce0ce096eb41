import { isForeignKeyViolation, isUniqueViolation, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export interface LocationRow {
  id: string;
  organization_id: string;
  name: string;
  address_line1: string | null;
  address_line2: string | null;
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
  timezone: string;
  phone: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns a client may set; also the allow-list of the dynamic UPDATE. */
export const WRITABLE = [
  'name',
  'address_line1',
  'address_line2',
  'city',
  'region',
  'postal_code',
  'country',
  'timezone',
  'phone',
] as const;
export type Writable = (typeof WRITABLE)[number];
export type LocationInput = Pick<LocationRow, 'name' | 'timezone'> & Partial<Pick<LocationRow, Exclude<Writable, 'name' | 'timezone'>>>;

const COLUMNS = `id, organization_id, ${WRITABLE.join(', ')}, created_at, updated_at`;

function nameTaken(err: unknown, name: string): never {
  if (isUniqueViolation(err)) {
    throw errors.conflict('location_name_taken', `This organization already has a location named "${name}"; choose another name.`);
  }
  throw err;
}

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function insertLocation(tx: Queryable, orgId: string, input: LocationInput): Promise<LocationRow> {
  const values = WRITABLE.map((c) => input[c] ?? null);
  try {
    const { rows } = await tx.query<LocationRow>(
      `insert into locations (organization_id, ${WRITABLE.join(', ')})
       values ($1, ${WRITABLE.map((_, i) => `$${i + 2}`).join(', ')}) returning ${COLUMNS}`,
      [orgId, ...values],
    );
    return rows[0]!;
  } catch (err) {
    return nameTaken(err, input.name);
  }
}

export async function findLocation(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<LocationRow | null> {
  const { rows } = await tx.query<LocationRow>(
    `select ${COLUMNS} from locations where id = $1 and organization_id = $2${opts.forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export interface LocationFilter {
  q?: string | undefined;
  created: DateRange;
}

export async function listLocations(
  tx: Queryable,
  orgId: string,
  filter: LocationFilter,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: LocationRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId).dateRange('created_at', filter.created);
  if (filter.q) {
    const pattern = containsPattern(filter.q);
    where.add('(name ilike ? or city ilike ?)', pattern, pattern);
  }
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from locations where ${where.text}`, where.params);
  const { rows } = await tx.query<LocationRow>(
    `select ${COLUMNS} from locations where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** Sets only the given columns (names from WRITABLE, values bound). */
export async function updateLocation(
  tx: Queryable,
  orgId: string,
  id: string,
  changes: Partial<Record<Writable, string | null>>,
): Promise<LocationRow | null> {
  const cols = WRITABLE.filter((c) => Object.hasOwn(changes, c));
  if (!cols.length) return findLocation(tx, orgId, id);
  const params: unknown[] = [id, orgId];
  const set = cols.map((c) => {
    params.push(changes[c] ?? null);
    return `${c} = $${params.length}`;
  });
  try {
    const { rows } = await tx.query<LocationRow>(
      `update locations set ${set.join(', ')} where id = $1 and organization_id = $2 returning ${COLUMNS}`,
      params,
    );
    return rows[0] ?? null;
  } catch (err) {
    return nameTaken(err, String(changes.name ?? ''));
  }
}

/** Refused (409 location_in_use) while specialists or services are linked to it (their foreign keys restrict). */
export async function deleteLocation(tx: Queryable, orgId: string, id: string): Promise<LocationRow | null> {
  try {
    const { rows } = await tx.query<LocationRow>(`delete from locations where id = $1 and organization_id = $2 returning ${COLUMNS}`, [
      id,
      orgId,
    ]);
    return rows[0] ?? null;
  } catch (err) {
    if (isForeignKeyViolation(err))
      throw errors.conflict('location_in_use', 'Specialists or services are linked to this location; unlink them first.');
    throw err;
  }
}
