import type { AssetStore } from '@clinic/assets';
import { readAll } from '@clinic/assets';
import type { Database, Queryable } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import { findAppointment } from '../appointments/queries.ts';
import { findForm } from '../forms/queries.ts';
import { formNotFound, loadForm } from '../forms/service.ts';
import { findPdfTemplate, type PdfTemplateContent, pdfTemplateVersions } from '../pdf-templates/queries.ts';
import { appointmentData, canonical, commonSources, formData, formSnapshot, sha256 } from './data-model.ts';
import * as q from './queries.ts';
import { type PdfEngine, RenderError } from './render/engine.ts';
import { type DocumentData, itemKeysOf, resolve } from './render/layout.ts';
import { downloadName, signDocumentPath } from './signed-url.ts';
import { uuidV7 } from '../../platform/file-store.ts';

/*
 * Documents (docs/documents.md): a row says what a document is made from (a form or an appointment, a
 * published template version, their digest); rendering makes its PDF in the asset store, inline when it
 * is short, on the worker when it is long (the internal event document.render_requested); publishing
 * shows it to its patient; downloads are short-lived signed URLs.
 */

export interface DocumentDeps {
  db: Database;
  engine: PdfEngine;
  assets: AssetStore;
  logger: Logger;
  /** HMAC keys of the folder store's download paths (current first). */
  urlKeys: Buffer[];
  publicUrl: string;
  limits: { inlineMaxRows: number; urlTtlSeconds: number };
}

export type InTx = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;

const notFound = () => errors.notFound('No document with this id in this organization.');
const templateNotFound = () => errors.notFound('No PDF template with this id in this organization.');
const notReady = (d: q.DocumentRow) =>
  new AppError(
    409,
    'document_not_ready',
    `The document is ${d.status}${d.status === 'failed' ? ` (${d.error})` : ''}; it has no PDF yet.`,
    {
      extra: { status: d.status, progress: d.progress },
    },
  );

/** The last published version of a live template of the given side (form or appointment documents). */
async function publishedTemplate(tx: Queryable, orgId: string, id: string, side: 'form' | 'appointment') {
  const row = await findPdfTemplate(tx, orgId, id);
  if (!row) throw templateNotFound();
  const version = await pdfTemplateVersions.find(tx, orgId, id, null);
  if (!version) throw errors.conflict('template_not_published', 'This PDF template has no published version yet; publish it first.');
  const t = version.template;
  if ((t.kind === 'form') !== (side === 'form'))
    throw errors.validation({
      pdf_template_id:
        side === 'form'
          ? `a ${t.kind} template renders appointment documents; forms need a template of kind form`
          : 'a form template renders forms (POST /v1/forms/{id}/render); appointment documents need another kind',
    });
  return { template: t, version: version.version };
}

/** What the response shows of a document (the object key and the render key stay inside). */
export function present(d: q.DocumentRow) {
  return {
    id: d.id,
    organization_id: d.organization_id,
    kind: d.kind,
    source: d.source,
    form_id: d.form_id,
    appointment_id: d.appointment_id,
    patient_id: d.patient_id,
    pdf_template_id: d.pdf_template_id,
    template_version: d.template_version,
    title: d.title,
    source_sha256: d.source_sha256,
    status: d.status,
    progress: d.progress,
    error: d.error,
    size_bytes: d.size_bytes,
    sha256: d.sha256,
    page_count: d.page_count,
    published_at: d.published_at,
    created_at: d.created_at,
    rendered_at: d.rendered_at,
  };
}

const key = (parts: Record<string, unknown>) => sha256(canonical(parts));

/**
 * POST /v1/forms/{id}/render: the document of this form's content with this template version. The same
 * form content (its snapshot digest) and the same template version give the same document, whoever asks:
 * the second call answers the first's row (`created` false).
 */
