import { deleteErasedObjects } from '../me/account-service.ts';
import { DataOf, ErrorResponse, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Runtime } from '../../platform/runtime.ts';
import { createJobRunner } from './export.ts';
import { downloadExport, eraseData, getExport, requestExport, restrictProcessing } from './service.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 429);
const tags = ['gdpr'];

const SUBJECT_DOC =
  'Subject: none (or user_id = the caller) is the caller itself, platform-wide; patient_id is a patient record of the ' +
  "organization in scope (X-Organization-ID), for holders of the permission there, the clinic's part only; user_id of " +
  'someone else is for superadmins only. ';
const subjectFields = {
  patient_id: Type.Optional(Uuid),
  user_id: Type.Optional(Uuid),
};

const Restriction = Type.Object(
  {
    id: Uuid,
    user_id: Uuid,
    organization_id: nullable(Uuid),
    reason: nullable(Type.String()),
    restricted_at: Timestamp,
    restricted_by_principal_id: Uuid,
    lifted_at: nullable(Timestamp),
    lifted_by_principal_id: nullable(Uuid),
  },
  { $id: 'ProcessingRestriction' },
);

const EraseResult = Type.Object(
  {
    user_id: Uuid,
    organization_id: nullable(Uuid),
    anonymised: Type.Boolean({ description: "The account itself was anonymised (false: only the clinic's part was erased)." }),
    withdrawn_consents: Type.Integer(),
    patient_records_deleted: Type.Integer(),
    memberships_removed: Type.Integer(),
  },
  { $id: 'EraseResult' },
);

const ExportJob = Type.Object(
  {
    id: Uuid,
    status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('done'), Type.Literal('failed')]),
    progress: Type.Integer({ minimum: 0, maximum: 100 }),
    subject_user_id: Uuid,
    organization_id: nullable(Uuid),
    requested_by_principal_id: Uuid,
    error: nullable(Type.String()),
    file: nullable(Type.Object({ file_name: Type.String(), bytes: Type.Integer(), sha256: Type.String() })),
    download_url: nullable(Type.String()),
    expires_at: nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'ExportJob' },
);

/**
 * GDPR operations (spec 4.5 Audit and GDPR). Reachable while consents are missing (412 elsewhere):
 * a data subject's rights never depend on accepting new terms.
 */
export function gdprRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags, errors: errorResponses });
  const runner = createJobRunner(rt.db, rt.logger);
  app.addHook('onReady', async () => runner.start());
  app.addHook('onClose', async () => runner.stop());

  r.post(
    '/v1/gdpr/restrict',
    {
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'restrictProcessing',
        summary: "Restrict (or lift the restriction of) processing of a data subject's data",
        description:
          SUBJECT_DOC +
          'patient_id needs gdpr.restrict_processing. restricted true (default) records a restriction, false lifts it (404 when none ' +
          'is active). Feature gates then answer 403 processing_restricted for that person.',
        body: Type.Object(
          {
            ...subjectFields,
            restricted: Type.Optional(Type.Boolean()),
            reason: Type.Optional(nullable(Type.String({ maxLength: 1000 }))),
          },
          { additionalProperties: false },
        ),
        response: { 200: DataOf(Restriction) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => restrictProcessing(tx, actor, request.body)) };
    },
  );

  r.post(
    '/v1/gdpr/erase',
    {
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'eraseData',
        summary: 'Erase (anonymise) a data subject, keeping the consent ledger and audit trail',
        description:
          SUBJECT_DOC +
          "patient_id needs gdpr.erase_data: the clinic's consents are withdrawn, its patient record soft-deleted and emptied " +
          '(contact details, notes, custom fields), unsigned forms emptied and their files removed; signed forms are clinical ' +
          'records the clinic retains, with the name and date of birth that identify them (listed in the gdpr.erased audit entry). The account ' +
          'itself is anonymised only when nothing else links the person to the platform. The caller itself or a superadmin erase ' +
          'the whole account, as DELETE /v1/me (409 last_admin for the last administrator of an organization).',
        body: Type.Object(subjectFields, { additionalProperties: false }),
        response: { 200: DataOf(EraseResult) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      const { outcome, assetKeys } = await request.inTx((tx) => eraseData(tx, actor, request.body));
      await deleteErasedObjects(rt.assets, assetKeys, request.log);
      return { data: outcome };
    },
  );

  r.post(
    '/v1/gdpr/export',
    {
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'exportData',
        summary: "Start a machine-readable export (JSON archive) of a data subject's data",
        description:
          SUBJECT_DOC +
          'patient_id needs gdpr.export_data. 202 with the job; poll GET /v1/gdpr/exports/{id} for status and progress, then ' +
          'download the archive from its download_url (kept 7 days). Honours Idempotency-Key (a retry gets the same job).',
        body: Type.Object(subjectFields, { additionalProperties: false }),
        response: { 202: DataOf(ExportJob) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const job = await request.inTx((tx) => requestExport(tx, actor, request.body));
      runner.kick();
      return reply.status(202).send({ data: job });
    },
  );

  r.get(
    '/v1/gdpr/exports/:id',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'getExport',
        summary: 'Status and progress of an export job',
        description:
          'Readable by whoever requested it, and by holders of gdpr.export_data at the organization it was made for; 404 otherwise.',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(ExportJob) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getExport(tx, request.params.id.toLowerCase())) }),
  );

  r.get(
    '/v1/gdpr/exports/:id/download',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'downloadExport',
        summary: 'Download the JSON archive of a finished export',
        description: 'Same access as getExport. 409 export_not_ready until the job is done; 410 export_expired after expires_at. Audited.',
        params: Type.Object({ id: Uuid }),
        response: {
          200: Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'application/json attachment' }),
          410: ErrorResponse,
        },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const file = await request.inTx((tx) => downloadExport(tx, actor, request.params.id.toLowerCase()));
      return reply
        .header('content-type', 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="${file.fileName}"`)
        .send(file.body);
    },
  );
}
