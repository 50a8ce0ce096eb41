import type { Queryable } from '@clinic/db';
import { versionQueries } from '../../platform/versioned/queries.ts';
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

/** form_template_versions: the append-only snapshots, read as `template`. */
export const templateVersions = versionQueries<'template', TemplateContent>({
  table: 'form_template_versions',
  parent: 'form_template_id',
  snapshot: 'snapshot',
  as: 'template',
});

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
