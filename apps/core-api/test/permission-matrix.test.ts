import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import dns2 from 'dns2';
import { startTestApp, uniqueEmail, uniqueSlug, type TestApp } from './helpers.ts';
import { CALLERS, type Fixture, type Fragment, type RequestSpec, type Row } from './matrix/types.ts';

/*
 * Permission matrix through HTTP: every operation of GET /openapi.json, called by each kind of caller,
 * with a request that is valid apart from who sends it, so that the gate alone decides the status.
 *
 * How each expectation derives from the spec:
 * - Public routes (spec 5.2: /health, /v1/public/...; also the readiness probe of 4.3): 200 for everyone,
 *   anonymous included. A token sent to them changes nothing.
 * - Every other route needs a bearer token (spec 5.1): anonymous is 401 unauthorized, before any gate.
 * - Routes open to any signed-in principal (GET/PATCH /v1/me, GET /v1/me/clinics, GET /v1/organizations):
 *   200 for every signed-in caller, whatever their relation to the organization (the list simply shows less).
 * - PUT /v1/me/switch-organization (spec 4.4.7): members of the target (staff, any role) and superadmins 200;
 *   a patient has no membership row (spec 5.7) and a non-member has nothing: 403.
 * - POST /v1/organizations: superadmin only (spec 4.2, RequireSuperadmin): 403 for every other signed-in caller.
 * - GET /v1/organizations/{id}: "authenticated, member" (spec 4.2); a patient has portal access to the
 *   organization (spec 5.7), so staff, patient and superadmin 200, non-member 403.
 * - Permission-gated routes (spec 2.7 default grants; a superadmin passes every permission check, spec 4.2):
 *     admin            organizations.update, manage_domains, manage_members, view_directory,
 *                      data.view_deleted, audit_log.view_org, locations.manage
 *     specialist       organizations.view_directory only
 *     customer_support organizations.view_directory only
 *     patient          no permission codes at all: patient access is by row ownership (spec 2.7, 5.8)
 *     non-member       no permission codes at the organization
 *     other_org_admin  the admin role of ANOTHER organization: its permissions there give nothing here,
 *                      so its column equals non-member's (permissions are loaded for the organization
 *                      the request acts on, never the caller's stored or first one)
 *   so organizations.update (updateOrganization), organizations.manage_members (members and roles
 *   routes), organizations.manage_domains (the four domain routes) and locations.manage (create,
 *   update, delete a location) are 2xx for admin and superadmin and 403 for the rest;
 *   organizations.view_directory (getOrgSettings, listUsers) is 2xx for the three staff roles and
 *   superadmin, 403 for patient and non-member.
 * - Location list and get (spec 4.5: "readable by any staff member"): staff app access exists iff a
 *   membership row exists (spec 5.7), so the three staff roles and superadmin 200, patient and non-member 403.
 * - Consents (spec 2.8, 4.6). consents.view_org and consents.manage are Planned codes (spec 2.7); migration
 *   0008 grants both to the admin template only, so the staff routes (listPatientConsents: view_org;
 *   grantPatientConsents, withdrawPatientConsent, publishOrgConsentVersion: manage) are 2xx for admin and
 *   superadmin, 403 for the rest. publishPlatformConsentVersion publishes the platform default: superadmin
 *   only. The catalog (listConsentPurposes) and the caller's own ledger (listMyConsents) are for any
 *   signed-in caller, rows by ownership. The caller's own grants and withdrawals are decided by ownership,
 *   not by permission codes (spec 2.7, 5.8, 5.9), so a superadmin gets no more than anyone else:
 *   grantMyConsents of an organization-scope purpose at the organization under test needs a patient row
 *   there (patient 201; everyone else 403, service rule "organization grants need the caller to be a
 *   patient there"); withdrawMyConsent of the patient's active row is 200 for the patient and 404
 *   not_found for everyone else (spec 4.6 rule 2: no active row matches the id for the caller).
 *   The purposes used (marketing_email, marketing_sms) rest on consent and are not required, so publishing
 *   them never turns on the 412 re-consent gate for the other cells.
 * - GDPR (spec 4.5; docs/decisions.md, Consent). Migration 0009 grants gdpr.export_data, gdpr.erase_data
 *   and gdpr.restrict_processing to the admin template. Naming a clinic's patient (patient_id) needs the code at the
 *   organization in scope: restrictProcessing 200, eraseData 200 (a fresh patient each time), exportData 202 for admin
 *   and superadmin, 403 for the rest (the patient included: its own requests name no patient_id). getExport and
 *   downloadExport of the patient's own export job: readable by its requester (patient) and superadmin, 404 for the rest.
 * - Cascades of spec 3.2, last because they end the callers' relations: leaveClinic is 200 for the patient and 404
 *   not_found for everyone else (not a patient there); deleteMe is 204 for everyone but the only admin of an
 *   organization (admin, other_org_admin), who get 409 last_admin.
 * The 2xx code is the route's success status: 201 for creations, 204 for deletions, 200 otherwise.
 * - Break-glass (spec 4.7): the superadmin caller is not staff of the organization under test, so the routes that
 *   answer its identifiable patient data (BREAK_GLASS below, with the session scope each needs) serve it only
 *   under an open session of that organization and scope. The `superadmin` column is the answer under such a
 *   session (the fixture opens one of each scope); every such route also gets a cell for a superadmin without
 *   one: 403 break_glass_required naming the scope. A route outside the list that asks for break-glass fails
 *   its superadmin cell, so the list and the gate agree both ways.
 *
 * New routes fail the first test until they get a row here (and a request in REQUESTS).
 */

