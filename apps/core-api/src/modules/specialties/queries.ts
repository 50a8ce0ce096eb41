import { isForeignKeyViolation, isUniqueViolation, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export interface SpecialtyRow {
  id: string;
  organization_id: string;
  code: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}
export type SpecialtyInput = Pick<SpecialtyRow, 'code' | 'name' | 'description'>;

const COLUMNS = 'id, organization_id, code, name, description, created_at, updated_at';

function codeTaken(err: unknown, code: string): never {
  if (isUniqueViolation(err))
    throw errors.conflict('specialty_code_taken', `This organization already has a specialty with code "${code}".`);
  throw err;
}

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function insertSpecialty(tx: Queryable, orgId: string, s: SpecialtyInput): Promise<SpecialtyRow> {
  try {
    const { rows } = await tx.query<SpecialtyRow>(
      `insert into specialties (organization_id, code, name, description) values ($1, $2, $3, $4) returning ${COLUMNS}`,
      [orgId, s.code, s.name, s.description],
    );
    return rows[0]!;
  } catch (err) {
    return codeTaken(err, s.code);
  }
}

export async function findSpecialty(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<SpecialtyRow | null> {
  const { rows } = await tx.query<SpecialtyRow>(
    `select ${COLUMNS} from specialties where organization_id = $1 and id = $2${forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function updateSpecialty(tx: Queryable, orgId: string, id: string, s: SpecialtyInput): Promise<SpecialtyRow> {
  try {
    const { rows } = await tx.query<SpecialtyRow>(
      `update specialties set code = $3, name = $4, description = $5 where organization_id = $1 and id = $2 returning ${COLUMNS}`,
      [orgId, id, s.code, s.name, s.description],
    );
    return rows[0]!;
  } catch (err) {
    return codeTaken(err, s.code);
  }
}

/** Refused (409 specialty_in_use) while a specialist holds it: the link's foreign key restricts. */
export async function deleteSpecialty(tx: Queryable, orgId: string, id: string): Promise<SpecialtyRow | null> {
  try {
    const { rows } = await tx.query<SpecialtyRow>(`delete from specialties where organization_id = $1 and id = $2 returning ${COLUMNS}`, [
      orgId,
      id,
    ]);
    return rows[0] ?? null;
  } catch (err) {
    if (isForeignKeyViolation(err))
      throw errors.conflict('specialty_in_use', 'Specialists hold this specialty; remove it from their profiles first.');
    throw err;
  }
}

export async function listSpecialties(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: SpecialtyRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId).dateRange('created_at', f.created);
  if (f.q) {
    const p = containsPattern(f.q);
    where.add('(name ilike ? or code ilike ?)', p, p);
  }
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from specialties where ${where.text}`, where.params);
  const { rows } = await tx.query<SpecialtyRow>(
    `select ${COLUMNS} from specialties where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}