export async function renderForm(
  deps: DocumentDeps,
  inTx: InTx,
  actor: OrgActor,
  formId: string,
  body: { pdf_template_id: string; title?: string },
) {
  const { row, created, job } = await inTx(async (tx) => {
    const form = await loadForm(tx, actor.orgId, formId);
    const t = await publishedTemplate(tx, actor.orgId, body.pdf_template_id.toLowerCase(), 'form');
    const digest = sha256(canonical(formSnapshot(form.row, form.fields)));
    const result = await q.insertDocument(tx, {
      organization_id: actor.orgId,
      kind: 'form',
      source: 'form',
      form_id: form.row.id,
      appointment_id: null,
      patient_id: form.row.patient_id,
      pdf_template_id: body.pdf_template_id.toLowerCase(),
      template_version: t.version,
      title: body.title?.trim() || t.template.name,
      input: null,
      source_sha256: digest,
      render_key: key({ source: 'form', form_id: form.row.id, digest, template: body.pdf_template_id.toLowerCase(), version: t.version }),
      created_by_principal_id: actor.ctx.principalId,
    });
    await afterInsert(tx, actor, result);
    const rows = form.fields.filter((f) => !f.private).length;
    return { ...result, job: await prepareInline(deps, tx, result.row, rows, { form }) };
  });
  return { data: await settle(deps, inTx, row, job), created };
}

/** POST /v1/appointments/{id}/documents: a visit summary, prescription, report or receipt from a template. */
export async function createAppointmentDocument(
  deps: DocumentDeps,
  inTx: InTx,
  actor: OrgActor,
  appointmentId: string,
  body: { pdf_template_id: string; title?: string; body?: string; items?: Record<string, string>[] },
) {
  const input = { body: body.body ?? '', items: body.items ?? [] };
  const { row, created, job } = await inTx(async (tx) => {
    const a = await q.appointmentFacts(tx, actor.orgId, appointmentId);
    if (!a) throw errors.notFound('No appointment with this id in this organization.');
    if (!a.patient_id)
      throw errors.conflict(
        'appointment_without_patient',
        'This booking is not tied to a patient record yet; tie it first (PATCH /v1/appointments/{id}).',
      );
    const templateId = body.pdf_template_id.toLowerCase();
    const t = await publishedTemplate(tx, actor.orgId, templateId, 'appointment');
    const allowed = itemKeysOf(t.template.layout);
    const bad: Record<string, string> = {};
    input.items.forEach((it, i) => {
      const extra = Object.keys(it).filter((k) => !allowed.has(k));
      if (extra.length)
        bad[`items[${i}]`] = `the template's items have no column ${extra.join(', ')} (it has: ${[...allowed].join(', ') || 'none'})`;
    });
    if (Object.keys(bad).length) throw errors.validation(bad);
    const digest = sha256(canonical({ appointment: a, input }));
    const result = await q.insertDocument(tx, {
      organization_id: actor.orgId,
      kind: t.template.kind,
      source: 'appointment',
      form_id: null,
      appointment_id: a.id,
      patient_id: a.patient_id,
      pdf_template_id: templateId,
      template_version: t.version,
      title: body.title?.trim() || t.template.name,
      input,
      source_sha256: digest,
      render_key: key({ source: 'appointment', appointment_id: a.id, digest, template: templateId, version: t.version }),
      created_by_principal_id: actor.ctx.principalId,
    });
    await afterInsert(tx, actor, result);
    return { ...result, job: await prepareInline(deps, tx, result.row, input.items.length, { appointment: a }) };
  });
  return { data: await settle(deps, inTx, row, job), created };
}

async function afterInsert(tx: Queryable, actor: OrgActor, r: { row: q.DocumentRow; created: boolean }) {
  if (r.row.status === 'failed') await q.requeue(tx, actor.orgId, r.row.id);
  if (!r.created) return;
  const d = r.row;
  await audit(tx, actor, 'document.created', 'document', d.id, {
    kind: d.kind,
    source: d.source,
    form_id: d.form_id,
    appointment_id: d.appointment_id,
    patient_id: d.patient_id,
    pdf_template_id: d.pdf_template_id,
    template_version: d.template_version,
    source_sha256: d.source_sha256,
  });
  await emit(tx, actor.orgId, 'document.created', {
    id: d.id,
    kind: d.kind,
    patient_id: d.patient_id,
    form_id: d.form_id,
    appointment_id: d.appointment_id,
    pdf_template_id: d.pdf_template_id,
    template_version: d.template_version,
  });
}

type Job = { template: PdfTemplateContent; data: Built };
/** What is already known in the transaction that made the row (saves reading it again). */
type Known = { form?: Awaited<ReturnType<typeof loadForm>>; appointment?: q.AppointmentFacts };

/**
 * In the transaction that made (or found) a pending row: a short document (at most DOCUMENT_INLINE_MAX_ROWS
 * table rows) gets its data model read there, to be rendered right after commit; a long one is handed to
 * the worker (the internal event document.render_requested) and answered queued.
 */