// prettier-ignore
const CORE_MATRIX: Record<string, Row> = {
  // Public (spec 5.2).
  getHealth: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 200,
  },
  getReadiness: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 200,
  },
  getSystemInfo: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 200,
  },
  resolveOrganization: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 200,
  },
  // Any signed-in principal.
  getMe: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 401,
  },
  updateMe: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 401,
  },
  listMyClinics: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 401,
  },
  listOrganizations: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 401,
  },
  // Membership of the target (spec 4.4.7).
  switchOrganization: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  // Superadmin only.
  createOrganization: {
    admin: 403,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  // Staff, patient or superadmin.
  getOrganization: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  // organizations.update
  updateOrganization: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  // organizations.view_directory
  getOrgSettings: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  listUsers: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  // organizations.manage_members
  listMembers: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  addMember: {
    admin: 201,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  removeMember: {
    admin: 204,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 204,
    anonymous: 401,
  },
  listRoles: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  createRole: {
    admin: 201,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  updateRole: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  deleteRole: {
    admin: 204,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 204,
    anonymous: 401,
  },
  // organizations.manage_domains
  listDomains: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  addDomain: {
    admin: 201,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  deleteDomain: {
    admin: 204,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 204,
    anonymous: 401,
  },
  verifyDomain: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  // locations.manage
  createLocation: {
    admin: 201,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  updateLocation: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  deleteLocation: {
    admin: 204,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 204,
    anonymous: 401,
  },
  // Staff (membership row) or superadmin (spec 4.5, 5.7).
  listLocations: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  getLocation: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  // Consents (spec 4.6): catalog and own ledger for any signed-in caller.
  listConsentPurposes: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 401,
  },
  listMyConsents: {
    admin: 200,
    specialist: 200,
    customer_support: 200,
    patient: 200,
    non_member: 200,
    other_org_admin: 200,
    superadmin: 200,
    anonymous: 401,
  },
  // Own grants and withdrawals: by ownership (a patient row; the caller's own ledger row).
  grantMyConsents: {
    admin: 403,
    specialist: 403,
    customer_support: 403,
    patient: 201,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 403,
    anonymous: 401,
  },
  withdrawMyConsent: {
    admin: 404,
    specialist: 404,
    customer_support: 404,
    patient: 200,
    non_member: 404,
    other_org_admin: 404,
    superadmin: 404,
    anonymous: 401,
  },
  // consents.view_org / consents.manage (admin template, migration 0008).
  listPatientConsents: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  grantPatientConsents: {
    admin: 201,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  withdrawPatientConsent: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  publishOrgConsentVersion: {
    admin: 201,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  // Superadmin only.
  publishPlatformConsentVersion: {
    admin: 403,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 201,
    anonymous: 401,
  },
  // The clinic under test never publishes org_privacy_notice (it would turn on the 412 gate for its patient's cells):
  // onboarding is refused for every signed-in caller (spec 4.6 rule 5).
  // Anyone signed in may onboard; the body leaves out the clinic's privacy notice, so every caller gets
  // 400 and nobody becomes a patient (later rows rely on who is a patient).
  onboardPatient: {
    admin: 400,
    specialist: 400,
    customer_support: 400,
    patient: 400,
    non_member: 400,
    other_org_admin: 400,
    superadmin: 400,
    anonymous: 401,
  },
  // gdpr.* (admin template, migration 0009) when naming a patient of the organization in scope.
  restrictProcessing: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  eraseData: {
    admin: 200,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 200,
    anonymous: 401,
  },
  exportData: {
    admin: 202,
    specialist: 403,
    customer_support: 403,
    patient: 403,
    non_member: 403,
    other_org_admin: 403,
    superadmin: 202,
    anonymous: 401,
  },
  // The patient's own export job: its requester and superadmins.
  getExport: {
    admin: 404,
    specialist: 404,
    customer_support: 404,
    patient: 200,
    non_member: 404,
    other_org_admin: 404,
    superadmin: 200,
    anonymous: 401,
  },
  downloadExport: {
    admin: 404,
    specialist: 404,
    customer_support: 404,
    patient: 200,
    non_member: 404,
    other_org_admin: 404,
    superadmin: 200,
    anonymous: 401,
  },
  // Cascades (spec 3.2): last, they end the callers' relations. A patient there / anyone but an organization's only admin.
  leaveClinic: {
    admin: 404,
    specialist: 404,
    customer_support: 404,
    patient: 200,
    non_member: 404,
    other_org_admin: 404,
    superadmin: 404,
    anonymous: 401,
  },
  deleteMe: {
    admin: 409,
    specialist: 204,
    customer_support: 204,
    patient: 204,
    non_member: 204,
    other_org_admin: 409,
    superadmin: 204,
    anonymous: 401,
  },
};

const hex = () => randomBytes(5).toString('hex');
const uniqueDomain = () => `matrix-${hex()}.clinic-example.test`;
const ORG = '/v1/organizations/{id}';

// Fresh resources, made by a superadmin, for the cells that would change or delete a shared one.
const freshMember = async (f: Fixture) =>
  (await f.setup('POST', `/v1/organizations/${f.orgId}/members`, { email: uniqueEmail('matrix-member'), role_code: 'specialist' }))
    .user_id as string;
const freshRole = async (f: Fixture) =>
  (
    await f.setup('POST', `/v1/organizations/${f.orgId}/roles`, {
      code: `matrix_${hex()}`,
      name: 'Matrix role',
      permissions: ['organizations.view_directory'],
    })
  ).id as string;
const freshDomain = async (f: Fixture) =>
  (await f.setup('POST', `/v1/organizations/${f.orgId}/domains`, { domain: uniqueDomain() })).id as string;
/** A fresh active consent row of the patient caller, granted by the patient itself. */
const freshPatientConsent = async (f: Fixture) =>
  (
    await f.setup(
      'POST',
      '/v1/me/consents',
      { grants: [{ organization_id: f.orgId, purpose_code: 'marketing_email', purpose_version: f.emailVersion, source: 'self_toggle' }] },
      f.tokens.patient,
    )
  )[0].id as string;
const freshLocation = async (f: Fixture) =>
  (await f.setup('POST', `/v1/organizations/${f.orgId}/locations`, { name: `Matrix ${hex()}`, timezone: 'Europe/Bucharest' })).id as string;

const CORE_REQUESTS: Record<string, RequestSpec> = {
  getHealth: { method: 'GET', path: '/health' },
  getReadiness: { method: 'GET', path: '/health/ready' },
  getSystemInfo: { method: 'GET', path: '/v1/public/system-info' },
  resolveOrganization: { method: 'GET', path: '/v1/public/organizations/resolve', prepare: (f) => ({ query: `slug=${f.orgSlug}` }) },
  getMe: { method: 'GET', path: '/v1/me' },
  updateMe: { method: 'PATCH', path: '/v1/me', prepare: () => ({ body: { preferred_language: 'ro' } }) },
  listMyClinics: { method: 'GET', path: '/v1/me/clinics' },
  listOrganizations: { method: 'GET', path: '/v1/organizations' },
  switchOrganization: { method: 'PUT', path: '/v1/me/switch-organization', prepare: (f) => ({ body: { organization_id: f.orgId } }) },
  createOrganization: {
    method: 'POST',
    path: '/v1/organizations',
    prepare: () => ({ body: { name: 'Matrix clinic', slug: uniqueSlug('matrix') } }),
  },
  getOrganization: { method: 'GET', path: ORG },
  updateOrganization: { method: 'PATCH', path: ORG, prepare: () => ({ body: { name: `Matrix clinic ${hex()}` } }) },
  getOrgSettings: { method: 'GET', path: `${ORG}/settings` },
  // No organization in the path: the organization in scope comes from X-Organization-ID (spec 4.1).
  listUsers: { method: 'GET', path: '/v1/users', prepare: (f) => ({ headers: { 'x-organization-id': f.orgId } }) },
  listMembers: { method: 'GET', path: `${ORG}/members` },
  addMember: {
    method: 'POST',
    path: `${ORG}/members`,
    prepare: () => ({ body: { email: uniqueEmail('matrix-added'), role_code: 'specialist' } }),
  },
  removeMember: { method: 'DELETE', path: `${ORG}/members/{userId}`, prepare: async (f) => ({ params: { userId: await freshMember(f) } }) },
  listRoles: { method: 'GET', path: `${ORG}/roles` },
  createRole: {
    method: 'POST',
    path: `${ORG}/roles`,
    prepare: () => ({ body: { code: `matrix_${hex()}`, name: 'Matrix role', permissions: ['organizations.view_directory'] } }),
  },
  updateRole: {
    method: 'PATCH',
    path: `${ORG}/roles/{roleId}`,
    prepare: (f) => ({ params: { roleId: f.roleId }, body: { name: `Renamed ${hex()}` } }),
  },
  deleteRole: { method: 'DELETE', path: `${ORG}/roles/{roleId}`, prepare: async (f) => ({ params: { roleId: await freshRole(f) } }) },
  listDomains: { method: 'GET', path: `${ORG}/domains` },
  addDomain: { method: 'POST', path: `${ORG}/domains`, prepare: () => ({ body: { domain: uniqueDomain() } }) },
  deleteDomain: {
    method: 'DELETE',
    path: `${ORG}/domains/{domainId}`,
    prepare: async (f) => ({ params: { domainId: await freshDomain(f) } }),
  },
  // The test DNS server answers NXDOMAIN: the check runs and says "not verified", 200.
  verifyDomain: { method: 'POST', path: `${ORG}/domains/{domainId}/verify`, prepare: (f) => ({ params: { domainId: f.domainId } }) },
  createLocation: {
    method: 'POST',
    path: `${ORG}/locations`,
    prepare: () => ({ body: { name: `Matrix ${hex()}`, timezone: 'Europe/Bucharest' } }),
  },
  listLocations: { method: 'GET', path: `${ORG}/locations` },
  getLocation: { method: 'GET', path: `${ORG}/locations/{locationId}`, prepare: (f) => ({ params: { locationId: f.locationId } }) },
  updateLocation: {
    method: 'PATCH',
    path: `${ORG}/locations/{locationId}`,
    prepare: (f) => ({ params: { locationId: f.locationId }, body: { city: `City ${hex()}` } }),
  },
  deleteLocation: {
    method: 'DELETE',
    path: `${ORG}/locations/{locationId}`,
    prepare: async (f) => ({ params: { locationId: await freshLocation(f) } }),
  },
  listConsentPurposes: { method: 'GET', path: '/v1/consent-purposes' },
  listMyConsents: { method: 'GET', path: '/v1/me/consents' },
  grantMyConsents: {
    method: 'POST',
    path: '/v1/me/consents',
    prepare: (f) => ({
      body: {
        grants: [{ organization_id: f.orgId, purpose_code: 'marketing_email', purpose_version: f.emailVersion, source: 'self_toggle' }],
      },
    }),
  },
  withdrawMyConsent: {
    method: 'POST',
    path: '/v1/me/consents/{id}/withdraw',
    prepare: async (f) => ({ params: { id: await freshPatientConsent(f) }, body: { withdrawal_reason: 'matrix' } }),
  },
  listPatientConsents: {
    method: 'GET',
    path: '/v1/organizations/{org_id}/patients/{patient_id}/consents',
    prepare: (f) => ({ params: { patient_id: f.patientRecordId } }),
  },
  grantPatientConsents: {
    method: 'POST',
    path: '/v1/organizations/{org_id}/patients/{patient_id}/consents/grant',
    prepare: (f) => ({
      params: { patient_id: f.patientRecordId },
      body: { grants: [{ purpose_code: 'marketing_email', purpose_version: f.emailVersion }] },
    }),
  },
  withdrawPatientConsent: {
    method: 'POST',
    path: '/v1/organizations/{org_id}/patients/{patient_id}/consents/{id}/withdraw',
    prepare: async (f) => ({ params: { patient_id: f.patientRecordId, id: await freshPatientConsent(f) }, body: {} }),
  },
  // marketing_sms, never marketing_email: a new version would change the one that grants must name.
  publishOrgConsentVersion: {
    method: 'POST',
    path: `${ORG}/consent-purposes/{code}/versions`,
    prepare: () => ({
      params: { code: 'marketing_sms' },
      body: { body_translations: { en: `Clinic SMS text ${hex()}`, ro: `Text SMS ${hex()}` } },
    }),
  },
  onboardPatient: {
    method: 'POST',
    path: '/v1/portal/onboard',
    prepare: (f) => ({
      body: {
        organization_id: f.orgId,
        grants: [{ organization_id: f.orgId, purpose_code: 'marketing_email', purpose_version: f.emailVersion, source: 'signup_checkbox' }],
      },
    }),
  },
  restrictProcessing: {
    method: 'POST',
    path: '/v1/gdpr/restrict',
    prepare: (f) => ({ body: { patient_id: f.patientRecordId, reason: 'matrix' }, headers: { 'x-organization-id': f.orgId } }),
  },
  eraseData: {
    method: 'POST',
    path: '/v1/gdpr/erase',
    prepare: async (f) => ({ body: { patient_id: await f.freshPatientRecord() }, headers: { 'x-organization-id': f.orgId } }),
  },
  exportData: {
    method: 'POST',
    path: '/v1/gdpr/export',
    prepare: (f) => ({ body: { patient_id: f.patientRecordId }, headers: { 'x-organization-id': f.orgId } }),
  },
  getExport: { method: 'GET', path: '/v1/gdpr/exports/{id}', prepare: async (f) => ({ params: { id: await f.patientExportId() } }) },
  downloadExport: {
    method: 'GET',
    path: '/v1/gdpr/exports/{id}/download',
    prepare: async (f) => ({ params: { id: await f.patientExportId() } }),
  },
  leaveClinic: { method: 'POST', path: '/v1/me/clinics/{org_id}/leave' },
  deleteMe: { method: 'DELETE', path: '/v1/me' },
  publishPlatformConsentVersion: {
    method: 'POST',
    path: '/v1/admin/consent-purposes/{code}/versions',
    prepare: () => ({ params: { code: 'marketing_sms' }, body: { body_translations: { en: `Platform SMS text ${hex()}` } } }),
  },
};

/** Operations that answer identifiable patient data, and the break-glass scope each needs (spec 4.7). */
const BREAK_GLASS: Record<string, 'patient_list' | 'patient_detail'> = {
  addAppointmentFile: 'patient_detail',
  addCaregiver: 'patient_detail',
  addFormFile: 'patient_detail',
  cancelEnrollment: 'patient_detail',
  completePlanSession: 'patient_detail',
  createAppointment: 'patient_detail',
  createAppointmentDocument: 'patient_detail',
  createAppointmentReview: 'patient_detail',
  createForm: 'patient_detail',
  createPatient: 'patient_detail',
  deleteAppointment: 'patient_detail',
  deleteAppointmentFile: 'patient_detail',
  deleteForm: 'patient_detail',
  deleteFormFile: 'patient_detail',
  deletePatient: 'patient_detail',
  downloadAppointmentFile: 'patient_detail',
  downloadFormFile: 'patient_detail',
  enrollInTreatmentPlan: 'patient_detail',
  eraseData: 'patient_detail',
  evaluateSegment: 'patient_detail',
  exportData: 'patient_detail',
  fillForm: 'patient_detail',
  getAppointment: 'patient_detail',
  getAppointmentDocumentDownload: 'patient_detail',
  getAppointmentIcs: 'patient_detail',
  getDocument: 'patient_detail',
  getDocumentDownload: 'patient_detail',
  getEnrollment: 'patient_detail',
  getEnrollmentProgress: 'patient_detail',
  getExerciseSession: 'patient_detail',
  getExerciseSessionReplay: 'patient_detail',
  getForm: 'patient_detail',
  getMessage: 'patient_detail',
  getPatient: 'patient_detail',
  getPatientProfile: 'patient_detail',
  getPlanSession: 'patient_detail',
  getTelerehabDashboard: 'patient_list',
  getTodayPlan: 'patient_list',
  grantPatientConsents: 'patient_detail',
  impersonatePatient: 'patient_detail',
  listAppointmentDocuments: 'patient_detail',
  listAppointmentFiles: 'patient_detail',
  listAppointmentReviews: 'patient_detail',
  listAppointments: 'patient_list',
  listCaregivers: 'patient_detail',
  listEnrollments: 'patient_list',
  listFormDocuments: 'patient_detail',
  listFormFiles: 'patient_detail',
  listForms: 'patient_list',
  listMessages: 'patient_list',
  listPatientConsents: 'patient_detail',
  listPatients: 'patient_list',
  listPlanSessions: 'patient_list',
  listSegmentMembers: 'patient_detail',
  migrateEnrollment: 'patient_detail',
  pauseEnrollment: 'patient_detail',
  pickPatients: 'patient_list',
  publishDocument: 'patient_detail',
  removeCaregiver: 'patient_detail',
  renderForm: 'patient_detail',
  restrictProcessing: 'patient_detail',
  resumeEnrollment: 'patient_detail',
  signForm: 'patient_detail',
  skipPlanItem: 'patient_detail',
  startExerciseSession: 'patient_detail',
  startPlanSession: 'patient_detail',
  updateAppointment: 'patient_detail',
  updatePatient: 'patient_detail',
  updatePatientProfile: 'patient_detail',
  withdrawPatientConsent: 'patient_detail',
};

/** Operations that end the callers' relations (spec 3.2 cascades): their cells run after every other one. */
const LAST = ['leaveClinic', 'deleteMe'];

/** The module fragments of matrix/ (every file but types.ts), in file-name order. */
async function loadFragments(): Promise<Fragment[]> {
  const dir = new URL('./matrix/', import.meta.url);
  const names = readdirSync(dir)
    .filter((n) => n.endsWith('.ts') && n !== 'types.ts')
    .sort();
  return Promise.all(names.map(async (n) => (await import(new URL(n, dir).href)).entries as Fragment));
}

const MATRIX: Record<string, Row> = {};
const REQUESTS: Record<string, RequestSpec> = { ...CORE_REQUESTS };
const duplicated: string[] = [];
for (const [id, row] of Object.entries(CORE_MATRIX)) if (!LAST.includes(id)) MATRIX[id] = row;
for (const fragment of await loadFragments()) {
  for (const [id, entry] of Object.entries(fragment)) {
    if (id in MATRIX || id in CORE_MATRIX) duplicated.push(id);
    MATRIX[id] = entry.row;
    REQUESTS[id] = entry.request;
  }
}
for (const id of LAST) if (CORE_MATRIX[id]) MATRIX[id] = CORE_MATRIX[id];

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** operationId -> "METHOD /path" of the OpenAPI description. */
function operationsOf(doc: any): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) out.set(op.operationId ?? `(no operationId) ${method.toUpperCase()} ${path}`, `${method.toUpperCase()} ${path}`);
    }
  }
  return out;
}

/** A UDP DNS server on 127.0.0.1 that answers NXDOMAIN to everything: verifyDomain runs without the internet. */
async function startNxDomainServer() {
  const { Packet } = dns2;
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    response.header.rcode = 3; // NXDOMAIN (RFC 1035 4.1.1)
    void send(response);
  });
  await server.listen(0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('permission matrix (every OpenAPI operation x every kind of caller)', () => {
  let t: TestApp;
  let dns: Awaited<ReturnType<typeof startNxDomainServer>>;
  let f: Fixture;
  let operations: Map<string, string>;

  before(async () => {
    dns = await startNxDomainServer();
    // ~400 requests from one address: lift the per-IP limits, which are not under test here.
    t = await startTestApp({
      env: {
        DNS_SERVERS: `127.0.0.1:${dns.port}`,
        RATELIMIT_API_LIMIT: '100000',
        RATELIMIT_PUBLIC_RESOLVE_LIMIT: '100000',
        RATELIMIT_PUBLIC_LIMIT: '100000',
        RATELIMIT_HOLDS_PER_IP: '100000',
      },
    });
    const org = await t.createOrg({ name: 'Matrix clinic' });
    const otherOrg = await t.createOrg({ name: 'Other clinic' });
    const su = await t.superadmin(uniqueEmail('matrix-su'));
    const nonMemberEmail = uniqueEmail('matrix-outsider');
    const nonMember = await t.token(nonMemberEmail);
    // Signed in once without X-Organization-ID: provisioned with no link to any organization (spec 5.4).
    const me = await t.call('GET', '/v1/me', { token: nonMember });
    assert.equal(me.statusCode, 200, me.body);
    assert.deepEqual(me.json().data.memberships, []);

    const setup: Fixture['setup'] = async (method, url, body, token = su) => {
      const res = await t.call(method, url, { token, ...(body !== undefined ? { body } : {}) });
      if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`fixture ${method} ${url} failed: ${res.statusCode} ${res.body}`);
      return res.json().data;
    };
    // The clinic takes patients (spec 4.6 rule 5), and its patient has accepted its notice.
    await t.publishPrivacyNotice(org.id);
    const patient = await t.addPatient(org.id, uniqueEmail('matrix-patient'));
    await t.acceptOrgPurposes(org.id, patient.userId);
    const { rows: patientRows } = await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [
      org.id,
      patient.userId,
    ]);
    assert.equal(patientRows.length, 1);
    // A platform text of marketing_email (organization scope, resting on consent, not required).
    const emailText = await setup('POST', '/v1/admin/consent-purposes/marketing_email/versions', {
      body_translations: { en: 'Clinic news by email.' },
    });
    let exportId: string | null = null;
    const fx: Omit<Fixture, 'locationId' | 'domainId' | 'roleId'> = {
      t,
      patientRecordId: patientRows[0]!.id,
      async freshPatientRecord() {
        const p = await t.addPatient(org.id, uniqueEmail('matrix-erased'));
        const { rows } = await t.db.query<{ id: string }>('select id from patients where organization_id = $1 and user_id = $2', [
          org.id,
          p.userId,
        ]);
        return rows[0]!.id;
      },
      async patientExportId() {
        if (exportId) return exportId;
        const job = await setup('POST', '/v1/gdpr/export', {}, patient.token);
        for (let i = 0; i < 500; i++) {
          const state = await setup('GET', `/v1/gdpr/exports/${job.id}`, undefined, patient.token);
          if (state.status === 'done') {
            exportId = job.id as string;
            return exportId;
          }
          if (state.status === 'failed') throw new Error(`fixture export failed: ${JSON.stringify(state)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
        throw new Error('fixture export did not finish');
      },
      emailVersion: emailText.version as number,
      orgId: org.id,
      orgSlug: org.slug,
      setup,
      tokens: {
        admin: (await t.addMember(org.id, uniqueEmail('matrix-admin'), 'admin')).token,
        specialist: (await t.addMember(org.id, uniqueEmail('matrix-specialist'), 'specialist')).token,
        customer_support: (await t.addMember(org.id, uniqueEmail('matrix-support'), 'customer_support')).token,
        patient: patient.token,
        non_member: nonMember,
        other_org_admin: (await t.addMember(otherOrg.id, uniqueEmail('matrix-other-admin'), 'admin')).token,
        superadmin: su,
      },
      superadminWithoutSession: await t.superadmin(uniqueEmail('matrix-su-no-session')),
    };
    // The superadmin caller works under break-glass sessions of every patient-data scope (spec 4.7).
    for (const scope of ['patient_list', 'patient_detail'])
      await setup('POST', '/v1/break-glass/sessions', {
        organization_id: org.id,
        scope,
        reason_category: 'support_ticket',
        reason_text: 'Permission matrix check',
        expires_in_minutes: 240,
      });
    f = {
      ...fx,
      locationId: await freshLocation(fx as Fixture),
      domainId: await freshDomain(fx as Fixture),
      roleId: await freshRole(fx as Fixture),
    };

    const res = await t.call('GET', '/openapi.json');
    assert.equal(res.statusCode, 200, res.body);
    operations = operationsOf(res.json());
  });
  after(async () => {
    await t?.close();
    await dns?.close();
  });

  it('the table has exactly one row per OpenAPI operation, and each request matches its operation', () => {
    const inDoc = [...operations.keys()].sort();
    assert.deepEqual(duplicated, [], `operations with a row in more than one place: ${duplicated.join(', ')}`);
    const missing = inDoc.filter((id) => !(id in MATRIX));
    assert.deepEqual(missing, [], `operations without a row in MATRIX (add one, with a request in REQUESTS): ${missing.join(', ')}`);
    const stale = Object.keys(MATRIX).filter((id) => !operations.has(id));
    assert.deepEqual(stale, [], `MATRIX rows for operations that /openapi.json does not have: ${stale.join(', ')}`);
    const unknown = Object.keys(BREAK_GLASS).filter((id) => !operations.has(id));
    assert.deepEqual(unknown, [], `BREAK_GLASS names operations that /openapi.json does not have: ${unknown.join(', ')}`);
    const noRequest = Object.keys(MATRIX).filter((id) => !(id in REQUESTS));
    assert.deepEqual(noRequest, [], `MATRIX rows without a request in REQUESTS: ${noRequest.join(', ')}`);
    for (const [id, spec] of Object.entries(REQUESTS)) {
      assert.equal(`${spec.method} ${spec.path}`, operations.get(id), `REQUESTS.${id} calls another operation than its OpenAPI entry`);
    }
  });

  for (const [operationId, row] of Object.entries(MATRIX)) {
    describe(operationId, () => {
      for (const caller of CALLERS) {
        const expect = row[caller];
        const status = typeof expect === 'number' ? expect : expect.status;
        const todo = typeof expect === 'number' ? undefined : expect.todo;
        it(`${caller} -> ${status}`, { ...(todo ? { todo } : {}) }, async () => {
          const spec = REQUESTS[operationId];
          assert.ok(spec, `no request for ${operationId}`);
          const p = (await spec.prepare?.(f, caller)) ?? {};
          const params: Record<string, string> = { id: f.orgId, org_id: f.orgId, ...p.params };
          const path = spec.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
            const v = params[name];
            assert.ok(v, `no value for {${name}} of ${operationId}`);
            return v;
          });
          const url = p.query ? `${path}?${p.query}` : path;
          const res = await t.call(spec.method, url, {
            ...(caller === 'anonymous' ? {} : { token: f.tokens[caller] }),
            ...(p.body !== undefined ? { body: p.body } : {}),
            ...(p.headers ? { headers: p.headers } : {}),
          });
          assert.equal(res.statusCode, status, `${caller} ${spec.method} ${url}: ${res.body}`);
          if (status === 401) assert.equal(res.json().error.code, 'unauthorized', res.body);
          if (status === 403) assert.equal(res.json().error.code, 'forbidden', res.body);
          if (status === 404) assert.equal(res.json().error.code, 'not_found', res.body);
        });
      }
      const scope = BREAK_GLASS[operationId];
      if (scope) {
        it(`superadmin without a break-glass session -> 403 break_glass_required (${scope})`, async () => {
          const spec = REQUESTS[operationId]!;
          const p = (await spec.prepare?.(f, 'superadmin')) ?? {};
          const params: Record<string, string> = { id: f.orgId, org_id: f.orgId, ...p.params };
          const path = spec.path.replace(/\{(\w+)\}/g, (_m, name: string) => params[name]!);
          const res = await t.call(spec.method, p.query ? `${path}?${p.query}` : path, {
            token: f.superadminWithoutSession,
            ...(p.body !== undefined ? { body: p.body } : {}),
            headers: { 'x-organization-id': f.orgId, ...p.headers },
          });
          assert.equal(res.statusCode, 403, res.body);
          assert.equal(res.json().error.code, 'break_glass_required', res.body);
          assert.equal(res.json().error.elevation.scope, scope, res.body);
        });
      }
    });
  }
});
