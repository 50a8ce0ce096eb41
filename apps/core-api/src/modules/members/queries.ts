import { type AppError, errors } from '@clinic/http-kit';
import type { Queryable } from '@clinic/db';
import { containsPattern, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

/** The permission that makes a member an "admin" for the last-admin rule: a code, never a role name. */
/** The permission that makes a member an administrator for the last-admin rule (app.admin_permission() in SQL). */
export const ADMIN_PERMISSION = 'organizations.manage_members';

export interface MemberRow {
  user_id: string;
  email: string;
  kind: string;
  confirmed: boolean;
  role_id: string;
  role_code: string;
  created_at: Date;
}

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

const MEMBER_COLUMNS = 'm.user_id, u.email, u.kind, u.confirmed, m.role_id, r.code as role_code, m.created_at';

export async function findMember(tx: Queryable, orgId: string, userId: string): Promise<MemberRow | null> {
  const { rows } = await tx.query<MemberRow>(
    `select ${MEMBER_COLUMNS}
     from memberships m join users u on u.id = m.user_id join roles r on r.id = m.role_id
     where m.organization_id = $1 and m.user_id = $2`,
    [orgId, userId],
  );
  return rows[0] ?? null;
}

export interface MemberFilter {
  role_code?: string | undefined;
  kind?: string | undefined;
  q?: string | undefined;
  created: DateRange;
}

/**
 * One page and the total in ONE statement (one round trip). Filters are written on the membership
 * row (a role code becomes a role id, an email match a semi-join), so the count reads memberships
 * alone. The page is found first as keys, joining users or roles only when the sort needs them, and
 * the member columns are read for those 50 keys only: on a large organization the OFFSET rows of a
 * default-ordered page are then index entries, not joined rows (bench/lists.ts).
 */
export async function listMembers(
  tx: Queryable,
  orgId: string,
  filter: MemberFilter,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: MemberRow[]; total: number }> {
  const w = new SqlWhere()
    .add('m.organization_id = ?', orgId)
    .dateRange('m.created_at', filter.created)
    .optional('m.role_id in (select r2.id from roles r2 where r2.organization_id = m.organization_id and r2.code = ?)', filter.role_code)
    .optional('exists (select 1 from users u2 where u2.id = m.user_id and u2.kind = ?)', filter.kind)
    .optional(
      'exists (select 1 from users u2 where u2.id = m.user_id and u2.email ilike ?)',
      filter.q === undefined ? undefined : containsPattern(filter.q),
    );
  const joins = [
    /\bu\./.test(sort.sql) ? 'join users u on u.id = m.user_id' : '',
    /\br\./.test(sort.sql) ? 'join roles r on r.id = m.role_id' : '',
  ].join(' ');
  const { rows } = await tx.query<MemberRow & { total: number }>(
    `select t.total, p.*
     from (select count(*)::int as total from memberships m where ${w.text}) t
     left join lateral (
       select ${MEMBER_COLUMNS}
       from (select m.user_id from memberships m ${joins} where ${w.text}
             order by ${sort.sql} limit ${w.param(page.limit)} offset ${w.param(page.offset)}) k
       join memberships m on m.organization_id = $1 /* the first condition of w */ and m.user_id = k.user_id
       join users u on u.id = m.user_id join roles r on r.id = m.role_id
       order by ${sort.sql}
     ) p on true`,
    w.params,
  );
  const total = rows[0]?.total ?? 0;
  return { total, rows: rows.filter((r) => r.user_id !== null).map(({ total: _t, ...r }) => r) };
}

export interface RoleRef {
  id: string;
  code: string;
  /** The role holds ADMIN_PERMISSION. */
  is_admin: boolean;
  /** The permission codes the role carries (what giving it grants). */
  permissions: string[];
}

export async function findRoleByCode(tx: Queryable, orgId: string, code: string): Promise<RoleRef | null> {
  const { rows } = await tx.query<RoleRef>(
    `select r.id, r.code,
       exists (select 1 from role_permissions rp where rp.role_id = r.id and rp.permission_code = $3) as is_admin,
       array(select rp.permission_code from role_permissions rp where rp.role_id = r.id order by 1) as permissions
     from roles r where r.organization_id = $1 and r.code = $2`,
    [orgId, code, ADMIN_PERMISSION],
  );
  return rows[0] ?? null;
}

export interface MembershipState {
  role_id: string;
  role_code: string;
  is_admin: boolean;
  email: string;
}

/** The member's current role, locked against concurrent changes of the same membership. */
export async function membershipState(tx: Queryable, orgId: string, userId: string): Promise<MembershipState | null> {
  const { rows } = await tx.query<MembershipState>(
    `select m.role_id, r.code as role_code, u.email,
       exists (select 1 from role_permissions rp where rp.role_id = m.role_id and rp.permission_code = $3) as is_admin
     from memberships m join roles r on r.id = m.role_id join users u on u.id = m.user_id
     where m.organization_id = $1 and m.user_id = $2
     for update of m`,
    [orgId, userId, ADMIN_PERMISSION],
  );
  return rows[0] ?? null;
}

/**
 * The last-admin rule lives in SQL (migration 0055), shared with account erasure (app.erase_user):
 * this takes its lock, serialising every change that can take away the organization's last admin
 * (member removal, demotion, role permission edits). Released at commit or rollback.
 */
export async function lockAdminSet(tx: Queryable, orgId: string): Promise<void> {
  await tx.query('select app.lock_admin_set($1)', [orgId]);
}

/** Does any member, other than the excluded user or the holders of the excluded role, hold the admin permission? */
export async function otherAdminExists(tx: Queryable, orgId: string, exclude: { userId?: string; roleId?: string }): Promise<boolean> {
  const { rows } = await tx.query<{ found: boolean }>('select app.other_admin_exists($1, $2, $3) as found', [
    orgId,
    exclude.userId ?? null,
    exclude.roleId ?? null,
  ]);
  return rows[0]!.found;
}

/**
 * The id of the user with this email, if it may join the organization in scope; see
 * app.user_id_by_email in migrations/0005_members.sql for why this goes through a function.
 */
export async function userIdByEmail(tx: Queryable, email: string): Promise<string | null> {
  const { rows } = await tx.query<{ id: string | null }>('select app.user_id_by_email($1) as id', [email]);
  return rows[0]?.id ?? null;
}

/**
 * A human user row for an email that has never signed in; provisioning links it to the identity on
 * first sign-in (identity/queries.ts provisionUser). No RETURNING: the new row is not yet a member,
 * so the select policies would refuse to return it. False when a row with this email already exists.
 */
export async function insertInvitedUser(tx: Queryable, email: string): Promise<boolean> {
  const { rowCount } = await tx.query(`insert into users (email) values ($1) on conflict do nothing`, [email]);
  return rowCount > 0;
}

/** Inserts the membership unless one exists (a concurrent add); true when this call inserted it. */
export async function insertMembership(tx: Queryable, orgId: string, userId: string, roleId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `insert into memberships (user_id, organization_id, role_id) values ($1, $2, $3)
     on conflict (organization_id, user_id) do nothing`,
    [userId, orgId, roleId],
  );
  return rowCount > 0;
}

export async function updateMembershipRole(tx: Queryable, orgId: string, userId: string, roleId: string): Promise<void> {
  await tx.query(`update memberships set role_id = $3 where organization_id = $1 and user_id = $2`, [orgId, userId, roleId]);
}

export async function deleteMembership(tx: Queryable, orgId: string, userId: string): Promise<void> {
  await tx.query(`delete from memberships where organization_id = $1 and user_id = $2`, [orgId, userId]);
}

/** 409 last_admin, with what to do about it. */
export function lastAdmin(what: string): AppError {
  return errors.conflict(
    'last_admin',
    `${what} would leave the organization without anyone who can manage members (organizations.manage_members). ` +
      'Give another member a role with that permission first, then retry.',
  );
}

/** Whether the user holds the superadmin platform role (migration 0120: readable whatever the caller's role). */
export async function isSuperadminUser(tx: Queryable, userId: string): Promise<boolean> {
  const { rows } = await tx.query<{ yes: boolean }>('select app.is_superadmin($1) as yes', [userId]);
  return rows[0]?.yes === true;
}
