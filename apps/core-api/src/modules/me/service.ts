import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { NIL_UUID } from '@clinic/db';
import { insertAudit } from '../audit/queries.ts';
import type { RequestContext } from '../identity/context.ts';
import { findOrganization } from '../organizations/queries.ts';
import { storeCurrentOrganization } from './queries.ts';

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
  };
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
  await insertAudit(tx, {
    organizationId,
    actorUserId: ctx.principalId,
    action: 'user.switched_organization',
    entityType: 'user',
    entityId: ctx.principalId,
    data: { from_organization_id: ctx.orgId },
    ip,
  });
  return {
    current_organization_id: organizationId,
    message: 'Switched organization. Fetch GET /v1/me again to load your role and permissions there.',
  };
}
