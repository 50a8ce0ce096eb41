import { DataOf, errors } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import * as q from './queries.ts';
import { createPdfEngine } from './render/engine.ts';
import { AppointmentDocumentBody, Document, DownloadLink, IdParams, RenderFormBody, SignedParams } from './schemas.ts';
import * as svc from './service.ts';
import { SIGNED_PATH_PREFIX, verifyDocumentPath } from './signed-url.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 422, 429);
const tags = ['documents'];
const listOf = (rows: q.DocumentRow[]) => ({ data: rows.map(svc.present) });
const DocumentList = Type.Object({ data: Type.Array(Document) });

/** Staff with documents.view_org, or a patient (its own published documents: row-level security picks them). */
async function reader(request: FastifyRequest): Promise<void> {
  const ctx = request.ctx;
  if (!ctx) throw errors.unauthorized();
  if (!hasPermission(ctx, 'documents.view_org') && !isPatientCaller(ctx))
    throw errors.forbidden('This needs the documents.view_org permission in the organization.');
}

/** The HMAC keys of the folder store's download paths, derived from MASTER_KEYS. */
export const documentUrlKeys = (rt: Runtime) => rt.secrets.derive('document-download-url');

/** Documents (spec 4.5 Documents): form renders, appointment documents, publishing, signed downloads. */
export function documentRoutes(app: FastifyInstance, rt: Runtime): void {
  const engine = createPdfEngine({
    maxPages: rt.config.documents.maxPages,
    timeoutMs: rt.config.documents.renderTimeoutMs,
    workers: rt.config.documents.renderWorkers || undefined,
  });
  app.addHook('onClose', () => engine.close());
  const deps: svc.DocumentDeps = {
    db: rt.db,
    engine,
    assets: rt.assets,
    logger: rt.logger,
    urlKeys: documentUrlKeys(rt),
    publicUrl: rt.config.publicUrl,
    limits: { inlineMaxRows: rt.config.documents.inlineMaxRows, urlTtlSeconds: rt.config.documents.urlTtlSeconds },
  };
  const r = routesOf(app, { tags, errors: errorResponses });

  r.post(
    '/v1/forms/:id/render',
    {
      config: { references: { ':id': 'forms', pdf_template_id: 'pdf_templates' }, idempotent: true },
      onRequest: [requirePermission('pdf_templates.render')],
      schema: {
        operationId: 'renderForm',
        summary: "Render a form into a PDF document with a template's last published version",
        description:
          'Needs pdf_templates.render and a form the caller reads. The same form content and template version give the same document: 201 when made, 200 when it existed. Short forms answer ready; long ones (more answers than DOCUMENT_INLINE_MAX_ROWS) answer queued and render on the worker (GET /v1/documents/{id} shows progress). Honours Idempotency-Key.',
        params: IdParams,
        body: RenderFormBody,
        response: { 200: DataOf(Document), 201: DataOf(Document) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const { data, created } = await svc.renderForm(deps, (fn) => request.inTx(fn), actor, request.params.id, request.body);
      return reply.status(created ? 201 : 200).send({ data });
    },
  );

  r.get(
    '/v1/forms/:id/documents',
    {
      onRequest: [reader],
      schema: {
        operationId: 'listFormDocuments',
        summary: "A form's documents, newest first",
        description: 'documents.view_org, or the patient (its published ones). At most 200; no pagination.',
        params: IdParams,
        response: { 200: DocumentList },
      },
    },
    async (request) => {
      const rows = await request.inTx((tx) => svc.listDocumentsOf(tx, orgIdOf(request), { formId: request.params.id }));
      request.logAccess({ action: 'document.listed', patientIds: rows.map((d) => d.patient_id), targetId: request.params.id });
      return listOf(rows);
    },
  );

  r.post(
    '/v1/appointments/:id/documents',
    {
      config: { references: { ':id': 'appointments', pdf_template_id: 'pdf_templates' }, idempotent: true },
      onRequest: [requirePermission('documents.create')],
      schema: {
        operationId: 'createAppointmentDocument',
        summary: 'Make a visit summary, prescription, report or receipt for an appointment from a template',
        description:
          'Needs documents.create and an appointment the caller reads, tied to a patient (409 appointment_without_patient). The same appointment, text, items and template version give the same document (200). Short ones answer ready; long ones render on the worker. Honours Idempotency-Key.',
        params: IdParams,
        body: AppointmentDocumentBody,
        response: { 200: DataOf(Document), 201: DataOf(Document) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      const { data, created } = await svc.createAppointmentDocument(deps, (fn) => request.inTx(fn), actor, request.params.id, request.body);
      return reply.status(created ? 201 : 200).send({ data });
    },
  );

  r.get(
    '/v1/appointments/:id/documents',
    {
      onRequest: [reader],
      schema: {
        operationId: 'listAppointmentDocuments',
        summary: "An appointment's documents, newest first",
        description: 'documents.view_org, or the patient (its published ones). At most 200; no pagination.',
        params: IdParams,
        response: { 200: DocumentList },
      },
    },
    async (request) => {
      const rows = await request.inTx((tx) => svc.listDocumentsOf(tx, orgIdOf(request), { appointmentId: request.params.id }));
      request.logAccess({ action: 'document.listed', patientIds: rows.map((d) => d.patient_id), targetId: request.params.id });
      return listOf(rows);
    },
  );

  r.get(
    '/v1/documents/:id',
    {
      onRequest: [reader],
      schema: {
        operationId: 'getDocument',
        summary: 'Read a document: its status, progress and what it was made from',
        description: 'documents.view_org, or the patient once it is published to it.',
        params: IdParams,
        response: { 200: DataOf(Document) },
      },
    },
    async (request) => {
      const d = await request.inTx((tx) => svc.getDocument(tx, orgIdOf(request), request.params.id));
      request.logAccess({ action: 'document.read', patientIds: [d.patient_id], targetId: d.id });
      return { data: svc.present(d) };
    },
  );

  r.post(
    '/v1/documents/:id/publish',
    {
      config: { idempotent: true },
      onRequest: [requirePermission('documents.publish')],
      schema: {
        operationId: 'publishDocument',
        summary: 'Publish a ready document to its patient',
        description: 'Needs documents.publish. 409 document_not_ready before its PDF exists. Publishing twice changes nothing.',
        params: IdParams,
        response: { 200: DataOf(Document) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: svc.present(await request.inTx((tx) => svc.publishDocument(tx, actor, request.params.id))) };
    },
  );

  const download = (source: 'any' | 'appointment') => async (request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const d = await request.inTx((tx) => svc.getDocument(tx, orgIdOf(request), id));
    if (source === 'appointment' && d.source !== 'appointment')
      throw errors.notFound('No appointment document with this id in this organization.');
    const link = await svc.downloadUrl(deps, d);
    request.logAccess({ action: 'document.downloaded', patientIds: [d.patient_id], targetId: d.id });
    return { data: link };
  };
  const downloadText =
    "documents.view_org, or the patient once the document is published to it. A URL valid DOCUMENT_URL_TTL_SECONDS: S3 presigned on the bucket store, the API's HMAC-signed path on the folder store. 409 document_not_ready.";
  r.get(
    '/v1/documents/:id/download',
    {
      onRequest: [reader],
      schema: {
        operationId: 'getDocumentDownload',
        summary: 'A short-lived signed URL of any document (form or appointment)',
        description: downloadText,
        params: IdParams,
        response: { 200: DataOf(DownloadLink) },
      },
    },
    download('any'),
  );
  r.get(
    '/v1/appointment-documents/:id/download',
    {
      onRequest: [reader],
      schema: {
        operationId: 'getAppointmentDocumentDownload',
        summary: 'A short-lived signed URL of an appointment document (spec 4.5)',
        description: downloadText,
        params: IdParams,
        response: { 200: DataOf(DownloadLink) },
      },
    },
    download('appointment'),
  );

  // The signed path itself: no bearer token, the signature is the credential (like a presigned S3 URL).
  app.get(
    `${SIGNED_PATH_PREFIX}/:id/:expires/:signature/:name`,
    { config: { public: true }, schema: { hide: true, params: SignedParams } },
    async (request, reply) => {
      const p = request.params as { id: string; expires: string; signature: string };
      const id = p.id.toLowerCase();
      if (!verifyDocumentPath(deps.urlKeys, id, p.expires, p.signature, Math.floor(Date.now() / 1000)))
        throw errors.forbidden('This link is invalid or has expired; ask for a new one.');
      const doc = await rt.db.withScope({ role: 'app_bypass', principalId: null, orgId: null, permissions: [] }, (tx) => q.assetOf(tx, id));
      const stream = doc ? await rt.assets.get(doc.asset_key) : null;
      if (!doc || !stream) throw errors.notFound('The document is no longer available.');
      return reply
        .header('content-type', 'application/pdf')
        .header('content-length', String(doc.size_bytes))
        .header(
          'content-disposition',
          `attachment; filename="${(request.params as { name: string }).name.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
        )
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'private, no-store')
        .send(stream);
    },
  );
}
