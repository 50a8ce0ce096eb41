import type { Queryable } from '@clinic/db';
import { versionQueries } from '../../platform/versioned/queries.ts';
import { rowQueries } from '../../platform/versioned/rows.ts';
import { containsPattern, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

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

/** form_templates: the live rows. */
const templateRows = rowQueries<TemplateContent, TemplateRow>({
  table: 'form_templates',
  columns: 'id, organization_id, name, description, fields, version, published, published_at, created_at, updated_at',
  content: [
    { column: 'name', value: (c) => c.name },
    { column: 'description', value: (c) => c.description },
    { column: 'fields', cast: 'jsonb', value: (c) => JSON.stringify(c.fields) },
  ],
});

export const insertTemplate = (tx: Queryable, orgId: string, c: TemplateContent) => templateRows.insert(tx, orgId, c);
export const findTemplate = templateRows.find;
export const saveTemplate = templateRows.save;
export const softDeleteTemplate = templateRows.softDelete;

export function listTemplates(
  tx: Queryable,
  orgId: string,
  f: { q?: string | undefined; published?: boolean | undefined; created: DateRange; includeDeleted?: boolean },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: TemplateRow[]; total: number }> {
  return templateRows.list(
    tx,
    orgId,
    (where) => {
      where.optional('published = ?', f.published).dateRange('created_at', f.created);
      return f.q ? where.add('name ilike ?', containsPattern(f.q)) : where;
    },
    sort,
    page,
    f.includeDeleted,
  );
}
