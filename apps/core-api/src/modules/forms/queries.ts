import { prepared, type Queryable } from '@clinic/db';
import { SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';
import type { FieldType } from '../custom-fields/definition.ts';
import { markDeleted } from '../../platform/deleted.ts';

export interface FieldSnapshot {
  custom_field_id: string;
  version: number;
  key: string;
  label: string;
  field_type: FieldType;
  options: string[];
  private: boolean;
  required: boolean;
}

export interface FormRow {
  id: string;
  organization_id: string;
  patient_id: string;
  form_template_id: string;
  template_version: number;
  title: string;
  status: 'pending' | 'signed';
  values: Record<string, unknown>;
  created_by_principal_id: string;
  signed_at: Date | null;
  signed_by_principal_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface FileRow {
  id: string;
  form_id: string;
  asset_key: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  uploaded_by_principal_id: string;
  created_at: Date;
}

const COLUMNS = `id, organization_id, patient_id, form_template_id, template_version, title, status, "values", created_by_principal_id,
  signed_at, signed_by_principal_id, created_at, updated_at`;
const FILE_COLUMNS =
  'id, form_id, asset_key, filename, content_type, size_bytes::int as size_bytes, sha256, uploaded_by_principal_id, created_at';

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function livePatientExists(tx: Queryable, orgId: string, patientId: string): Promise<boolean> {
  const { rows } = await tx.query('select 1 from patients where id = $1 and organization_id = $2 and deleted_at is null', [
    patientId,
    orgId,
  ]);
  return rows.length > 0;
}

export async function insertForm(
  tx: Queryable,
  orgId: string,
  f: {
    patientId: string;
    templateId: string;
    templateVersion: number;
    title: string;
    values: Record<string, unknown>;
    principalId: string;
  },
): Promise<FormRow> {
  const { rows } = await tx.query<FormRow>(
    `insert into forms (organization_id, patient_id, form_template_id, template_version, title, "values", created_by_principal_id)
     values ($1, $2, $3, $4, $5, $6::jsonb, $7) returning ${COLUMNS}`,
    [orgId, f.patientId, f.templateId, f.templateVersion, f.title, JSON.stringify(f.values), f.principalId],
  );
  return rows[0]!;
}

export async function insertSnapshots(tx: Queryable, orgId: string, formId: string, fields: FieldSnapshot[]): Promise<void> {
  await tx.query(
    `insert into form_field_snapshots (organization_id, form_id, position, custom_field_id, version, key, label, field_type, options, private, required)
     select $1, $2, s.ord - 1, (s.f->>'custom_field_id')::uuid, (s.f->>'version')::int, s.f->>'key', s.f->>'label', s.f->>'field_type',
            s.f->'options', (s.f->>'private')::boolean, (s.f->>'required')::boolean
     from jsonb_array_elements($3::jsonb) with ordinality as s (f, ord)`,
    [orgId, formId, JSON.stringify(fields)],
  );
}

// The reads of one form, on every GET, PATCH and signing of it: prepared, as their plans under the policies
// cost more than running them.
const SNAPSHOTS = `select custom_field_id, version, key, label, field_type, options, private, required
     from form_field_snapshots where form_id = $1 and organization_id = $2 order by position`;
const FIND = `select ${COLUMNS} from forms where id = $1 and organization_id = $2 and deleted_at is null`;

export async function findSnapshots(tx: Queryable, orgId: string, formId: string): Promise<FieldSnapshot[]> {
  const { rows } = await tx.query<FieldSnapshot>(SNAPSHOTS, [formId, orgId], prepared(SNAPSHOTS));
  return rows;
}

export async function findForm(tx: Queryable, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<FormRow | null> {
  const text = opts.forUpdate ? `${FIND} for update` : FIND;
  const { rows } = await tx.query<FormRow>(text, [id, orgId], prepared(text));
  return rows[0] ?? null;
}

export async function saveValues(tx: Queryable, orgId: string, id: string, values: Record<string, unknown>): Promise<FormRow> {
  const { rows } = await tx.query<FormRow>(
    `update forms set "values" = $3::jsonb where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId, JSON.stringify(values)],
  );
  return rows[0]!;
}

export async function signForm(tx: Queryable, orgId: string, id: string, principalId: string): Promise<FormRow> {
  const { rows } = await tx.query<FormRow>(
    `update forms set status = 'signed', signed_at = now(), signed_by_principal_id = $3 where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId, principalId],
  );
  return rows[0]!;
}

/** After the mark, forms_read hides the row from a caller without data.view_deleted (platform/deleted.ts). */
export async function softDeleteForm(tx: Queryable, orgId: string, id: string): Promise<void> {
  await markDeleted(tx, 'forms', orgId, id);
}

export async function listForms(
  tx: Queryable,
  orgId: string,
  f: {
    patientId?: string | undefined;
    status?: string | undefined;
    templateId?: string | undefined;
    created: DateRange;
    includeDeleted?: boolean;
  },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: FormRow[]; total: number }> {
  const where = new SqlWhere().add('organization_id = ?', orgId);
  if (!f.includeDeleted) where.add('deleted_at is null');
  where
    .optional('patient_id = ?', f.patientId)
    .optional('status = ?', f.status)
    .optional('form_template_id = ?', f.templateId)
    .dateRange('created_at', f.created);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from forms where ${where.text}`, where.params);
  const { rows } = await tx.query<FormRow>(
    `select ${COLUMNS} from forms where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export async function insertFile(tx: Queryable, orgId: string, f: Omit<FileRow, 'created_at'>): Promise<FileRow> {
  const { rows } = await tx.query<FileRow>(
    `insert into form_files (id, organization_id, form_id, asset_key, filename, content_type, size_bytes, sha256, uploaded_by_principal_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning ${FILE_COLUMNS}`,
    [f.id, orgId, f.form_id, f.asset_key, f.filename, f.content_type, f.size_bytes, f.sha256, f.uploaded_by_principal_id],
  );
  return rows[0]!;
}

export async function listFiles(tx: Queryable, orgId: string, formId: string): Promise<FileRow[]> {
  const { rows } = await tx.query<FileRow>(
    `select ${FILE_COLUMNS} from form_files where form_id = $1 and organization_id = $2 order by created_at, id`,
    [formId, orgId],
  );
  return rows;
}

export async function findFile(tx: Queryable, orgId: string, formId: string, fileId: string): Promise<FileRow | null> {
  const { rows } = await tx.query<FileRow>(
    `select ${FILE_COLUMNS} from form_files where id = $1 and form_id = $2 and organization_id = $3`,
    [fileId, formId, orgId],
  );
  return rows[0] ?? null;
}

export async function deleteFile(tx: Queryable, orgId: string, formId: string, fileId: string): Promise<boolean> {
  const { rowCount } = await tx.query('delete from form_files where id = $1 and form_id = $2 and organization_id = $3', [
    fileId,
    formId,
    orgId,
  ]);
  return (rowCount ?? 0) > 0;
}

/** Which of these asset keys belong to a form file (the orphan sweep deletes the others). */
export async function knownAssetKeys(tx: Queryable, keys: string[]): Promise<string[]> {
  const { rows } = await tx.query<{ asset_key: string }>('select asset_key from form_files where asset_key = any($1::text[])', [keys]);
  return rows.map((r) => r.asset_key);
}
