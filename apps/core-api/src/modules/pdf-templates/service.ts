import type { Queryable } from '@clinic/db';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { AppError, errors, type ListEnvelope, listEnvelope, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { versionLifecycle } from '../../platform/versioned/service.ts';
import { emit } from '../events/emit.ts';
import { KINDS, type Kind, type Layout, layoutProblems } from '../documents/render/layout.ts';
import * as q from './queries.ts';
import { TEMPLATE_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No PDF template with this id in this organization.');

export interface LayoutInput {
  page?: { size?: 'A4' | 'Letter'; orientation?: 'portrait' | 'landscape' };
  letterhead?: boolean;
  footer?: string;
  blocks: Layout['blocks'];
}
export interface PdfTemplateInput {
  name?: string;
  description?: string | null;
  kind?: Kind;
  layout?: LayoutInput;
}

/** The layout with its defaults filled in (what is stored and snapshotted). */
function normalize(l: LayoutInput): Layout {
  return {
    page: { size: l.page?.size ?? 'A4', orientation: l.page?.orientation ?? 'portrait' },
    letterhead: l.letterhead ?? true,
    footer: l.footer ?? '{{organization.name}} · {{document.title}}',
    blocks: l.blocks,
  };
}

/** 400 naming each text whose placeholders the kind's data model lacks (GET /v1/pdf-templates/placeholders lists them). */
function checked(kind: Kind, layout: Layout): Layout {
  const problems = layoutProblems(kind, layout);
  if (Object.keys(problems).length)
    throw errors.validation(
      Object.fromEntries(Object.entries(problems).map(([k, v]) => [`layout.${k}`, v])),
      'The layout names placeholders or blocks the data model of this kind does not have; see fields and GET /v1/pdf-templates/placeholders.',
    );
  return layout;
}

function cleanName(name: string): string {
  const v = name.trim();
  if (!v) throw errors.validation({ name: 'must not be blank' });
  return v;
}

const contentOf = (r: q.PdfTemplateRow): q.PdfTemplateContent => ({
  name: r.name,
  description: r.description,
  kind: r.kind,
  layout: r.layout,
});

/** Publish, rollback and the version reads (spec 9.6), shared with the other versioned resources. */
export const pdfTemplateLifecycle = versionLifecycle({
  entity: 'pdf_template',
  noun: 'PDF template',
  shortNoun: 'template',
  notFound,
  versions: q.pdfTemplateVersions,
  snapshotKey: 'template',
  find: q.findPdfTemplate,
  save: q.savePdfTemplate,
  contentOf,
  // The data model may have changed since the draft was saved: publishing checks the placeholders again.
  recheck: async (_tx, _orgId, content) => ({ ...content, layout: checked(content.kind, content.layout) }),
  eventData: (row) => ({ kind: row.kind }),
});

/** Created published at version 1 with its snapshot archived, or as a draft (version 0) that publishing makes version 1. */
export async function createPdfTemplate(
  tx: Queryable,
  actor: OrgActor,
  body: { name: string; description?: string | null; kind: Kind; layout: LayoutInput; draft?: boolean },
) {
  const content: q.PdfTemplateContent = {
    name: cleanName(body.name),
    description: body.description?.trim() || null,
    kind: body.kind,
    layout: checked(body.kind, normalize(body.layout)),
  };
  const row = await q.insertPdfTemplate(tx, actor.orgId, content, body.draft ?? false);
  await audit(tx, actor, 'pdf_template.created', 'pdf_template', row.id, { version: row.version, kind: row.kind, draft: !row.published });
  if (!row.published) {
    await emit(tx, actor.orgId, 'pdf_template.updated', { id: row.id, version: 0, published: false });
    return row;
  }
  await pdfTemplateLifecycle.archive(tx, actor, row);
  await emit(tx, actor.orgId, 'pdf_template.published', { id: row.id, kind: row.kind, version: 1 });
  return row;
}

/**
 * A template as its reader may see it: whoever manages templates sees the draft; anyone else (they hold
 * pdf_templates.view_published) sees the last published version in its place, and never a template that
 * was never published (version 0: the read is 404, the list leaves it out).
 */
async function asPublished(tx: Queryable, orgId: string, rows: q.PdfTemplateRow[], manager: boolean): Promise<q.PdfTemplateRow[]> {
  if (manager) return rows;
  const drafts = rows.filter((r) => !r.published);
  const snaps = await q.publishedSnapshots(tx, orgId, drafts);
  return rows.map((r) => {
    const s = r.published ? null : snaps.get(r.id);
    return s ? { ...r, ...s, published: true } : r;
  });
}

export async function getPdfTemplate(tx: Queryable, orgId: string, id: string, manager: boolean) {
  const row = await q.findPdfTemplate(tx, orgId, id);
  if (!row || (!manager && row.version === 0)) throw notFound();
  return (await asPublished(tx, orgId, [row], manager))[0]!;
}

export async function listPdfTemplates(
  tx: Queryable,
  orgId: string,
  query: Record<string, unknown>,
  manager: boolean,
  includeDeleted = false,
): Promise<ListEnvelope<q.PdfTemplateRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, TEMPLATE_SORT);
  const created = parseDateRange(query, 'created_at');
  const kind = typeof query.kind === 'string' && query.kind ? query.kind : undefined;
  if (kind && !(KINDS as readonly string[]).includes(kind)) throw errors.queryValidation({ kind: `must be one of ${KINDS.join(', ')}` });
  const published = query.published === 'true' ? true : query.published === 'false' ? false : undefined;
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await q.listPdfTemplates(
    tx,
    orgId,
    { q: text || undefined, kind, published, created, everPublished: !manager, includeDeleted },
    sort,
    page,
  );
  return listEnvelope(await asPublished(tx, orgId, rows, manager), page, total);
}

