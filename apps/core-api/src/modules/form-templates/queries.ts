import type { Queryable } from '@clinic/db';
import { containsPattern, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export interface TemplateField {
  custom_field_id: string;
  required: boolean;
}

/** What a version snapshot holds. */
export interface TemplateContent {
  name: string;
  description: string | null;
  fields: TemplateField[];
}

export interface TemplateRow extends TemplateContent {
  id: string;
  organization_id: string;
  version: number;
  published: boolean;
  published_at: Date;
  created_at: Date;
  updated_at: Date;
}

export interface TemplateVersionRow {
  version: number;
  published_at: Date;
  template: TemplateContent;
}

const COLUMNS = 'id, organization_id, name, description, fields, version, published, published_at, created_at, updated_at';

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function insertTemplate(tx: Queryable, orgId: string, c: TemplateContent): Promise<TemplateRow> {
  const { rows } = await tx.query<TemplateRow>(
    `insert into form_templates (organization_id, name, description, fields) values ($1, $2, $3, $4::jsonb) returning ${COLUMNS}`,
    [orgId, c.name, c.description, JSON.stringify(c.fields)],
  );
  return rows[0]!;
}

export async function findTemplate(
  tx: Queryable,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<TemplateRow | null> {
  const { rows } = await tx.query<TemplateRow>(
    `select ${COLUMNS} from form_templates where id = $1 and organization_id = $2 and deleted_at is null${opts.forUpdate ? ' for update' : ''}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export async function saveTemplate(
  tx: Queryable,
  orgId: string,
  id: string,
  c: TemplateContent,
  state: { version: number; published: boolean; publishedNow: boolean },
): Promise<TemplateRow> {
  const { rows } = await tx.query<TemplateRow>(
    `update form_templates set name = $3, description = $4, fields = $5::jsonb, version = $6, published = $7,
       published_at = case when $8 then now() else published_at end
     where id = $1 and organization_id = $2 returning ${COLUMNS}`,
    [id, orgId, c.name, c.description, JSON.stringify(c.fields), state.version, state.published, state.publishedNow],
  );
  return rows[0]!;
}

export async function softDeleteTemplate(tx: Queryable, orgId: string, id: string): Promise<TemplateRow | null> {
  const { rows } = await tx.query<TemplateRow>(
    `update form_templates set deleted_at = now() where id = $1 and organization_id = $2 and deleted_at is null returning ${COLUMNS}`,
    [id, orgId],
  );
  return rows[0] ?? null;
}

export async function insertTemplateVersion(tx: Queryable, orgId: string, row: TemplateRow, principalId: string): Promise<void> {
  const snapshot: TemplateContent = { name: row.name, description: row.description, fields: row.fields };
  await tx.query(
    `insert into form_template_versions (organization_id, form_template_id, version, snapshot, published_at, published_by_principal_id)
     values ($1, $2, $3, $4::jsonb, $5, $6)`,
    [orgId, row.id, row.version, JSON.stringify(snapshot), row.published_at, principalId],
  );
}

export async function listTemplateVersions(tx: Queryable, orgId: string, id: string, page: Pagination, orderSql: string) {
  const count = await tx.query<{ total: number }>(
    'select count(*)::int as total from form_template_versions where form_template_id = $1 and organization_id = $2',
    [id, orgId],
  );
  const { rows } = await tx.query<TemplateVersionRow>(
    `select version, published_at, snapshot as template from form_template_versions
     where form_template_id = $1 and organization_id = $2 order by ${orderSql} limit $3 offset $4`,
    [id, orgId, page.limit, page.offset],
  );
  return { rows, total: count.rows[0]!.total };
}

/** One version, or the latest one when `version` is null (what new forms are made from). */
export async function findTemplateVersion(
  tx: Queryable,
  orgId: string,
  id: string,
  version: number | null,
): Promise<TemplateVersionRow | null> {
  const { rows } = await tx.query<TemplateVersionRow>(
    `select version, published_at, snapshot as template from form_template_versions
     where form_template_id = $1 and organization_id = $2 and ($3::int is null or version = $3) order by version desc limit 1`,
    [id, orgId, version],
  );
  return rows[0] ?? null;
}

export async function listTemplates(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; published?: boolean | undefined; created: DateRange },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: TemplateRow[]; total: number }> {
  const where = new SqlWhere()
    .add('organization_id = ?', orgId)
    .add('deleted_at is null')
    .optional('published = ?', f.published)
    .dateRange('created_at', f.created);
  if (f.q) where.add('name ilike ?', containsPattern(f.q));
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from form_templates where ${where.text}`, where.params);
  const { rows } = await tx.query<TemplateRow>(
    `select ${COLUMNS} from form_templates where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}
