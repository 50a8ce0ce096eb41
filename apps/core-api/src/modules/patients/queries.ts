import { isUniqueViolation, prepared, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';
import { markDeleted } from '../../platform/deleted.ts';

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

// user_email: the person's email, kept on live rows by triggers (migration 0070).
const COLUMNS = `id, organization_id, user_id, user_email as email, first_name, last_name,
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
    return rows[0]!;
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

/** The row as it was: after the mark, patients_read_org hides it from a caller without data.view_deleted. */
export async function softDeletePatient(tx: Queryable, orgId: string, id: string): Promise<PatientRow | null> {
  const row = await findPatient(tx, orgId, id, { forUpdate: true });
  if (!row) return null;
  await markDeleted(tx, 'patients', orgId, id);
  return row;
}

/**
 * A page of live patients and their exact total, without reading every patient of the organization:
 * - unfiltered, the total is the organization's counter (patient_counts, kept by triggers) and the page an
 *   index range in the sort's order;
 * - with `q`, the matching ids come from the trigram index through app.patient_search() and are read here
 *   under the caller's policies, the total counted over them in the same statement (one search per request;
 *   only a page past the end asks for the total again);
 * - a date range alone counts its range of the (organization_id, created_at) index.
 * The statements of a request leave together (pipelined), as prepared statements (planned once per connection).
 */
export async function listPatients(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; created: DateRange; includeDeleted?: boolean },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: PatientRow[]; total: number }> {
  if (f.includeDeleted) return listWithDeleted(tx, orgId, f, sort, page);
  const where = new SqlWhere().add('organization_id = ?', orgId).add('deleted_at is null').dateRange('created_at', f.created);
  if (f.q) {
    where.add('id in (select app.patient_search(?, ?))', orgId, containsPattern(f.q));
    const countParams = [...where.params];
    const text = `select ${COLUMNS}, count(*) over ()::int as total from patients where ${where.text}
       order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`;
    const { rows } = await tx.query<PatientRow & { total: number }>(text, where.params, prepared(text));
    // The rows keep their total column: callers present the fields they name.
    if (rows.length || page.offset === 0) return { rows, total: rows[0]?.total ?? 0 };
    const count = await tx.query<{ total: number }>(`select count(*)::int as total from patients where ${where.text}`, countParams);
    return { rows: [], total: count.rows[0]!.total };
  }
  const ranged = f.created.after !== undefined || f.created.before !== undefined;
  const countText = ranged
    ? `select count(*)::int as total from patients where ${where.text}`
    : 'select coalesce(sum(live), 0)::int as total from patient_counts where organization_id = $1';
  const countParams = ranged ? [...where.params] : [orgId];
  const pageText = `select ${COLUMNS} from patients where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`;
  const [count, list] = await Promise.all([
    tx.query<{ total: number }>(countText, countParams, prepared(countText)),
    tx.query<PatientRow>(pageText, where.params, prepared(pageText)),
  ]);
  return { rows: list.rows, total: count.rows[0]!.total };
}

/**
 * include_deleted=true (data.view_deleted): live and deleted patients. The counter and the search index
 * hold live patients only, so the total is counted and `q` compares the fields themselves (a scan of the
 * organization's rows; an occasional read of a holder, not the working list).
 */
async function listWithDeleted(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: PatientRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId).dateRange('created_at', f.created);
  if (f.q) {
    const p = containsPattern(f.q);
    where.add(`((coalesce(first_name, '') || ' ' || coalesce(last_name, '')) ilike ? or phone ilike ? or user_email ilike ?)`, p, p, p);
  }
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from patients where ${where.text}`, where.params);
  const { rows } = await tx.query<PatientRow>(
    `select ${COLUMNS} from patients where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** The demographics of the profile (GET, PUT /v1/patients/{id}/profile) besides the record's names, birth date and phone. */
export const PROFILE_COLUMNS = [
  'sex',
  'address_line1',
  'address_line2',
  'city',
  'region',
  'postal_code',
  'country',
  'preferred_language',
  'external_record_number',
] as const;
export type ProfileColumn = (typeof PROFILE_COLUMNS)[number];
export type ProfileRow = PatientRow & Record<ProfileColumn, string | null>;
export type ProfileInput = Omit<PatientRecord, 'notes'> & Record<ProfileColumn, string | null>;

export async function findProfile(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<ProfileRow | null> {
  const { rows } = await tx.query<ProfileRow>(
    `select ${COLUMNS}, ${PROFILE_COLUMNS.join(', ')} from patients
     where id = $1 and organization_id = $2 and deleted_at is null${forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

/** Writes the whole profile (the staff notes are not part of it). */
export async function updateProfile(tx: Queryable, orgId: string, id: string, p: ProfileInput): Promise<void> {
  const cols = ['first_name', 'last_name', 'date_of_birth', 'phone', ...PROFILE_COLUMNS] as const;
  try {
    await tx.query(
      `update patients set ${cols.map((c, i) => `${c} = $${i + 3}${c === 'date_of_birth' ? '::date' : ''}`).join(', ')},
         custom_field_values = $${cols.length + 3}::jsonb
       where id = $1 and organization_id = $2`,
      [id, orgId, ...cols.map((c) => p[c]), JSON.stringify(p.custom_field_values)],
    );
  } catch (err) {
    if (isUniqueViolation(err))
      throw errors.conflict('external_record_number_taken', 'Another patient of this organization has this record number.');
    throw err;
  }
}
