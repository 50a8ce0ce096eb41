import type { Queryable } from '@clinic/db';
import { containsPattern, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';
import type { Kind, Layout } from '../documents/render/layout.ts';
import { versionQueries } from '../../platform/versioned/queries.ts';
import { rowQueries } from '../../platform/versioned/rows.ts';

/** What a version snapshot holds. */
export interface PdfTemplateContent {
  name: string;
  description: string | null;
  kind: Kind;
  layout: Layout;
}

export interface PdfTemplateRow extends PdfTemplateContent {
  id: string;
  organization_id: string;
  version: number;
  published: boolean;
  published_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** pdf_template_versions: the append-only snapshots, read as `template`. */
export const pdfTemplateVersions = versionQueries<'template', PdfTemplateContent>({
  table: 'pdf_template_versions',
  parent: 'pdf_template_id',
  snapshot: 'snapshot',
  as: 'template',
});

/** pdf_templates: the live rows (a template may start as a draft, version 0). */
const pdfTemplateRows = rowQueries<PdfTemplateContent, PdfTemplateRow>({
  table: 'pdf_templates',
  columns: 'id, organization_id, name, description, kind, content as layout, version, published, published_at, created_at, updated_at',
  content: [
    { column: 'name', value: (c) => c.name },
    { column: 'description', value: (c) => c.description },
    { column: 'kind', value: (c) => c.kind },
    { column: 'content', cast: 'jsonb', value: (c) => JSON.stringify(c.layout) },
  ],
});

export const insertPdfTemplate = (tx: Queryable, orgId: string, c: PdfTemplateContent, draft = false) =>
  pdfTemplateRows.insert(tx, orgId, c, { draft });
export const findPdfTemplate = pdfTemplateRows.find;
export const savePdfTemplate = pdfTemplateRows.save;
export const softDeletePdfTemplate = pdfTemplateRows.softDelete;

export function listPdfTemplates(
  tx: Queryable,
  orgId: string,
  f: { q?: string; kind?: string; published?: boolean; created: DateRange; everPublished?: boolean; includeDeleted?: boolean },
  sort: Sort,
  page: Pagination,
): Promise<{ rows: PdfTemplateRow[]; total: number }> {
  return pdfTemplateRows.list(
    tx,
    orgId,
    (where) => {
      where.optional('published = ?', f.published).optional('kind = ?', f.kind).dateRange('created_at', f.created);
      if (f.everPublished) where.add('version > 0');
      return f.q ? where.add('name ilike ?', containsPattern(f.q)) : where;
    },
    sort,
    page,
    f.includeDeleted,
  );
}

/** The published snapshots of drafts, for readers who see only what was published. */
export async function publishedSnapshots(
  tx: Queryable,
  orgId: string,
  drafts: { id: string; version: number }[],
): Promise<Map<string, PdfTemplateContent>> {
  if (!drafts.length) return new Map();
  const { rows } = await tx.query<{ id: string; template: PdfTemplateContent }>(
    `select v.pdf_template_id as id, v.snapshot as template from pdf_template_versions v
     join unnest($2::uuid[], $3::int[]) as d (id, version) on d.id = v.pdf_template_id and d.version = v.version
     where v.organization_id = $1`,
    [orgId, drafts.map((d) => d.id), drafts.map((d) => d.version)],
  );
  return new Map(rows.map((r) => [r.id, r.template]));
}

export interface LetterheadRow {
  organization_id: string;
  name: string;
  address_lines: string[];
  registration_numbers: string[];
  logo_asset_key: string | null;
  logo_content_type: 'image/png' | 'image/jpeg' | null;
  logo_sha256: string | null;
  updated_at: Date | null;
}

/** The letterhead, or one made of the organization's name when none was saved. */
export async function findLetterhead(tx: Queryable, orgId: string): Promise<LetterheadRow> {
  const { rows } = await tx.query<LetterheadRow>(
    `select o.id as organization_id, coalesce(l.name, o.name) as name, coalesce(l.address_lines, '{}') as address_lines,
       coalesce(l.registration_numbers, '{}') as registration_numbers, l.logo_asset_key, l.logo_content_type, l.logo_sha256, l.updated_at
     from organizations o left join document_letterheads l on l.organization_id = o.id where o.id = $1`,
    [orgId],
  );
  return rows[0]!;
}

export async function upsertLetterhead(
  tx: Queryable,
  orgId: string,
  l: { name: string; address_lines: string[]; registration_numbers: string[] },
): Promise<void> {
  await tx.query(
    `insert into document_letterheads (organization_id, name, address_lines, registration_numbers) values ($1, $2, $3, $4)
     on conflict (organization_id) do update set name = excluded.name, address_lines = excluded.address_lines,
       registration_numbers = excluded.registration_numbers`,
    [orgId, l.name, l.address_lines, l.registration_numbers],
  );
}

/** Sets the logo (the letterhead row is made with the organization's name if there is none); returns the old key. */
export async function setLogo(
  tx: Queryable,
  orgId: string,
  logo: { asset_key: string; content_type: string; sha256: string },
): Promise<string | null> {
  const before = await tx.query<{ logo_asset_key: string | null }>(
    'select logo_asset_key from document_letterheads where organization_id = $1 for update',
    [orgId],
  );
  await tx.query(
    `insert into document_letterheads (organization_id, name, logo_asset_key, logo_content_type, logo_sha256)
     select o.id, o.name, $2, $3, $4 from organizations o where o.id = $1
     on conflict (organization_id) do update set logo_asset_key = excluded.logo_asset_key,
       logo_content_type = excluded.logo_content_type, logo_sha256 = excluded.logo_sha256`,
    [orgId, logo.asset_key, logo.content_type, logo.sha256],
  );
  return before.rows[0]?.logo_asset_key ?? null;
}

export async function knownLogoKeys(tx: Queryable, keys: string[]): Promise<string[]> {
  const { rows } = await tx.query<{ k: string }>(
    'select logo_asset_key as k from document_letterheads where logo_asset_key = any($1::text[])',
    [keys],
  );
  return rows.map((r) => r.k);
}
