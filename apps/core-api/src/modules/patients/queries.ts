import { isUniqueViolation, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export interface PatientRow {
  id: string;
  organization_id: string;
  user_id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  date_of_birth: string | null;
  phone: string | null;
  notes: string | null;
  profile_shared: boolean;
  custom_field_values: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export const RECORD_COLUMNS = ['first_name', 'last_name', 'date_of_birth', 'phone', 'notes'] as const;
export type RecordColumn = (typeof RECORD_COLUMNS)[number];
export type PatientRecord = Record<RecordColumn, string | null> & { custom_field_values: Record<string, unknown> };

const COLUMNS = `id, organization_id, user_id, app.patient_email(id) as email, first_name, last_name,
  to_char(date_of_birth, 'YYYY-MM-DD') as date_of_birth, phone, notes, profile_shared, custom_field_values, created_at, updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function ensurePatientUser(tx: Queryable, email: string): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>('select app.ensure_patient_user($1) as id', [email]);
  return rows[0]?.id ?? null;
}

export async function insertPatient(
  tx: Queryable,
  orgId: string,
  userId: string,
  rec: PatientRecord,
  principalId: string,
): Promise<PatientRow> {
  try {
    const { rows } = await tx.query<PatientRow>(
      `insert into patients (organization_id, user_id, first_name, last_name, date_of_birth, phone, notes, custom_field_values, created_by_principal_id)
       values ($1, $2, $3, $4, $5::date, $6, $7, $8::jsonb, $9) returning ${COLUMNS}`,
      [
        orgId,
        userId,
        rec.first_name,
        rec.last_name,
        rec.date_of_birth,
        rec.phone,
        rec.notes,
        JSON.stringify(rec.custom_field_values),
        principalId,
      ],
    );
    // Read back: app.patient_email() in RETURNING runs before the new row is visible to it.
    return (await findPatient(tx, orgId, rows[0]!.id)) ?? rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.conflict('patient_exists', 'This person already has a patient record at this organization.');
    throw err;
  }
}

export async function findPatient(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<PatientRow | null> {
  const { rows } = await tx.query<PatientRow>(
    `select ${COLUMNS} from patients where id = $1 and organization_id = $2 and deleted_at is null${opts.forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export async function updatePatient(tx: Queryable, orgId: string, id: string, rec: PatientRecord): Promise<PatientRow> {
  const { rows } = await tx.query<PatientRow>(
    `update patients set first_name = $3, last_name = $4, date_of_birth = $5::date, phone = $6, notes = $7, custom_field_values = $8::jsonb
     where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId, rec.first_name, rec.last_name, rec.date_of_birth, rec.phone, rec.notes, JSON.stringify(rec.custom_field_values)],
  );
  return rows[0]!;
}

/** No RETURNING: the deleted row may be invisible to the caller (patients_read_org hides it without data.view_deleted). */
export async function softDeletePatient(tx: Queryable, orgId: string, id: string): Promise<PatientRow | null> {
  const row = await findPatient(tx, orgId, id, { forUpdate: true });
  if (!row) return null;
  await tx.query('update patients set deleted_at = now() where id = $1 and organization_id = $2', [id, orgId]);
  return row;
}

export async function listPatients(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: PatientRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId).add('deleted_at is null').dateRange('created_at', f.created);
  if (f.q) {
    const p = containsPattern(f.q);
    where.add(
      "(first_name ilike ? or last_name ilike ? or (coalesce(first_name, '') || ' ' || coalesce(last_name, '')) ilike ? or phone ilike ?)",
      p,
      p,
      p,
      p,
    );
  }
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from patients where ${where.text}`, where.params);
  const { rows } = await tx.query<PatientRow>(
    `select ${COLUMNS} from patients where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}
