import multipart from '@fastify/multipart';
import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { actorOf, isPatientCaller, orgOf } from '../custom-fields/access.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { addFile, listFormFiles, openFormFile, removeFile, uploadProblem } from './files.ts';
import { CreateFormBody, FileParams, FillFormBody, Form, FormFile, FormListQuery, FormParams, FormSummary } from './schemas.ts';
import * as svc from './service.ts';
import { bearer, contextOf, errorSchemas } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['forms'];

/** A staff permission, or a patient acting on its own forms (ownership; row-level security picks the rows). */
function staffOrOwner(code: string) {
  return async (request: FastifyRequest): Promise<void> => {
    const ctx = request.ctx;
    if (!ctx) throw errors.unauthorized();
    if (!hasPermission(ctx, code) && !isPatientCaller(ctx))
      throw errors.forbidden(`This needs the ${code} permission in the organization.`);
  };
}

const formActor = (request: FastifyRequest) => ({ ...actorOf(request), patientCaller: isPatientCaller(contextOf(request)) });

/** Forms (spec 2.10, 3.5, 4.5): instances that snapshot their fields; pending -> signed; files in the asset store. */
export async function formRoutes(app: FastifyInstance, rt: Runtime): Promise<void> {
  const limits = rt.config.formFiles;
  // Multipart only in this scope: other routes keep accepting JSON alone.
  await app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { fileSize: limits.maxBytes, files: 1, fields: 5, parts: 6, headerPairs: 200 },
      throwFileSizeLimit: true,
    });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();

    r.post(
      '/v1/forms',
      {
        config: { idempotent: true },
        onRequest: [requirePermission('forms.create')],
        schema: {
          operationId: 'createForm',
          tags,
          security: bearer,
          summary: "Create a patient's form from a template's latest published version",
          description:
            'Needs forms.create. Each field is snapshotted at its latest published version. 409 template_out_of_date. Honours Idempotency-Key.',
          body: CreateFormBody,
          response: { 201: DataOf(Form), ...errorResponses },
        },
      },
      async (request, reply) => {
        const actor = formActor(request);
        return reply.status(201).send({ data: await request.inTx((tx) => svc.createForm(tx, actor, request.body)) });
      },
    );

    r.get(
      '/v1/forms',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'listForms',
          tags,
          security: bearer,
          summary: 'List forms (staff: the organization; a patient: its own)',
          description:
            'forms.view_org, or a patient (its own forms). Pagination, sort (created_at, title, status), patient_id, status, form_template_id, created_at_after/_before.',
          querystring: FormListQuery,
          response: { 200: ListOf(FormSummary), ...errorResponses, 422: ErrorResponse },
        },
      },
      async (request) => request.inTx((tx) => svc.listForms(tx, orgOf(contextOf(request)), request.query)),
    );

    r.get(
      '/v1/forms/:id',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'getForm',
          tags,
          security: bearer,
          summary: 'Read a form with its field snapshots and values',
          params: FormParams,
          response: { 200: DataOf(Form), ...errorResponses },
        },
      },
      async (request) => {
        const ctx = contextOf(request);
        return { data: await request.inTx((tx) => svc.getForm(tx, orgOf(ctx), request.params.id, isPatientCaller(ctx))) };
      },
    );

    r.patch(
      '/v1/forms/:id',
      {
        onRequest: [staffOrOwner('forms.fill_org')],
        schema: {
          operationId: 'fillForm',
          tags,
          security: bearer,
          summary: 'Fill values of a pending form',
          description: 'forms.fill_org, or the patient (its own form; private fields are not its to fill). 409 form_signed.',
          params: FormParams,
          body: FillFormBody,
          response: { 200: DataOf(Form), ...errorResponses },
        },
      },
      async (request) => {
        const actor = formActor(request);
        return { data: await request.inTx((tx) => svc.fillForm(tx, actor, request.params.id, request.body)) };
      },
    );

    r.delete(
      '/v1/forms/:id',
      {
        onRequest: [requirePermission('forms.delete_unsigned')],
        schema: {
          operationId: 'deleteForm',
          tags,
          security: bearer,
          summary: 'Delete an unsigned form (soft)',
          description: 'Needs forms.delete_unsigned. 409 form_signed for a signed form.',
          params: FormParams,
          response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses },
        },
      },
      async (request, reply) => {
        const actor = formActor(request);
        await request.inTx((tx) => svc.deleteForm(tx, actor, request.params.id));
        return reply.status(204).send(null);
      },
    );

    r.post(
      '/v1/forms/:id/sign',
      {
        onRequest: [staffOrOwner('forms.sign')],
        schema: {
          operationId: 'signForm',
          tags,
          security: bearer,
          summary: 'Sign a form: it becomes immutable',
          description: 'forms.sign, or the patient (its own form). No body. 409 already_signed; 400 when required fields are empty.',
          params: FormParams,
          response: { 200: DataOf(Form), ...errorResponses },
        },
      },
      async (request) => {
        const actor = formActor(request);
        return { data: await request.inTx((tx) => svc.signForm(tx, actor, request.params.id)) };
      },
    );

    r.post(
      '/v1/forms/:id/files',
      {
        config: { idempotent: true },
        onRequest: [staffOrOwner('forms.fill_org')],
        schema: {
          operationId: 'addFormFile',
          tags,
          security: bearer,
          summary: 'Attach a file to a pending form (multipart field "file")',
          description: `forms.fill_org, or the patient. At most ${limits.maxBytes} bytes (413 file_too_large); types ${limits.types.join(', ')} (415 unsupported_media_type). 409 form_signed. Honours Idempotency-Key: the key names the upload (a multipart body differs on every retry by its boundary, so the bytes are not compared); a retry gets the first file back.`,
          params: FormParams,
          consumes: ['multipart/form-data'],
          response: { 201: DataOf(FormFile), ...errorResponses, 413: ErrorResponse, 415: ErrorResponse },
        },
      },
      async (request, reply) => {
        const actor = formActor(request);
        if (!request.isMultipart()) throw errors.validation({ file: 'send multipart/form-data with one file in the field "file"' });
        try {
          const row = await addFile(request.inTx.bind(request), rt.assets, limits, actor, request.params.id, async () => {
            const part = await request.file();
            return part ? { filename: part.filename, mimetype: part.mimetype, file: part.file } : undefined;
          });
          return reply.status(201).send({ data: row });
        } catch (err) {
          throw uploadProblem(err, limits.maxBytes) ?? err;
        }
      },
    );

    r.get(
      '/v1/forms/:id/files',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'listFormFiles',
          tags,
          security: bearer,
          summary: 'Files attached to a form',
          params: FormParams,
          response: { 200: Type.Object({ data: Type.Array(FormFile) }), ...errorResponses },
        },
      },
      async (request) => ({ data: await request.inTx((tx) => listFormFiles(tx, orgOf(contextOf(request)), request.params.id)) }),
    );

    r.get(
      '/v1/forms/:id/files/:fileId',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'downloadFormFile',
          tags,
          security: bearer,
          summary: 'Download a file of a form',
          params: FileParams,
          response: errorResponses,
        },
      },
      async (request, reply) => {
        const { row, body } = await request.inTx((tx) =>
          openFormFile(tx, rt.assets, orgOf(contextOf(request)), request.params.id, request.params.fileId),
        );
        return reply
          .header('content-type', row.content_type)
          .header('content-length', String(row.size_bytes))
          .header(
            'content-disposition',
            `attachment; filename="${row.filename.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(row.filename)}`,
          )
          .header('x-content-type-options', 'nosniff')
          .send(body as never);
      },
    );

    r.delete(
      '/v1/forms/:id/files/:fileId',
      {
        onRequest: [staffOrOwner('forms.fill_org')],
        schema: {
          operationId: 'deleteFormFile',
          tags,
          security: bearer,
          summary: 'Remove a file from a pending form',
          description: 'forms.fill_org, or the patient. 409 form_signed.',
          params: FileParams,
          response: { 204: Type.Null({ description: 'Removed' }), ...errorResponses },
        },
      },
      async (request, reply) => {
        const actor = formActor(request);
        await removeFile(request.inTx.bind(request), rt.assets, actor, request.params.id, request.params.fileId);
        return reply.status(204).send(null);
      },
    );
  });
}
