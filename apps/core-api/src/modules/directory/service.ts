import type { Queryable } from '@clinic/db';
import type { Picker } from '@clinic/http-kit';
import type { RequestContext } from '../../platform/identity/context.ts';
import { pickAllUsers, pickOrganizationUsers, type UserPickerRow } from './queries.ts';

/**
 * GET /v1/users: the staff directory of the organization in scope (spec 4.1 picker). The route gate
 * (organizations.view_directory) has already run, so a caller here either holds the permission at
 * `ctx.orgId` or is a superadmin. A superadmin without organization scope searches every user of the
 * platform (the operator console has no organization); with X-Organization-ID it sees that
 * organization's staff, like anyone else.
 */
export async function listUsers(
  tx: Queryable,
  ctx: Pick<RequestContext, 'orgId' | 'isSuperadmin'>,
  picker: Picker,
): Promise<UserPickerRow[]> {
  if (ctx.orgId === null) return ctx.isSuperadmin ? pickAllUsers(tx, picker) : [];
  return pickOrganizationUsers(tx, ctx.orgId, picker);
}
