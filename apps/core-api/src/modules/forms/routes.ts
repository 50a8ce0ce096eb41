import { DataOf, ErrorResponse, errors, ListOf } from '@clinic/http-kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { includeDeletedOf } from '../../platform/deleted.ts';
import { requirePermission } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { contextOf, errorSchemas, orgActorOf, orgIdOf, routesOf } from '../../platform/route.ts';
import { isPatientCaller } from '../../platform/identity/context.ts';
import { hasPermission } from '../../platform/identity/context.ts';
import { acceptUploads, receiveUpload, sendFile } from '../../platform/file-store.ts';
import { addFile, listFormFiles, openFormFile, removeFile } from './files.ts';
import { CreateFormBody, FileParams, FillFormBody, Form, FormFile, FormListQuery, FormParams, FormSummary } from './schemas.ts';
import * as svc from './service.ts';

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

const formActor = (request: FastifyRequest) => ({ ...orgActorOf(request), patientCaller: isPatientCaller(contextOf(request)) });

/** Forms (spec 2.10, 3.5, 4.5): instances that snapshot their fields; pending -> signed; files in the asset store. */
export async function formRoutes(app: FastifyInstance, rt: Runtime): Promise<void> {
  const limits = rt.config.formFiles;
  // Multipart only in this scope: other routes keep accepting JSON alone.
  await app.register(async (scope) => {
    await acceptUploads(scope, limits);
    const r = routesOf(scope, { tags, errors: errorResponses });

    r.post(
      '/v1/forms',
      {
        config: { references: { form_template_id: 'form_templates', patient_id: 'patients' }, idempotent: true },
        onRequest: [requirePermission('forms.create')],
        schema: {
          operationId: 'createForm',
          summary: "Create a patient's form from a template's latest published version",
          description:
            'Needs forms.create. Each field is snapshotted at its latest published version. 409 template_out_of_date. Honours Idempotency-Key.',
          body: CreateFormBody,
          response: { 201: DataOf(Form) },
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
          summary: 'List forms (staff: the organization; a patient: its own)',
          description:
            'forms.view_org, or a patient (its own forms). Pagination, sort (created_at, title, status), patient_id, status, form_template_id, created_at_after/_before; include_deleted=true (data.view_deleted) lists deleted forms too.',
          querystring: FormListQuery,
          response: { 200: ListOf(FormSummary), 422: ErrorResponse },
        },
      },
      async (request) => {
        const includeDeleted = includeDeletedOf(request);
        const page = await request.inTx((tx) => svc.listForms(tx, orgIdOf(request), request.query, includeDeleted));
        request.logAccess({ action: 'form.listed', patientIds: page.data.map((f) => f.patient_id) });
        return page;
      },
    );

    r.get(
      '/v1/forms/:id',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'getForm',
          summary: 'Read a form with its field snapshots and values',
          params: FormParams,
          response: { 200: DataOf(Form) },
        },
      },
      async (request) => {
        const ctx = contextOf(request);
        const data = await request.inTx((tx) => svc.getForm(tx, orgIdOf(request), request.params.id, isPatientCaller(ctx)));
        request.logAccess({ action: 'form.read', patientIds: [data.patient_id], targetId: data.id });
        return { data };
      },
    );

    r.patch(
      '/v1/forms/:id',
      {
        config: { impersonable: true },
        onRequest: [staffOrOwner('forms.fill_org')],
        schema: {
          operationId: 'fillForm',
          summary: 'Fill values of a pending form',
          description: 'forms.fill_org, or the patient (its own form; private fields are not its to fill). 409 form_signed.',
          params: FormParams,
          body: FillFormBody,
          response: { 200: DataOf(Form) },
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
          summary: 'Delete an unsigned form (soft)',
          description: 'Needs forms.delete_unsigned. 409 form_signed for a signed form.',
          params: FormParams,
          response: { 204: Type.Null({ description: 'Deleted' }) },
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
        config: { idempotent: true },
        onRequest: [staffOrOwner('forms.sign')],
        schema: {
          operationId: 'signForm',
          summary: 'Sign a form: it becomes immutable',
          description: 'forms.sign, or the patient (its own form). No body. 409 already_signed; 400 when required fields are empty.',
          params: FormParams,
          response: { 200: DataOf(Form) },
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
        config: { idempotent: true, impersonable: true },
        onRequest: [staffOrOwner('forms.fill_org')],
        schema: {
          operationId: 'addFormFile',
          summary: 'Attach a file to a pending form (multipart field "file")',
          description: `forms.fill_org, or the patient. At most ${limits.maxBytes} bytes (413 file_too_large); types ${limits.types.join(', ')} (415 unsupported_media_type). 409 form_signed. Honours Idempotency-Key: the key names the upload (a multipart body differs on every retry by its boundary, so the bytes are not compared); a retry gets the first file back.`,
          params: FormParams,
          consumes: ['multipart/form-data'],
          response: { 201: DataOf(FormFile), 413: ErrorResponse, 415: ErrorResponse },
        },
      },
      async (request, reply) => {
        const actor = formActor(request);
        const row = await receiveUpload(request, limits, (getUpload) =>
          addFile(request.inTx.bind(request), rt.assets, limits, actor, request.params.id, getUpload),
        );
        return reply.status(201).send({ data: row });
      },
    );

    r.get(
      '/v1/forms/:id/files',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'listFormFiles',
          summary: 'Files attached to a form',
          params: FormParams,
          response: { 200: Type.Object({ data: Type.Array(FormFile) }) },
        },
      },
      async (request) => {
        const { patientId, files } = await request.inTx((tx) => listFormFiles(tx, orgIdOf(request), request.params.id));
        request.logAccess({ action: 'form_file.listed', patientIds: [patientId], targetId: request.params.id });
        return { data: files };
      },
    );

    r.get(
      '/v1/forms/:id/files/:fileId',
      {
        onRequest: [staffOrOwner('forms.view_org')],
        schema: {
          operationId: 'downloadFormFile',
          summary: 'Download a file of a form',
          params: FileParams,
        },
      },
      async (request, reply) => {
        const { row, body, patientId } = await request.inTx((tx) =>
          openFormFile(tx, rt.assets, orgIdOf(request), request.params.id, request.params.fileId),
        );
        request.logAccess({ action: 'form_file.read', patientIds: [patientId], targetId: row.id });
        return sendFile(reply, row, body);
      },
    );

    r.delete(
      '/v1/forms/:id/files/:fileId',
      {
        config: { impersonable: true },
        onRequest: [staffOrOwner('forms.fill_org')],
        schema: {
          operationId: 'deleteFormFile',
          summary: 'Remove a file from a pending form',
          description: 'forms.fill_org, or the patient. 409 form_signed.',
          params: FileParams,
          response: { 204: Type.Null({ description: 'Removed' }) },
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