async function prepareInline(deps: DocumentDeps, tx: Queryable, d: q.DocumentRow, rows: number, known: Known): Promise<Job | null> {
  if (d.status !== 'queued' && d.status !== 'failed') return null;
  if (rows > deps.limits.inlineMaxRows) {
    await emit(tx, d.organization_id, 'document.render_requested', { id: d.id });
    return null;
  }
  return prepare(tx, d, known);
}

async function prepare(tx: Queryable, d: q.DocumentRow, known: Known = {}): Promise<Job> {
  const version = await pdfTemplateVersions.find(tx, d.organization_id, d.pdf_template_id, d.template_version);
  if (!version) throw new Error(`template version ${d.template_version} of ${d.pdf_template_id} is missing`);
  return { template: version.template, data: await dataOf(tx, d, known) };
}

/** After the row's commit: the prepared document rendered now (the answer carries it ready), or the row as it is. */
async function settle(deps: DocumentDeps, inTx: InTx, row: q.DocumentRow, job: Job | null) {
  if (!job) return present(row.status === 'failed' ? { ...row, status: 'queued', progress: 0, error: null } : row);
  return present(await finish(deps, inTx, { ...row, status: 'queued' }, job, false));
}

/**
 * Renders one queued document on the worker: its sources are read again (the digest must still match: an
 * unsigned form changed in between is not printed under the old digest), laid out, stored, then the row is
 * marked ready in the transaction that checks it is still pending (a concurrent render of the same row
 * stores its own object, which the orphan sweep removes). Progress: 10 reading, 40 laying out, 80
 * storing, 100 ready. A document already ready or failed is left as it is (events arrive at least once).
 */
export async function renderNow(deps: DocumentDeps, inTx: InTx, orgId: string, id: string): Promise<q.DocumentRow> {
  const prepared = await inTx(async (tx) => {
    const d = await q.findDocument(tx, orgId, id);
    if (!d) throw notFound();
    if (d.status === 'ready' || d.status === 'failed') return { d, job: null };
    await q.setProgress(tx, orgId, id, 'rendering', 10);
    return { d, job: await prepare(tx, d) };
  });
  if (!prepared.job) return prepared.d;
  return finish(deps, inTx, prepared.d, prepared.job, true);
}

/** Lays out, stores and marks ready (or failed) a prepared document; progress rows only on the worker. */
async function finish(deps: DocumentDeps, inTx: InTx, d: q.DocumentRow, job: Job, progress: boolean): Promise<q.DocumentRow> {
  const { organization_id: orgId, id } = d;
  const built = job.data;
  const reread = () => inTx(async (tx) => (await q.findDocument(tx, orgId, id)) ?? d);
  if ('stale' in built) {
    await inTx((tx) => q.markFailed(tx, orgId, id, built.stale));
    return reread();
  }
  try {
    const logo = built.logoKey ? await readLogo(deps, id, built.logoKey, built.logoType!) : null;
    if (progress) await inTx((tx) => q.setProgress(tx, orgId, id, 'rendering', 40));
    const out = await deps.engine.render(resolve(job.template.layout, d.title, built.data), { logo, timestamp: new Date() });
    if (out.logoError)
      deps.logger.warn({ document: id, logo: built.logoKey, error: out.logoError }, 'letterhead logo unreadable: document made without it');
    const assetKey = `orgs/${orgId}/documents/${id}/${uuidV7()}`;
    if (progress) await inTx((tx) => q.setProgress(tx, orgId, id, 'rendering', 80));
    await deps.assets.put(assetKey, out.pdf, { contentType: 'application/pdf' });
    const ready = await inTx((tx) =>
      q.markReady(tx, orgId, id, { asset_key: assetKey, size_bytes: out.pdf.length, sha256: sha256(out.pdf), page_count: out.pages }),
    );
    if (ready) return ready;
    await deps.assets.delete(assetKey).catch(() => undefined);
    return reread();
  } catch (err) {
    if (!(err instanceof RenderError)) throw err;
    deps.logger.warn({ document: id, reason: err.reason }, 'document render failed');
    await inTx((tx) => q.markFailed(tx, orgId, id, err.message));
    return reread();
  }
}

/** The letterhead's logo, or null when it cannot be read: the document is made without it, never failed. */
async function readLogo(deps: DocumentDeps, document: string, key: string, type: 'image/png' | 'image/jpeg') {
  try {
    const stream = await deps.assets.get(key);
    return stream ? { bytes: await readAll(stream), contentType: type } : null;
  } catch (err) {
    deps.logger.warn({ document, logo: key, err }, 'letterhead logo unreadable: document made without it');
    return null;
  }
}