/** Edits the draft in place (same version); documents keep being made from the last published version. */
export async function updatePdfTemplate(tx: Queryable, actor: OrgActor, id: string, body: PdfTemplateInput) {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await q.findPdfTemplate(tx, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound();
  const before = contentOf(current);
  const kind = body.kind ?? before.kind;
  const next: q.PdfTemplateContent = {
    name: body.name !== undefined ? cleanName(body.name) : before.name,
    description: body.description !== undefined ? body.description?.trim() || null : before.description,
    kind,
    layout: checked(kind, body.layout !== undefined ? normalize(body.layout) : before.layout),
  };
  const changed = (Object.keys(next) as (keyof q.PdfTemplateContent)[]).filter(
    (k) => JSON.stringify(next[k]) !== JSON.stringify(before[k]),
  );
  if (!changed.length) return current;
  const row = await q.savePdfTemplate(tx, actor.orgId, id, next, { version: current.version, published: false, publishedNow: false });
  await audit(tx, actor, 'pdf_template.updated', 'pdf_template', id, { version: row.version, changed });
  await emit(tx, actor.orgId, 'pdf_template.updated', { id, version: row.version, published: false });
  return row;
}

export async function deletePdfTemplate(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  if (!(await q.softDeletePdfTemplate(tx, actor.orgId, id))) throw notFound();
  await audit(tx, actor, 'pdf_template.deleted', 'pdf_template', id, {});
  await emit(tx, actor.orgId, 'pdf_template.deleted', { id });
}

// The letterhead.

export function presentLetterhead(l: q.LetterheadRow) {
  return {
    organization_id: l.organization_id,
    name: l.name,
    address_lines: l.address_lines,
    registration_numbers: l.registration_numbers,
    logo: l.logo_asset_key ? { content_type: l.logo_content_type!, sha256: l.logo_sha256! } : null,
    updated_at: l.updated_at,
  };
}

export async function putLetterhead(
  tx: Queryable,
  actor: OrgActor,
  body: { name: string; address_lines?: string[]; registration_numbers?: string[] },
) {
  const tidy = (xs: string[] | undefined) => (xs ?? []).map((x) => x.trim()).filter(Boolean);
  await q.upsertLetterhead(tx, actor.orgId, {
    name: cleanName(body.name),
    address_lines: tidy(body.address_lines),
    registration_numbers: tidy(body.registration_numbers),
  });
  await audit(tx, actor, 'document_letterhead.updated', 'document_letterhead', actor.orgId, {});
  return presentLetterhead(await q.findLetterhead(tx, actor.orgId));
}

/** Largest logo side in pixels: a small file can still declare a huge bitmap (a decompression bomb). */
export const LOGO_MAX_SIDE = 4000;
/** Most pixels a logo may have: decoding it takes 4 bytes a pixel (16 MB here), in the request. */
export const LOGO_MAX_PIXELS = 4_000_000;

export type LogoType = 'image/png' | 'image/jpeg';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The image type by the file's first bytes (what it is, whatever the upload declared), or null. */
export function sniffImage(bytes: Buffer): LogoType | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  return null;
}

/** Width and height from a PNG's IHDR or a JPEG's start-of-frame; null when the header is not readable. */
export function imageSize(bytes: Buffer, type: string): { width: number; height: number } | null {
  if (type === 'image/png') {
    if (bytes.length < 24 || bytes.subarray(12, 16).toString('latin1') !== 'IHDR') return null;
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  let i = 2;
  while (i + 9 < bytes.length) {
    if (bytes[i] !== 0xff) return null;
    const marker = bytes[i + 1]!;
    const len = bytes.readUInt16BE(i + 2);
    // SOF0..SOF15 except DHT (c4), JPG (c8) and DAC (cc) carry the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { height: bytes.readUInt16BE(i + 5), width: bytes.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  return null;
}

const damaged = (why: string) =>
  errors.validation({ file: `the image cannot be read: ${why.slice(0, 160)}` }, 'The logo is damaged or truncated; see fields.');

/**
 * What an uploaded logo is, checked the way the PDF engine will read it: the type by its content (PNG or
 * JPEG), the size from its header within the bounds (413 image_too_large), then every pixel decoded
 * (pngjs with CRC checks, jpeg-js strict), so a truncated or damaged file is 400 before it is stored and
 * can never reach a document. The header's bounds come first: nothing past them is decoded.
 */
export function inspectLogo(bytes: Buffer): { contentType: LogoType; width: number; height: number } {
  const type = sniffImage(bytes);
  if (!type) throw new AppError(415, 'unsupported_media_type', 'The logo must be a PNG or JPEG image (its content is neither).');
  const size = imageSize(bytes, type);
  if (!size || size.width < 1 || size.height < 1) throw damaged('its header gives no size');
  if (size.width > LOGO_MAX_SIDE || size.height > LOGO_MAX_SIDE || size.width * size.height > LOGO_MAX_PIXELS)
    throw new AppError(
      413,
      'image_too_large',
      `The logo may be at most ${LOGO_MAX_SIDE} pixels a side and ${LOGO_MAX_PIXELS.toLocaleString('en')} pixels in all.`,
    );
  let decoded: { width: number; height: number };
  try {
    decoded =
      type === 'image/png'
        ? PNG.sync.read(bytes, { checkCRC: true })
        : jpeg.decode(bytes, { tolerantDecoding: false, maxResolutionInMP: LOGO_MAX_PIXELS / 1e6, maxMemoryUsageInMB: 64 });
  } catch (err) {
    throw damaged((err as Error).message ?? String(err));
  }
  if (decoded.width !== size.width || decoded.height !== size.height) throw damaged('its pixels do not match its header');
  return { contentType: type, ...size };
}
