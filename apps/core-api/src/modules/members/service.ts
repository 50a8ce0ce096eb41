import type { Queryable } from '@clinic/db';
import {
  errors,
  listEnvelope,
  normalizeEmail,
  parseDateRange,
  parseFilters,
  parsePagination,
  parseSort,
  type ListEnvelope,
} from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import type { Actor } from '../../platform/actor.ts';
import {
  deleteMembership,
  findMember,
  findRoleByCode,
  insertInvitedUser,
  insertMembership,
  isSuperadminUser,
  lastAdmin,
  listMembers as listMemberRows,
  lockAdminSet,
  membershipState,
  otherAdminExists,
  updateMembershipRole,
  userIdByEmail,
  type MemberRow,
} from './queries.ts';
import { assertCanGrant, assertNotOwnRoleChange } from '../../platform/grants.ts';

/** Public sort fields and the SQL they stand for; `m.user_id` breaks ties (unique within an organization). */
export const MEMBER_SORT = { email: 'm.email_sort', created_at: 'm.created_at', role_code: 'r.code' } as const;
export const MEMBER_FILTERS = ['role_code', 'kind', 'q'] as const;

/** GET /v1/organizations/{id}/members: spec 4.1 list conventions. */
export async function listMembers(tx: Queryable, orgId: string, query: Record<string, unknown>): Promise<ListEnvelope<MemberRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, MEMBER_SORT, '-created_at', 'm.user_id');
  const created = parseDateRange(query, 'created_at');
  const f = parseFilters(query, MEMBER_FILTERS);
  const q = f.q?.trim();
  const { rows, total } = await listMemberRows(
    tx,
    orgId,
    { role_code: f.role_code, kind: f.kind, q: q ? q : undefined, created },
    sort,
    page,
  );
  return listEnvelope(rows, page, total);
}

export interface AddMemberInput {
  email: string;
  role_code: string;
}

export interface AddMemberResult {
  member: MemberRow;
  /** 'added': a new membership (201); 'role_changed' or 'unchanged': it existed (200). */
  outcome: 'added' | 'role_changed' | 'unchanged';
}

/**
 * POST /v1/organizations/{id}/members: adds or upserts by email. An unknown email gets a human user
 * row without identity, linked on its first sign-in. One role per organization: an existing member
 * gets the new role (never a second row), subject to the last-admin rule.
 */
export async function addMember(tx: Queryable, actor: Actor, orgId: string, input: AddMemberInput): Promise<AddMemberResult> {
  const checked = normalizeEmail(input.email);
  if (!checked.ok) throw errors.validation({ email: checked.problem });
  const email = checked.email;
  const role = await findRoleByCode(tx, orgId, input.role_code);
  if (!role) {
    throw errors.validation({
      role_code: `no role "${input.role_code}" in this organization; GET /v1/organizations/${orgId}/roles lists them`,
    });
  }
  assertCanGrant(actor.ctx, role.permissions, `Giving the role "${role.code}"`);
  let userId = await userIdByEmail(tx, email);
  let userCreated = false;
  if (!userId) {
    userCreated = await insertInvitedUser(tx, email);
    userId = await userIdByEmail(tx, email);
    // The email is taken by an agent or service account of another organization (spec 2.4).
    if (!userId)
      throw errors.conflict(
        'principal_not_allowed',
        'This email belongs to an agent or service account of another organization; it cannot be a member here.',
      );
  }

  // Spec 5 rule 6: a superadmin reaches an organization through break-glass, never as its member.
  if (await isSuperadminUser(tx, userId))
    throw errors.conflict(
      'superadmin_not_member',
      `${email} is a platform superadmin, and superadmins hold no organization memberships (they reach an organization under break-glass). To make this person a member, revoke the role first: npm run cli -- superadmin revoke ${email}.`,
    );
  if (await insertMembership(tx, orgId, userId, role.id)) {
    const member = (await findMember(tx, orgId, userId))!;
    await recordChange(
      tx,
      actor,
      'member.added',
      { type: 'member', id: userId, organizationId: orgId },
      { role_id: role.id, role_code: role.code, user_created: userCreated },
    );
    return { member, outcome: 'added' };
  }

  // Already a member: change the role if it differs. A demotion may remove the last admin, so the
  // admin set is locked first and the target role's permissions are read again under the lock.
  await lockAdminSet(tx, orgId);
  const current = (await membershipState(tx, orgId, userId))!;
  if (current.role_id === role.id) return { member: (await findMember(tx, orgId, userId))!, outcome: 'unchanged' };
  assertNotOwnRoleChange(actor.ctx, userId);
  const target = (await findRoleByCode(tx, orgId, role.code)) ?? role;
  if (current.is_admin && !target.is_admin && !(await otherAdminExists(tx, orgId, { userId }))) {
    throw lastAdmin(`Changing the role of ${current.email} to "${role.code}"`);
  }
  await updateMembershipRole(tx, orgId, userId, role.id);
  await recordChange(
    tx,
    actor,
    'member.role_changed',
    { type: 'member', id: userId, organizationId: orgId },
    { role_id: { from: current.role_id, to: role.id }, role_code: { from: current.role_code, to: role.code } },
  );
  return { member: (await findMember(tx, orgId, userId))!, outcome: 'role_changed' };
}

/** DELETE /v1/organizations/{id}/members/{userId}: 404 when not a member; never the last admin. */
export async function removeMember(tx: Queryable, actor: Actor, orgId: string, userId: string): Promise<void> {
  await lockAdminSet(tx, orgId);
  const current = await membershipState(tx, orgId, userId);
  if (!current) throw errors.notFound('This user is not a member of the organization.');
  if (current.is_admin && !(await otherAdminExists(tx, orgId, { userId }))) {
    throw lastAdmin(`Removing ${current.email}`);
  }
  await deleteMembership(tx, orgId, userId);
  await recordChange(
    tx,
    actor,
    'member.removed',
    { type: 'member', id: userId, organizationId: orgId },
    { role_id: current.role_id, role_code: current.role_code },
  );
}