type Built = { data: DocumentData; logoKey: string | null; logoType: 'image/png' | 'image/jpeg' | null } | { stale: string };

/** The data model of a document from its sources, as they are now. */
async function dataOf(tx: Queryable, d: q.DocumentRow, known: Known = {}): Promise<Built> {
  const sources = await commonSources(tx, d.organization_id, d.patient_id);
  const meta = { id: d.id, title: d.title, date: new Date() };
  const logo = { logoKey: sources.letterhead.logo_asset_key, logoType: sources.letterhead.logo_content_type };
  if (d.source === 'form') {
    const form = known.form ?? (await loadForm(tx, d.organization_id, d.form_id!));
    const digest = sha256(canonical(formSnapshot(form.row, form.fields)));
    if (digest !== d.source_sha256) return { stale: 'The form changed after this document was asked for; render it again.' };
    const signerName = form.row.signed_by_principal_id
      ? form.row.signed_by_principal_id === sources.patient.user_id
        ? [sources.patient.first_name, sources.patient.last_name].filter(Boolean).join(' ') || null
        : await q.principalName(tx, d.organization_id, form.row.signed_by_principal_id)
      : null;
    return { data: formData(sources, meta, { ...form, signerName, snapshotSha256: digest }), ...logo };
  }
  const a = known.appointment ?? (await q.appointmentFacts(tx, d.organization_id, d.appointment_id!));
  if (!a) return { stale: 'The appointment is gone.' };
  return { data: appointmentData(sources, meta, a, d.input ?? {}), ...logo };
}

export async function getDocument(tx: Queryable, orgId: string, id: string) {
  const d = await q.findDocument(tx, orgId, id);
  if (!d) throw notFound();
  return d;
}

/** POST /v1/documents/{id}/publish: the patient (and its caregivers) may read and download it from now on. */
export async function publishDocument(tx: Queryable, actor: OrgActor, id: string) {
  const d = await q.findDocument(tx, actor.orgId, id, { forUpdate: true });
  if (!d) throw notFound();
  if (d.status !== 'ready') throw notReady(d);
  if (d.published_at) return d;
  await q.publish(tx, actor.orgId, id, actor.ctx.principalId);
  await audit(tx, actor, 'document.published', 'document', id, { patient_id: d.patient_id, kind: d.kind });
  await emit(tx, actor.orgId, 'document.published', { id, kind: d.kind, patient_id: d.patient_id });
  return (await q.findDocument(tx, actor.orgId, id))!;
}

/**
 * A short-lived download URL of a ready document the caller may read (row-level security: staff with
 * documents.view_org, the patient only once published). The bucket store presigns; the folder store
 * gets the API's signed path.
 */
export async function downloadUrl(deps: DocumentDeps, d: q.DocumentRow): Promise<{ url: string; expires_at: Date }> {
  if (d.status !== 'ready' || !d.asset_key) throw notReady(d);
  const ttl = deps.limits.urlTtlSeconds;
  const expires = Math.floor(Date.now() / 1000) + ttl;
  const name = downloadName(d.title);
  const url = deps.assets.signedGetUrl
    ? await deps.assets.signedGetUrl(d.asset_key, {
        expiresInSeconds: ttl,
        contentType: 'application/pdf',
        contentDisposition: `attachment; filename="${name}"`,
      })
    : null;
  if (url) return { url, expires_at: new Date(expires * 1000) };
  return { url: `${deps.publicUrl}${signDocumentPath(deps.urlKeys, d.id, expires, name)}`, expires_at: new Date(expires * 1000) };
}

/**
 * The documents of a form or an appointment. An unknown parent, another clinic's or one the caller may not read is
 * 404, as reading the parent itself is, never an empty page; a reader whose permission shows it the documents of a
 * parent it may not read itself (documents.view_org, a specialist's colleague's appointment) still gets them. Both
 * statements go at once (one round trip).
 */
export async function listDocumentsOf(tx: Queryable, orgId: string, parent: { formId: string } | { appointmentId: string }) {
  const [visible, rows] = await Promise.all([
    'formId' in parent ? findForm(tx, orgId, parent.formId) : findAppointment(tx, orgId, parent.appointmentId),
    q.listDocuments(tx, orgId, parent),
  ]);
  if (!visible && !rows.length)
    throw 'formId' in parent ? formNotFound() : errors.notFound('No appointment with this id in this organization.');
  return rows;
}
