import { DataOf, ErrorResponse, errors, ListOf, listEnvelope, parsePagination, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Runtime } from '../../platform/runtime.ts';
import { AuditListQuery, AuditLog } from '../audit/schemas.ts';
import { listAuditLogs } from '../audit/service.ts';
import { auditUnderSession } from '../break-glass/service.ts';
import { requireBreakGlass, sessionOf } from '../../platform/gates.ts';
import { findPatient, listMembers, listPatients, lookupUser } from './queries.ts';
import { actorOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(401, 403, 404, 410, 422, 429);
const tags = ['console'];
const ORG = '/v1/console/organizations/:org_id';
const gateDoc =
  'Superadmin with an open break-glass session for this organization and scope; otherwise 403 break_glass_required (with the elevation form) or 410 break_glass_expired. Audited with action_context break_glass.';

const Patient = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  user_id: Uuid,
  email: Type.String(),
  profile_shared: Type.Boolean(),
  deleted_at: nullable(Timestamp),
  created_at: Timestamp,
});
const PatientDetail = Type.Object({
  ...Patient.properties,
  preferred_language: nullable(Type.String()),
  last_activity: nullable(Timestamp),
});
const Member = Type.Object({ user_id: Uuid, email: Type.String(), kind: Type.String(), role_code: Type.String(), created_at: Timestamp });
const Lookup = Type.Object({
  user_id: Uuid,
  email: Type.String(),
  affiliations: Type.Array(
    Type.Object({
      organization_id: Uuid,
      organization_name: Type.String(),
      relation: Type.String(),
      role_code: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});
const OrgParams = Type.Object({ org_id: Uuid });
const PageQuery = Type.Object({ page: Type.Optional(Type.String()), limit: Type.Optional(Type.String()) });

/** Identifiable cross-tenant data for superadmins, each route behind its break-glass scope (spec 4.7). */
export function consoleRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = routesOf(app, { tags, errors: errorResponses });
  const config = { orgParam: 'org_id' };

  r.get(
    `${ORG}/patients`,
    {
      config,
      onRequest: [requireBreakGlass('patient_list')],
      schema: {
        operationId: 'consoleListPatients',
        summary: "List an organization's patients (break-glass: patient_list)",
        description: gateDoc,
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: ListOf(Patient) },
      },
    },
    async (request) =>
      request.inTx(async (tx) => {
        const page = parsePagination(request.query);
        const { rows, total } = await listPatients(tx, request.params.org_id, page);
        await auditUnderSession(
          tx,
          actorOf(request),
          sessionOf(request),
          'console.patients_listed',
          { type: 'organization', id: request.params.org_id },
          { page: page.page, count: rows.length },
        );
        return listEnvelope(rows, page, total);
      }),
  );

  r.get(
    `${ORG}/patients/:patient_id`,
    {
      config,
      onRequest: [requireBreakGlass('patient_detail')],
      schema: {
        operationId: 'consoleGetPatient',
        summary: 'Read one patient (break-glass: patient_detail)',
        description: gateDoc,
        params: Type.Object({ org_id: Uuid, patient_id: Uuid }),
        response: { 200: DataOf(PatientDetail) },
      },
    },
    async (request) =>
      request.inTx(async (tx) => {
        const row = await findPatient(tx, request.params.org_id, request.params.patient_id.toLowerCase());
        if (!row) throw errors.notFound('No patient with this id in this organization.');
        await auditUnderSession(tx, actorOf(request), sessionOf(request), 'console.patient_viewed', { type: 'patient', id: row.id });
        return { data: row };
      }),
  );

  r.get(
    `${ORG}/audit-logs`,
    {
      config,
      onRequest: [requireBreakGlass('audit_full')],
      schema: {
        operationId: 'consoleListAuditLogs',
        summary: "Read an organization's full audit log (break-glass: audit_full)",
        description: `${gateDoc} Same filters and sort as GET /v1/audit-logs.`,
        params: OrgParams,
        querystring: AuditListQuery,
        response: { 200: ListOf(AuditLog) },
      },
    },
    async (request) =>
      request.inTx(async (tx) => {
        const list = await listAuditLogs(tx, request.params.org_id, request.query);
        await auditUnderSession(
          tx,
          actorOf(request),
          sessionOf(request),
          'console.audit_log_viewed',
          { type: 'organization', id: request.params.org_id },
          { query: request.query },
        );
        return list;
      }),
  );

  r.get(
    `${ORG}/members`,
    {
      config,
      onRequest: [requireBreakGlass('org_management')],
      schema: {
        operationId: 'consoleListMembers',
        summary: "List an organization's staff (break-glass: org_management)",
        description: gateDoc,
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: ListOf(Member) },
      },
    },
    async (request) =>
      request.inTx(async (tx) => {
        const page = parsePagination(request.query);
        const { rows, total } = await listMembers(tx, request.params.org_id, page);
        await auditUnderSession(
          tx,
          actorOf(request),
          sessionOf(request),
          'console.members_listed',
          { type: 'organization', id: request.params.org_id },
          { page: page.page, count: rows.length },
        );
        return listEnvelope(rows, page, total);
      }),
  );

  r.get(
    `${ORG}/lookup`,
    {
      config,
      onRequest: [requireBreakGlass('cross_org_lookup')],
      schema: {
        operationId: 'consoleLookupUser',
        summary: 'Which organizations a person of this organization belongs to (break-glass: cross_org_lookup)',
        description: `${gateDoc} The email must belong to staff or a patient of the path's organization (404 otherwise); the answer lists every organization the person is tied to.`,
        params: OrgParams,
        querystring: Type.Object({ email: Type.String({ minLength: 3, maxLength: 320 }) }),
        response: { 200: DataOf(Lookup), 400: ErrorResponse },
      },
    },
    async (request) =>
      request.inTx(async (tx) => {
        const found = await lookupUser(tx, request.params.org_id, request.query.email.trim());
        if (!found) throw errors.notFound('No staff member or patient of this organization has this email.');
        await auditUnderSession(
          tx,
          actorOf(request),
          sessionOf(request),
          'console.user_looked_up',
          { type: 'user', id: found.user_id },
          { organizations: found.affiliations.length },
        );
        return { data: found };
      }),
  );
}
