import { Readable } from 'node:stream';
import { DataOf, errors, ListOf, Uuid } from '@clinic/http-kit';
import { stringify } from 'csv-stringify';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { recordChange } from '../../platform/audit.ts';
import { hasPermission, scopeOf } from '../../platform/identity/context.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { listAccess, listMyAccess } from './access.ts';
import { AccessEntry, AccessListQuery, AuditExportQuery, AuditListQuery, AuditLog, MyAccessListQuery } from './schemas.ts';
import { CSV_COLUMNS, csvRecord, exportAuditRows, getAuditLog, listAuditLogs, parseAuditFilter } from './service.ts';
import { actorOf, contextOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(401, 403, 404, 422, 429);
const tags = ['audit'];

/**
 * Clinic staff holding the codes read their organization's trail (the one in scope, spec 4.1).
 * Superadmins read the platform-scope trail here; an organization's trail is identifiable tenant data,
 * which they reach only through the console under a break-glass session (spec 4.7), so naming one
 * here answers 403 naming the console route (break_glass_required belongs to the console routes).
 */
function auditGate(...codes: string[]) {
  return async (request: FastifyRequest): Promise<void> => {
    const ctx = request.ctx;
    if (!ctx) throw errors.unauthorized();
    if (ctx.isSuperadmin) {
      if (ctx.orgId) {
        throw errors.forbidden(
          `Superadmins read an organization's audit log at GET /v1/console/organizations/${ctx.orgId}/audit-logs under a break-glass session (scope audit_full).`,
        );
      }
      return;
    }
    for (const code of codes)
      if (!hasPermission(ctx, code)) throw errors.forbidden(`This needs the ${code} permission in the organization.`);
  };
}

/** The trail a caller reads: its organization's, or the platform's for a superadmin. */
const trailOf = (request: FastifyRequest): string | null => (contextOf(request).isSuperadmin ? null : contextOf(request).orgId);

/** GET /v1/audit-logs, /{id} and /export (spec 4.5, 2.7 audit_log.view_org, export.csv). */
export function auditLogRoutes(app: FastifyInstance, rt: Runtime): void {
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/audit-logs',
    {
      onRequest: [auditGate('audit_log.view_org')],
      schema: {
        operationId: 'listAuditLogs',
        summary: "List the organization's audit log",
        description:
          'Needs audit_log.view_org in the organization in scope. Filters: actor_user_id, action, entity_type, entity_id, action_context, break_glass_id, created_at_after/_before. Sort: created_at, action (newest first by default). Entries written under a break-glass session carry action_context break_glass.',
        querystring: AuditListQuery,
        response: { 200: ListOf(AuditLog) },
      },
    },
    async (request) => request.inTx((tx) => listAuditLogs(tx, trailOf(request), request.query)),
  );

  r.get(
    '/v1/audit-logs/export',
    {
      onRequest: [auditGate('export.csv', 'audit_log.view_org')],
      schema: {
        operationId: 'exportAuditLogs',
        summary: 'Export the audit log as CSV (streamed)',
        description: `Needs export.csv and audit_log.view_org. Same filters as the list; newest first; every matching row, streamed. Columns: ${CSV_COLUMNS.join(', ')}. Cells that a spreadsheet would run as a formula are escaped. The export itself is audited.`,
        querystring: AuditExportQuery,
        response: { 200: Type.Unsafe<Readable>({ type: 'string', description: 'text/csv attachment' }) },
      },
    },
    async (request, reply) => {
      const ctx = contextOf(request);
      const orgId = trailOf(request);
      const filter = parseAuditFilter(orgId, request.query);
      await request.inTx((tx) =>
        recordChange(tx, actorOf(request), 'audit_log.exported', { type: 'audit_log', organizationId: orgId }, { filters: request.query }),
      );
      const records = Readable.from(
        (async function* () {
          for await (const row of exportAuditRows(rt.db, scopeOf(ctx), filter)) yield csvRecord(row);
        })(),
      );
      const csv = stringify({ header: true, columns: [...CSV_COLUMNS], escape_formulas: true });
      records.on('error', (err) => {
        // Headers are gone by now: the client sees a cut-off body rather than a clean end.
        request.log.error({ err }, 'audit export failed mid-stream');
        csv.destroy(err);
      });
      records.pipe(csv);
      const day = new Date().toISOString().slice(0, 10);
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="audit-log-${orgId ?? 'platform'}-${day}.csv"`)
        .send(csv);
    },
  );

  r.get(
    '/v1/audit-logs/:id',
    {
      onRequest: [auditGate('audit_log.view_org')],
      schema: {
        operationId: 'getAuditLog',
        summary: 'Read one audit entry',
        description: 'Needs audit_log.view_org; entries of other organizations are 404.',
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(AuditLog) },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getAuditLog(tx, trailOf(request), request.params.id.toLowerCase())) }),
  );

  r.get(
    '/v1/audit-logs/access',
    {
      onRequest: [auditGate('audit_log.view_org')],
      schema: {
        operationId: 'listAccessLogs',
        summary: 'Reads of patient data in the organization (who read whose records)',
        description:
          'Needs audit_log.view_org. One entry per read of patient records, profiles, forms, files or consents by staff, caregivers or under impersonation (a patient reading its own data is not listed). Filters: patient_id, actor_user_id, action, action_context, occurred_at_after/_before. Sort: occurred_at, action (newest first).',
        querystring: AccessListQuery,
        response: { 200: ListOf(AccessEntry) },
      },
    },
    async (request) => {
      const orgId = trailOf(request);
      if (!orgId) throw errors.validation({ 'X-Organization-ID': 'required: name the organization whose reads to list' });
      return request.inTx((tx) => listAccess(tx, orgId, request.query));
    },
  );

  r.get(
    '/v1/me/access-log',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'listMyAccessLog',
        tags: ['me'],
        summary: 'Who read my patient records',
        description:
          "Any signed-in person: the reads of its own patient records by staff, caregivers or under impersonation, at every clinic (or the one in X-Organization-ID). Without the readers' addresses.",
        querystring: MyAccessListQuery,
        response: { 200: ListOf(AccessEntry) },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const orgId = request.headers['x-organization-id'] ? ctx.orgId : null;
      return request.inTx((tx) => listMyAccess(tx, orgId, request.query));
    },
  );
}
