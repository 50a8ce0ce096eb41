import { NIL_UUID, type RequestScope } from '@clinic/db';

export interface Membership {
  organization_id: string;
  role_id: string;
  role_code: string;
}

/** Who is calling and in which organization: computed once per request, never from role names. */
export interface RequestContext {
  principalId: string;
  email: string;
  kind: string;
  confirmed: boolean;
  lastActivity: Date | null;
  preferredLanguage: string | null;
  platformRoles: string[];
  isSuperadmin: boolean;
  memberships: Membership[];
  patientOrgIds: string[];
  /** The organization the request is scoped to (spec 4.1 order); null is the nil UUID. */
  orgId: string | null;
  roleId: string | null;
  roleCode: string;
  permissions: string[];
  isStaff: boolean;
  isPatient: boolean;
  /**
   * Required consent purposes (with their latest version) the caller has not accepted; non-empty
   * means the re-consent gate answers 412 on every route that is not consent-exempt.
   */
  missingConsents: MissingConsent[];
  /**
   * Set when the request carries an impersonation token (POST /v1/patients/{id}/impersonate): the caller
   * acts as the patient in the portal, and `byPrincipalId` is the staff member behind it.
   */
  impersonation: { id: string; byPrincipalId: string; patientId: string } | null;
  /** A caregiver acting for this patient of the organization (X-Patient-ID and an active caregiver link). */
  actingForPatientId: string | null;
}

export interface MissingConsent {
  purpose_code: string;
  /** null for a platform-scope purpose. */
  organization_id: string | null;
  version: number;
}

export function hasPermission(ctx: RequestContext, code: string): boolean {
  return ctx.isSuperadmin || ctx.permissions.includes(code);
}

/** Staff, patient or superadmin: someone with any access to the organization in scope. */
export function hasOrgAccess(ctx: RequestContext): boolean {
  return ctx.orgId !== null && (ctx.isSuperadmin || ctx.isStaff || ctx.isPatient);
}

/** A patient caller: no staff membership and no superadmin, acting by row ownership (spec 5.8). */
export function isPatientCaller(ctx: RequestContext): boolean {
  return !ctx.isSuperadmin && !ctx.isStaff && ctx.isPatient;
}

/**
 * The database scope of this request: superadmins on app_bypass, everyone else on app_rls. The
 * tenant setting is the chosen organization only where the caller has access; otherwise the nil
 * UUID, under which row-level security yields nothing.
 */
export function scopeOf(ctx: RequestContext): RequestScope {
  return {
    role: ctx.isSuperadmin ? 'app_bypass' : 'app_rls',
    principalId: ctx.principalId,
    orgId: hasOrgAccess(ctx) ? ctx.orgId : NIL_UUID,
    permissions: ctx.isSuperadmin ? [] : ctx.permissions,
    actingPatientId: ctx.actingForPatientId,
  };
}
