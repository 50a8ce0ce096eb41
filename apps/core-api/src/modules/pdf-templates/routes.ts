import { createHash } from 'node:crypto';
import type { AssetStore } from '@clinic/assets';
import { AppError, DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { acceptUploads, fileTooLarge, receiveUpload, uuidV7 } from '../../platform/file-store.ts';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { versionRoutes } from '../../platform/versioned/routes.ts';
import { audit } from '../../platform/audit.ts';
import { placeholderCatalog } from '../documents/render/layout.ts';
import * as q from './queries.ts';
import {
  CreatePdfTemplateBody,
  Letterhead,
  PdfTemplate,
  PdfTemplateIdParams,
  PdfTemplateListQuery,
  PdfTemplateVersion,
  Placeholder,
  PutLetterheadBody,
  UpdatePdfTemplateBody,
} from './schemas.ts';
import * as svc from './service.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['pdf-templates'];
const manage = requirePermission('pdf_templates.manage');
const LOGO_TYPES = ['image/png', 'image/jpeg'];

/** Readers: pdf_templates.view_published (they see published versions) or .manage (drafts too). */
async function read(request: FastifyRequest): Promise<void> {
  const ctx = contextOf(request);
  if (!hasPermission(ctx, 'pdf_templates.view_published') && !hasPermission(ctx, 'pdf_templates.manage'))
    throw errors.forbidden('This needs the pdf_templates.view_published permission in the organization.');
}
const isManager = (request: FastifyRequest) => hasPermission(contextOf(request), 'pdf_templates.manage');

/** PDF templates with publish / versions / rollback (spec 4.5, 9.6) and the organization's letterhead. */
export async function pdfTemplateRoutes(app: FastifyInstance, deps: { assets: AssetStore; logoMaxBytes: number }): Promise<void> {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/pdf-templates/placeholders',
    {
      onRequest: [read],
      schema: {
        operationId: 'listPdfTemplatePlaceholders',
        summary: 'The data model: every placeholder a layout may name, with the kinds that have it',
        response: { 200: Type.Object({ data: Type.Array(Placeholder) }) },
      },
    },
    async () => ({ data: placeholderCatalog() }),
  );

  r.post(
    '/v1/pdf-templates',
    {
      config: { idempotent: true },
      onRequest: [manage],
      schema: {
        operationId: 'createPdfTemplate',
        summary: 'Create a PDF template (published, version 1)',
        description:
          'Needs pdf_templates.manage. The layout is checked against the data model of its kind (400 naming each unknown placeholder). Honours Idempotency-Key.',
        body: CreatePdfTemplateBody,
        response: { 201: DataOf(PdfTemplate) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      return reply.status(201).send({ data: await request.inTx((tx) => svc.createPdfTemplate(tx, actor, request.body as never)) });
    },
  );

  r.get(
    '/v1/pdf-templates',
    {
      onRequest: [read],
      schema: {
        operationId: 'listPdfTemplates',
        summary: 'List PDF templates',
        description:
          'pdf_templates.view_published (each as its last published version) or .manage (drafts as they are). Pagination, sort (name, created_at), kind, published, q, created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted templates too.',
        querystring: PdfTemplateListQuery,
        response: { 200: ListOf(PdfTemplate), 422: ErrorResponse },
      },
    },
    async (request) => {
      const includeDeleted = includeDeletedOf(request);
      return request.inTx((tx) => svc.listPdfTemplates(tx, orgIdOf(request), request.query, isManager(request), includeDeleted));
    },
  );

  r.get(
    '/v1/pdf-templates/:id',
    {
      onRequest: [read],
      schema: {
        operationId: 'getPdfTemplate',
        summary: 'Read a PDF template',
        params: PdfTemplateIdParams,
        response: { 200: DataOf(PdfTemplate) },
      },
    },
    async (request) => ({
      data: await request.inTx((tx) => svc.getPdfTemplate(tx, orgIdOf(request), request.params.id, isManager(request))),
    }),
  );

  r.patch(
    '/v1/pdf-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'updatePdfTemplate',
        summary: 'Edit the template as a draft (same version)',
        params: PdfTemplateIdParams,
        body: UpdatePdfTemplateBody,
        response: { 200: DataOf(PdfTemplate) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.updatePdfTemplate(tx, actor, request.params.id, request.body as never)) };
    },
  );

  r.delete(
    '/v1/pdf-templates/:id',
    {
      onRequest: [manage],
      schema: {
        operationId: 'deletePdfTemplate',
        summary: 'Delete a PDF template (soft); documents made from it stay',
        params: PdfTemplateIdParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      const actor = orgActorOf(request);
      await request.inTx((tx) => svc.deletePdfTemplate(tx, actor, request.params.id));
      return reply.status(204).send(null);
    },
  );

  versionRoutes(r, {
    base: '/v1/pdf-templates',
    manage,
    read,
    text: {
      publish: {
        operationId: 'publishPdfTemplate',
        summary: 'Publish the draft as the next version',
        description: 'Placeholders are checked again. 409 already_published when there is no draft.',
      },
      rollback: { operationId: 'rollbackPdfTemplate', summary: 'Restore a version as the draft' },
      listVersions: { operationId: 'listPdfTemplateVersions', summary: 'Published versions, newest first' },
      getVersion: { operationId: 'getPdfTemplateVersion', summary: 'One published version' },
    },
    schemas: { resource: PdfTemplate, version: PdfTemplateVersion },
    actorOf: orgActorOf,
    orgOf: orgIdOf,
    service: svc.pdfTemplateLifecycle,
  });

  r.get(
    '/v1/document-letterhead',
    {
      onRequest: [read],
      schema: {
        operationId: 'getDocumentLetterhead',
        summary: "The organization's letterhead (its name alone until one is saved)",
        response: { 200: DataOf(Letterhead) },
      },
    },
    async (request) => ({ data: svc.presentLetterhead(await request.inTx((tx) => q.findLetterhead(tx, orgIdOf(request)))) }),
  );

  r.put(
    '/v1/document-letterhead',
    {
      onRequest: [manage],
      schema: {
        operationId: 'putDocumentLetterhead',
        summary: "Set the letterhead's name, address lines and registration numbers",
        body: PutLetterheadBody,
        response: { 200: DataOf(Letterhead) },
      },
    },
    async (request) => {
      const actor = orgActorOf(request);
      return { data: await request.inTx((tx) => svc.putLetterhead(tx, actor, request.body)) };
    },
  );

  // The logo: multipart in its own scope (the other routes take JSON alone).
  await app.register(async (scope) => {
    await acceptUploads(scope, { maxBytes: deps.logoMaxBytes, types: LOGO_TYPES });
    const s = routesOf(scope, { tags, errors: errorSchemas(400, 401, 403, 404, 409, 413, 415, 429) });
    s.put(
      '/v1/document-letterhead/logo',
      {
        onRequest: [manage],
        schema: {
          operationId: 'putDocumentLetterheadLogo',
          summary: 'Upload the letterhead logo (multipart, field "file": PNG or JPEG)',
          description: `At most DOCUMENT_LOGO_MAX_BYTES (413 file_too_large), ${svc.LOGO_MAX_SIDE} pixels a side and ${svc.LOGO_MAX_PIXELS} pixels (413 image_too_large); the type is read from the content; a damaged or truncated image is 400 validation_error (field file); nothing is stored then.`,
          consumes: ['multipart/form-data'],
          response: { 200: DataOf(Letterhead) },
        },
      },
      async (request) => {
        const actor = orgActorOf(request);
        const limits = { maxBytes: deps.logoMaxBytes, types: LOGO_TYPES };
        return receiveUpload(request, limits, async (getUpload) => {
          const upload = await getUpload();
          if (!upload) throw errors.validation({ file: 'send one file in the multipart field "file"' });
          const type = upload.mimetype.toLowerCase().split(';')[0]!.trim();
          if (!LOGO_TYPES.includes(type)) {
            upload.file.resume();
            throw new AppError(415, 'unsupported_media_type', 'The logo must be image/png or image/jpeg.');
          }
          const chunks: Buffer[] = [];
          let size = 0;
          for await (const c of upload.file) {
            size += (c as Buffer).length;
            if (size > deps.logoMaxBytes) throw fileTooLarge(deps.logoMaxBytes);
            chunks.push(c as Buffer);
          }
          if ((upload.file as { truncated?: boolean }).truncated) throw fileTooLarge(deps.logoMaxBytes);
          const bytes = Buffer.concat(chunks);
          // The content decides the type: a JPEG sent as image/png is stored as the JPEG it is.
          const { contentType } = svc.inspectLogo(bytes);
          // A UUIDv7, like every stored file's: the orphan sweep reads the key's age from it (a v4 key was never swept).
          const key = `orgs/${actor.orgId}/letterhead/${actor.orgId}/${uuidV7()}`;
          await deps.assets.put(key, bytes, { contentType });
          const sha256 = createHash('sha256').update(bytes).digest('hex');
          let old: string | null;
          try {
            old = await request.inTx(async (tx) => {
              const previous = await q.setLogo(tx, actor.orgId, { asset_key: key, content_type: contentType, sha256 });
              await audit(tx, actor, 'document_letterhead.logo_set', 'document_letterhead', actor.orgId, {
                sha256,
                content_type: contentType,
              });
              return previous;
            });
          } catch (err) {
            await deps.assets.delete(key).catch(() => undefined);
            throw err;
          }
          if (old) await deps.assets.delete(old).catch(() => undefined);
          return { data: svc.presentLetterhead(await request.inTx((tx) => q.findLetterhead(tx, actor.orgId))) };
        });
      },
    );
  });
}
