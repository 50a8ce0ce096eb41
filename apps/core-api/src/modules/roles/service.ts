import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseFilters, parsePagination, parseSort, type ListEnvelope } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import { ADMIN_PERMISSION, lockAdminSet, otherAdminExists } from '../members/queries.ts';
import { lastAdmin } from '../members/queries.ts';
import type { Actor } from '../../platform/actor.ts';
import {
  countRoleMembers,
  deleteRole as deleteRoleRow,
  findRole,
  insertRole,
  listRoles as listRoleRows,
  replacePermissions,
  roleInUse,
  updateRoleFields,
  type RoleRow,
} from './queries.ts';
import { assertCanGrant } from '../../platform/grants.ts';

export const ROLE_SORT = { code: 'r.code', name: 'r.name', created_at: 'r.created_at' } as const;

export interface RoleDeps {
  /** The permission catalog (spec 2.7), loaded at start-up: it changes only with migrations. */
  permissionCatalog: readonly string[];
}

/** GET /v1/organizations/{id}/roles: spec 4.1 list conventions; filters is_system (true/false) and code. */
export async function listRoles(tx: Queryable, orgId: string, query: Record<string, unknown>): Promise<ListEnvelope<RoleRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, ROLE_SORT, '-created_at', 'r.id');
  const f = parseFilters(query, ['is_system', 'code'] as const);
  const isSystem = f.is_system === 'true' ? true : f.is_system === 'false' ? false : undefined;
  const { rows, total } = await listRoleRows(tx, orgId, { is_system: isSystem, code: f.code }, sort, page);
  return listEnvelope(rows, page, total);
}

/** De-duplicated and sorted; unknown codes are a 400 on `fields.permissions` naming them. */
function checkPermissions(deps: RoleDeps, codes: readonly string[]): string[] {
  const unique = [...new Set(codes)].sort();
  const unknown = unique.filter((c) => !deps.permissionCatalog.includes(c));
  if (unknown.length) {
    throw errors.validation({
      permissions: `unknown permission codes: ${unknown.join(', ')}; permissions are created only by migrations (spec 2.7)`,
    });
  }
  return unique;
}

async function mustFind(tx: Queryable, orgId: string, roleId: string, forUpdate = false): Promise<RoleRow> {
  const role = await findRole(tx, orgId, roleId, { forUpdate });
  if (!role) throw errors.notFound('No role with this id in the organization.');
  return role;
}

export interface CreateRoleInput {
  code: string;
  name: string;
  permissions: string[];
}

/** POST /v1/organizations/{id}/roles: a custom role (is_system false). */
export async function createRole(tx: Queryable, deps: RoleDeps, actor: Actor, orgId: string, input: CreateRoleInput): Promise<RoleRow> {
  const permissions = checkPermissions(deps, input.permissions);
  assertCanGrant(actor.ctx, permissions, `A role with these permissions`);
  const id = await insertRole(tx, orgId, { code: input.code, name: input.name });
  await replacePermissions(tx, orgId, id, permissions);
  await recordChange(
    tx,
    actor,
    'role.created',
    { type: 'role', id: id, organizationId: orgId },
    { code: input.code, name: input.name, permissions },
  );
  return mustFind(tx, orgId, id);
}

export interface UpdateRoleInput {
  code?: string | undefined;
  name?: string | undefined;
  permissions?: string[] | undefined;
}

/**
 * PATCH /v1/organizations/{id}/roles/{roleId}: name, code (custom roles only) and the full permission
 * set. Taking organizations.manage_members away from the only role that gives it to members is
 * last_admin. Nothing changed: 200 with the role, and no audit entry.
 */
export async function updateRole(
  tx: Queryable,
  deps: RoleDeps,
  actor: Actor,
  orgId: string,
  roleId: string,
  input: UpdateRoleInput,
): Promise<RoleRow> {
  const permissions = input.permissions === undefined ? undefined : checkPermissions(deps, input.permissions);
  const losesAdmin = permissions !== undefined && !permissions.includes(ADMIN_PERMISSION);
  if (losesAdmin) await lockAdminSet(tx, orgId);
  const before = await mustFind(tx, orgId, roleId, true);

  const changes: Record<string, unknown> = {};
  if (input.code !== undefined && input.code !== before.code) {
    if (before.is_system) {
      throw errors.conflict(
        'system_role_immutable',
        `"${before.code}" is a system role: its code cannot change. Its name and permissions can.`,
      );
    }
    changes.code = { from: before.code, to: input.code };
  }
  if (input.name !== undefined && input.name !== before.name) changes.name = { from: before.name, to: input.name };
  if (permissions !== undefined) {
    const added = permissions.filter((p) => !before.permissions.includes(p));
    assertCanGrant(actor.ctx, added, `Adding these permissions to the role "${before.code}"`);
    const removed = before.permissions.filter((p) => !permissions.includes(p));
    if (added.length || removed.length) changes.permissions = { added, removed };
    if (
      removed.includes(ADMIN_PERMISSION) &&
      (await countRoleMembers(tx, orgId, roleId)) > 0 &&
      !(await otherAdminExists(tx, orgId, { roleId }))
    ) {
      throw lastAdmin(`Removing ${ADMIN_PERMISSION} from the role "${before.code}"`);
    }
  }
  if (Object.keys(changes).length === 0) return before;

  if (changes.code || changes.name) await updateRoleFields(tx, orgId, roleId, { code: input.code, name: input.name });
  if (changes.permissions) await replacePermissions(tx, orgId, roleId, permissions!);
  await recordChange(tx, actor, 'role.updated', { type: 'role', id: roleId, organizationId: orgId }, { code: before.code, changes });
  return mustFind(tx, orgId, roleId);
}

/** DELETE /v1/organizations/{id}/roles/{roleId}: custom roles that no member holds. */
export async function deleteRole(tx: Queryable, actor: Actor, orgId: string, roleId: string): Promise<void> {
  const role = await mustFind(tx, orgId, roleId, true);
  if (role.is_system)
    throw errors.conflict(
      'system_role_immutable',
      `"${role.code}" is a system role: it cannot be deleted. Its name and permissions can change.`,
    );
  const members = await countRoleMembers(tx, orgId, roleId);
  if (members > 0) throw roleInUse(members);
  await deleteRoleRow(tx, orgId, roleId);
  await recordChange(
    tx,
    actor,
    'role.deleted',
    { type: 'role', id: roleId, organizationId: orgId },
    { code: role.code, name: role.name, permissions: role.permissions },
  );
}
