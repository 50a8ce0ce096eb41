import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { NIL_UUID } from '@clinic/db';
import { recordChange } from '../../platform/audit.ts';
import { hasOrgAccess, type RequestContext } from '../../platform/identity/context.ts';
import { findOrganization } from '../organizations/queries.ts';
import {
  lockPreferredLanguage,
  organizationLanguage,
  organizationsByIds,
  storeCurrentOrganization,
  storePreferredLanguage,
  type ClinicOrganizationRow,
} from './queries.ts';

/** What a front-end renders when neither the user nor the organization names a language (spec 2.5). */
export const FALLBACK_LANGUAGE = 'en';

/** GET /v1/me (spec 2.3): everything comes from the request context, which is one statement. */
export function currentUser(ctx: RequestContext) {
  return {
    id: ctx.principalId,
    email: ctx.email,
    is_superadmin: ctx.isSuperadmin,
    platform_roles: ctx.platformRoles,
    confirmed: ctx.confirmed,
    last_activity: ctx.lastActivity,
    current_organization_id: ctx.orgId,
    memberships: ctx.memberships,
    current_role_code: ctx.roleCode,
    current_permissions: ctx.permissions,
    is_staff_at_current_org: ctx.isStaff,
    is_patient_at_current_org: ctx.isPatient,
    patient_org_ids: ctx.patientOrgIds,
    preferred_language: ctx.preferredLanguage,
  };
}

export interface UpdateMeInput {
  preferred_language?: string | null | undefined;
}

/**
 * PATCH /v1/me: the caller's own preferences. Today only preferred_language (null inherits the
 * organization's language_code). Audited as user.updated in platform scope (the user row belongs to
 * no organization), in the same transaction; a body that changes nothing writes nothing. Returns the
 * current user of GET /v1/me with the change applied, plus effective_language.
 */
export async function updateMe(tx: Queryable, ctx: RequestContext, input: UpdateMeInput, ip: string | null) {
  if (input.preferred_language === undefined) throw errors.validation({ _body: 'give at least one field to change: preferred_language' });
  const to = input.preferred_language;
  const from = await lockPreferredLanguage(tx, ctx.principalId);
  if (from === undefined) throw errors.unauthorized();
  if (from !== to) {
    await storePreferredLanguage(tx, ctx.principalId, to);
    await recordChange(
      tx,
      { ctx, ip },
      'user.updated',
      { type: 'user', id: ctx.principalId, organizationId: null },
      { changes: { preferred_language: { from, to } } },
    );
  }
  return { ...currentUser({ ...ctx, preferredLanguage: to }), effective_language: await effectiveLanguage(tx, ctx, to) };
}

/**
 * preferred_language, else the language_code of the organization in scope (only one the caller has
 * access to), else en. Stored as given: a front-end that does not render it falls back to en itself.
 */
async function effectiveLanguage(tx: Queryable, ctx: RequestContext, preferred: string | null): Promise<string> {
  if (preferred !== null) return preferred;
  const org = hasOrgAccess(ctx) ? await organizationLanguage(tx, ctx.orgId!) : null;
  return org ?? FALLBACK_LANGUAGE;
}

export interface MyClinic extends ClinicOrganizationRow {
  is_staff: boolean;
  is_patient: boolean;
  /** The staff role's code there (display only); null where the caller is only a patient. */
  role_code: string | null;
}

/**
 * GET /v1/me/clinics: every organization the caller can enter, with the kind of access, for an
 * organization picker across the staff app and the patient portal. Memberships and live patient
 * links come from the request context (loaded once, past row-level security); the organization rows
 * are read under it (organizations_read shows member and patient organizations).
 */
export async function listMyClinics(tx: Queryable, ctx: RequestContext): Promise<MyClinic[]> {
  const roles = new Map(ctx.memberships.map((m) => [m.organization_id, m.role_code]));
  const patientOf = new Set(ctx.patientOrgIds);
  const orgs = await organizationsByIds(tx, [...new Set([...roles.keys(), ...patientOf])]);
  return orgs.map((o) => ({
    ...o,
    is_staff: roles.has(o.id),
    is_patient: patientOf.has(o.id),
    role_code: roles.get(o.id) ?? null,
  }));
}

/**
 * PUT /v1/me/switch-organization (spec 4.4). The permissions of this request do not change; the
 * audit entry is written in the destination organization's scope.
 */
export async function switchOrganization(tx: Queryable, ctx: RequestContext, organizationId: string, ip: string | null) {
  if (organizationId === NIL_UUID) throw errors.validation({ organization_id: 'must not be the nil UUID' });
  const isMember = ctx.memberships.some((m) => m.organization_id === organizationId);
  if (!isMember && !ctx.isSuperadmin) throw errors.forbidden('You are not a member of that organization.');
  if (ctx.isSuperadmin && !(await findOrganization(tx, organizationId))) throw errors.organizationNotFound();
  await storeCurrentOrganization(tx, ctx.principalId, organizationId);
  await recordChange(
    tx,
    { ctx, ip },
    'user.switched_organization',
    { type: 'user', id: ctx.principalId, organizationId },
    { from_organization_id: ctx.orgId },
  );
  return {
    current_organization_id: organizationId,
    message: 'Switched organization. Fetch GET /v1/me again to load your role and permissions there.',
  };
}
