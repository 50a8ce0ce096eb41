import { DataOf, Uuid } from '@clinic/http-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requirePermission, requireSuperadmin } from '../../platform/gates.ts';
import type { Runtime } from '../../platform/runtime.ts';
import {
  ConsentGroup,
  ConsentPurpose,
  ConsentRow,
  CreateOrgPurposeBody,
  GrantBody,
  OnboardBody,
  OnboardResult,
  OrgPurposeParams,
  PatientConsentParams,
  PatientParams,
  PublishVersionBody,
  PurposeParams,
  PurposeVersion,
  StaffGrantBody,
  WithdrawBody,
} from './schemas.ts';
import {
  consentCatalog,
  createOrgPurpose,
  grantMine,
  myConsents,
  onboardPatient,
  patientConsents,
  publishVersion,
  staffGrant,
  staffWithdraw,
  withdrawMine,
} from './service.ts';
import { actorOf, contextOf, errorSchemas, routesOf } from '../../platform/route.ts';

const errorResponses = errorSchemas(400, 401, 403, 404, 409, 412, 429);
const tags = ['consents'];

/** Consent purposes, versions and the ledger (spec 2.8, 3.2, 4.6). */
/** Publishing the clinic's privacy notice is organizations.manage_privacy_notice; its other purposes, consents.manage. */
async function publishGate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { code } = request.params as { code?: string };
  await requirePermission(code === 'org_privacy_notice' ? 'organizations.manage_privacy_notice' : 'consents.manage')(request, reply);
}

