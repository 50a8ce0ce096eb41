import { Readable } from 'node:stream';
import { DataOf, errors, ListOf, Uuid } from '@clinic/http-kit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { stringify } from 'csv-stringify';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { insertAudit } from '../../platform/audit.ts';
import { hasPermission, scopeOf } from '../../platform/identity/context.ts';
import type { Runtime } from '../../platform/runtime.ts';
import { AuditExportQuery, AuditListQuery, AuditLog } from './schemas.ts';
import { CSV_COLUMNS, csvRecord, exportAuditRows, getAuditLog, listAuditLogs, parseAuditFilter } from './service.ts';
import { bearer, contextOf, errorSchemas } from '../../platform/route.ts';

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
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/v1/audit-logs',
    {
      onRequest: [auditGate('audit_log.view_org')],
      schema: {
        operationId: 'listAuditLogs',
        tags,
        summary: "List the organization's audit log",
        description:
          'Needs audit_log.view_org in the organization in scope. Filters: actor_user_id, action, entity_type, entity_id, action_context, break_glass_id, created_at_after/_before. Sort: created_at, action (newest first by default). Entries written under a break-glass session carry action_context break_glass.',
        security: bearer,
        querystring: AuditListQuery,
        response: { 200: ListOf(AuditLog), ...errorResponses },
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
        tags,
        summary: 'Export the audit log as CSV (streamed)',
        description: `Needs export.csv and audit_log.view_org. Same filters as the list; newest first; every matching row, streamed. Columns: ${CSV_COLUMNS.join(', ')}. Cells that a spreadsheet would run as a formula are escaped. The export itself is audited.`,
        security: bearer,
        querystring: AuditExportQuery,
        response: { 200: Type.Unsafe<Readable>({ type: 'string', description: 'text/csv attachment' }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const ctx = contextOf(request);
      const orgId = trailOf(request);
      const filter = parseAuditFilter(orgId, request.query);
      await request.inTx((tx) =>
        insertAudit(tx, {
          organizationId: orgId,
          actorUserId: ctx.principalId,
          action: 'audit_log.exported',
          entityType: 'audit_log',
          data: { filters: request.query },
          ip: request.ip,
        }),
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
        tags,
        summary: 'Read one audit entry',
        description: 'Needs audit_log.view_org; entries of other organizations are 404.',
        security: bearer,
        params: Type.Object({ id: Uuid }),
        response: { 200: DataOf(AuditLog), ...errorResponses },
      },
    },
    async (request) => ({ data: await request.inTx((tx) => getAuditLog(tx, trailOf(request), request.params.id.toLowerCase())) }),
  );
}
