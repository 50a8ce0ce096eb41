import { isUniqueViolation, pgErrorCode, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

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
  created_at: Date;
  updated_at: Date;
}

export const PROFILE_COLUMNS = ['display_name', 'title', 'bio', 'contact_email', 'contact_phone'] as const;
export type ProfileColumn = (typeof PROFILE_COLUMNS)[number];
export type Profile = { display_name: string } & Record<Exclude<ProfileColumn, 'display_name'>, string | null> & {
    custom_field_values: Record<string, unknown>;
  };

const COLUMNS = `id, organization_id, user_id, ${PROFILE_COLUMNS.join(', ')}, custom_field_values, created_at, updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function insertSpecialist(tx: Queryable, orgId: string, userId: string, p: Profile): Promise<SpecialistRow> {
  try {
    const { rows } = await tx.query<SpecialistRow>(
      `insert into specialists (organization_id, user_id, display_name, title, bio, contact_email, contact_phone, custom_field_values)
       values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) returning ${COLUMNS}`,
      [orgId, userId, p.display_name, p.title, p.bio, p.contact_email, p.contact_phone, JSON.stringify(p.custom_field_values)],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.conflict('specialist_exists', 'This staff member already has a specialist profile.');
    // 23503: the (user, organization) pair names no membership.
    if (pgErrorCode(err) === '23503') throw errors.validation({ user_id: 'must be a staff member of this organization' });
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
    `select ${COLUMNS} from specialists where id = $1 and organization_id = $2 and deleted_at is null${opts.forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export async function updateSpecialist(tx: Queryable, orgId: string, id: string, p: Profile): Promise<SpecialistRow> {
  const { rows } = await tx.query<SpecialistRow>(
    `update specialists set display_name = $3, title = $4, bio = $5, contact_email = $6, contact_phone = $7, custom_field_values = $8::jsonb
     where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId, p.display_name, p.title, p.bio, p.contact_email, p.contact_phone, JSON.stringify(p.custom_field_values)],
  );
  return rows[0]!;
}

/** No RETURNING: the deleted row may be invisible to the caller without data.view_deleted. */
export async function softDeleteSpecialist(tx: Queryable, orgId: string, id: string): Promise<SpecialistRow | null> {
  const row = await findSpecialist(tx, orgId, id, { forUpdate: true });
  if (!row) return null;
  await tx.query('update specialists set deleted_at = now() where id = $1 and organization_id = $2', [id, orgId]);
  return row;
}

export async function listSpecialists(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: SpecialistRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId).add('deleted_at is null').dateRange('created_at', f.created);
  if (f.q) {
    const p = containsPattern(f.q);
    where.add('(display_name ilike ? or title ilike ?)', p, p);
  }
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from specialists where ${where.text}`, where.params);
  const { rows } = await tx.query<SpecialistRow>(
    `select ${COLUMNS} from specialists where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}