export function consentRoutes(app: FastifyInstance, rt: Runtime): void {
  void rt;
  const r = routesOf(app, { tags, errors: errorResponses });

  r.get(
    '/v1/consent-purposes',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'listConsentPurposes',
        summary: 'The consent purpose catalog with the latest texts to render',
        description:
          'Every purpose with its latest platform version and, when an organization is in scope (X-Organization-ID), ' +
          "that clinic's latest override; `latest` is the one to show and accept. Any signed-in caller, reachable while " +
          'consents are missing (412 elsewhere). `published_by_principal_id` is shown to those who run a text (the ' +
          "clinic's staff for its overrides, superadmins for platform texts) and is null for everyone else.",
        response: { 200: Type.Object({ data: Type.Array(ConsentPurpose) }) },
      },
    },
    async (request) => {
      const ctx = contextOf(request);
      const reader = { isSuperadmin: ctx.isSuperadmin, isStaffOfOrg: ctx.isStaff };
      return { data: await request.inTx((tx) => consentCatalog(tx, ctx.orgId, reader)) };
    },
  );

  r.post(
    '/v1/organizations/:id/consent-purposes/:code/versions',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [publishGate],
      schema: {
        operationId: 'publishOrgConsentVersion',
        summary: "Publish the clinic's next version of an organization-scope purpose",
        description:
          "Needs organizations.manage_privacy_notice for the clinic's privacy notice (org_privacy_notice), consents.manage for its other purposes. " +
          '409 purpose_not_overridable for platform-scope purposes; 404 for an unknown code. ' +
          'The number continues from the highest platform or clinic version. Honours Idempotency-Key.',
        params: OrgPurposeParams,
        body: PublishVersionBody,
        response: { 201: DataOf(PurposeVersion) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const { id, code } = request.params;
      const row = await request.inTx((tx) => publishVersion(tx, actor, id.toLowerCase(), code, request.body.body_translations));
      return reply.status(201).send({ data: row });
    },
  );

  r.post(
    '/v1/organizations/:id/consent-purposes',
    {
      config: { orgParam: 'id', idempotent: true },
      onRequest: [requirePermission('consents.manage')],
      schema: {
        operationId: 'createOrgConsentPurpose',
        summary: "Create one of the clinic's own treatment_specific_* consent purposes",
        description:
          'Needs consents.manage. The purpose rests on consent, is organization-scope and never required; it belongs to this ' +
          'clinic alone (its texts and grants are there), and its treatment plans may require it. Publish its text with ' +
          'publishOrgConsentVersion. 409 purpose_code_taken (codes are unique platform-wide). Honours Idempotency-Key.',
        params: Type.Object({ id: Uuid }),
        body: CreateOrgPurposeBody,
        response: { 201: DataOf(ConsentPurpose) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const row = await request.inTx((tx) => createOrgPurpose(tx, actor, request.params.id.toLowerCase(), request.body));
      return reply.status(201).send({ data: row });
    },
  );

  r.post(
    '/v1/admin/consent-purposes/:code/versions',
    {
      config: { idempotent: true },
      onRequest: [requireSuperadmin()],
      schema: {
        operationId: 'publishPlatformConsentVersion',
        summary: 'Publish the next platform default version of a purpose (superadmin)',
        description:
          'Superadmins only. Publishing a new version of a required purpose makes every caller accept it again (412 consent_required).',
        params: PurposeParams,
        body: PublishVersionBody,
        response: { 201: DataOf(PurposeVersion) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const row = await request.inTx((tx) => publishVersion(tx, actor, null, request.params.code, request.body.body_translations));
      return reply.status(201).send({ data: row });
    },
  );

  r.get(
    '/v1/me/consents',
    {
      config: { consentExempt: true },
      schema: {
        operationId: 'listMyConsents',
        summary: "The caller's consents, grouped by organization and purpose",
        description:
          'Platform-scope purposes, the organization-scope purposes of every clinic where the caller is a patient, and any ' +
          'other (organization, purpose) the caller has rows for. `current` is the latest active row (null when none).',
        response: { 200: Type.Object({ data: Type.Array(ConsentGroup) }) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      return { data: await request.inTx((tx) => myConsents(tx, actor)) };
    },
  );

  r.post(
    '/v1/me/consents',
    {
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'grantMyConsents',
        summary: 'Grant consents (the caller for itself); the batch is atomic',
        description:
          '201 with the inserted rows. purpose_version must be the latest published version (400 validation_error otherwise). ' +
          'source_form_id only with source form. Organization grants need the caller to be a patient there (403).',
        body: GrantBody,
        response: { 201: Type.Object({ data: Type.Array(ConsentRow) }) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const grants = request.body.grants.map((g) => ({ ...g, organization_id: g.organization_id?.toLowerCase() ?? null }));
      const rows = await request.inTx((tx) => grantMine(tx, actor, grants));
      return reply.status(201).send({ data: rows });
    },
  );

  r.post(
    '/v1/me/consents/:id/withdraw',
    {
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'withdrawMyConsent',
        summary: "Withdraw one of the caller's active consents",
        description:
          '409 not_withdrawable when the purpose does not rest on consent; 404 not_found when no active row of the caller has this id.',
        params: Type.Object({ id: Uuid }),
        body: WithdrawBody,
        response: { 200: DataOf(ConsentRow) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      const reason = request.body.withdrawal_reason ?? null;
      return { data: await request.inTx((tx) => withdrawMine(tx, actor, request.params.id.toLowerCase(), reason)) };
    },
  );

  r.post(
    '/v1/portal/onboard',
    {
      // Reachable while platform terms are pending: the same batch may accept them.
      config: { consentExempt: true, idempotent: true },
      schema: {
        operationId: 'onboardPatient',
        summary: 'Become a patient of a clinic, with the initial consents, in one transaction',
        description:
          '409 privacy_notice_missing when the clinic has not published its own org_privacy_notice. The grants must accept the ' +
          "latest version of the clinic's required purposes (400 validation_error otherwise). A soft-deleted patient record is " +
          'revived; an existing one is kept (patient_status tells which). Honours Idempotency-Key.',
        body: OnboardBody,
        response: { 201: DataOf(OnboardResult) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const orgId = request.body.organization_id.toLowerCase();
      const grants = request.body.grants.map((g) => ({ ...g, organization_id: g.organization_id?.toLowerCase() ?? null }));
      const result = await request.inTx((tx) => onboardPatient(tx, actor, orgId, grants));
      return reply.status(201).send({ data: result });
    },
  );

  r.get(
    '/v1/organizations/:org_id/patients/:patient_id/consents',
    {
      config: { orgParam: 'org_id' },
      onRequest: [requirePermission('consents.view_org')],
      schema: {
        operationId: 'listPatientConsents',
        summary: "A patient's consents at the organization (staff)",
        description:
          'Needs consents.view_org. Same shape as GET /v1/me/consents, limited to the organization. patient_id is the patient record id.',
        params: PatientParams,
        response: { 200: Type.Object({ data: Type.Array(ConsentGroup) }) },
      },
    },
    async (request) => {
      const { org_id, patient_id } = request.params;
      const data = await request.inTx((tx) => patientConsents(tx, org_id.toLowerCase(), patient_id.toLowerCase()));
      request.logAccess({ action: 'consents.read', patientIds: [patient_id.toLowerCase()] });
      return { data };
    },
  );

  r.post(
    '/v1/organizations/:org_id/patients/:patient_id/consents/grant',
    {
      config: { orgParam: 'org_id', idempotent: true },
      onRequest: [requirePermission('consents.manage')],
      schema: {
        operationId: 'grantPatientConsents',
        summary: 'Record consents on behalf of a patient (staff); source staff_action',
        description: 'Needs consents.manage. Organization-scope purposes at this organization only; atomic; audit-logged.',
        params: PatientParams,
        body: StaffGrantBody,
        response: { 201: Type.Object({ data: Type.Array(ConsentRow) }) },
      },
    },
    async (request, reply) => {
      const actor = actorOf(request);
      const { org_id, patient_id } = request.params;
      const grants = request.body.grants.map((g) => ({ ...g, organization_id: g.organization_id?.toLowerCase() }));
      const rows = await request.inTx((tx) => staffGrant(tx, actor, org_id.toLowerCase(), patient_id.toLowerCase(), grants));
      return reply.status(201).send({ data: rows });
    },
  );

  r.post(
    '/v1/organizations/:org_id/patients/:patient_id/consents/:id/withdraw',
    {
      config: { orgParam: 'org_id', idempotent: true },
      onRequest: [requirePermission('consents.manage')],
      schema: {
        operationId: 'withdrawPatientConsent',
        summary: "Withdraw a patient's consent (staff)",
        description: 'Needs consents.manage. 409 not_withdrawable; 404 not_found when no active row of this patient here has this id.',
        params: PatientConsentParams,
        body: WithdrawBody,
        response: { 200: DataOf(ConsentRow) },
      },
    },
    async (request) => {
      const actor = actorOf(request);
      const { org_id, patient_id, id } = request.params;
      const reason = request.body.withdrawal_reason ?? null;
      return {
        data: await request.inTx((tx) =>
          staffWithdraw(tx, actor, org_id.toLowerCase(), patient_id.toLowerCase(), id.toLowerCase(), reason),
        ),
      };
    },
  );
}
