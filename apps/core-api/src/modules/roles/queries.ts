import { isUniqueViolation, pgErrorCode, type Queryable } from '@clinic/db';
import { errors, SqlWhere, type Pagination, type Sort } from '@clinic/http-kit';

export interface RoleRow {
  id: string;
  code: string;
  name: string;
  is_system: boolean;
  /** Sorted by code (byte order, as JavaScript sorts them). */
  permissions: string[];
  created_at: Date;
}

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.
// Templates (organization_id null) are never matched: they are not the organization's roles.

const PERMISSIONS = `coalesce((select array_agg(rp.permission_code order by rp.permission_code collate "C")
                               from role_permissions rp where rp.role_id = r.id), '{}') as permissions`;
const COLUMNS = `r.id, r.code, r.name, r.is_system, ${PERMISSIONS}, r.created_at`;

export async function findRole(tx: Queryable, orgId: string, roleId: string, opts: { forUpdate?: boolean } = {}): Promise<RoleRow | null> {
  const { rows } = await tx.query<RoleRow>(
    `select ${COLUMNS} from roles r where r.organization_id = $1 and r.id = $2${opts.forUpdate ? ' for update of r' : ''}`,
    [orgId, roleId],
  );
  return rows[0] ?? null;
}

export interface RoleFilter {
  is_system?: boolean | undefined;
  code?: string | undefined;
}

/** One page and the total in one statement. */
export async function listRoles(
  tx: Queryable,
  orgId: string,
  filter: RoleFilter,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: RoleRow[]; total: number }> {
  const w = new SqlWhere()
    .add('r.organization_id = ?', orgId)
    .optional('r.is_system = ?', filter.is_system)
    .optional('r.code = ?', filter.code);
  const { rows } = await tx.query<RoleRow & { total: number }>(
    `select t.total, p.*
     from (select count(*)::int as total from roles r where ${w.text}) t
     left join lateral (
       select ${COLUMNS} from roles r where ${w.text}
       order by ${sort.sql} limit ${w.param(page.limit)} offset ${w.param(page.offset)}
     ) p on true`,
    w.params,
  );
  return { total: rows[0]?.total ?? 0, rows: rows.filter((r) => r.id !== null).map(({ total: _t, ...r }) => r) };
}

function codeTaken(err: unknown, code: string): never {
  if (isUniqueViolation(err))
    throw errors.conflict('role_code_taken', `This organization already has a role with the code "${code}"; choose another code.`);
  throw err;
}

export async function insertRole(tx: Queryable, orgId: string, role: { code: string; name: string }): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      `insert into roles (organization_id, code, name, is_system) values ($1, $2, $3, false) returning id`,
      [orgId, role.code, role.name],
    );
    return rows[0]!.id;
  } catch (err) {
    return codeTaken(err, role.code);
  }
}

export async function updateRoleFields(
  tx: Queryable,
  orgId: string,
  roleId: string,
  fields: { code?: string | undefined; name?: string | undefined },
): Promise<void> {
  try {
    await tx.query(`update roles set code = coalesce($3, code), name = coalesce($4, name) where organization_id = $1 and id = $2`, [
      orgId,
      roleId,
      fields.code ?? null,
      fields.name ?? null,
    ]);
  } catch (err) {
    codeTaken(err, fields.code ?? '');
  }
}

/** Makes the role's permission set exactly `codes`: deletes what is not in it, adds what is missing. */
export async function replacePermissions(tx: Queryable, orgId: string, roleId: string, codes: readonly string[]): Promise<void> {
  await tx.query(`delete from role_permissions where organization_id = $1 and role_id = $2 and permission_code <> all($3::text[])`, [
    orgId,
    roleId,
    codes,
  ]);
  if (codes.length === 0) return;
  await tx.query(
    `insert into role_permissions (role_id, permission_code, organization_id)
     select $2, c, $1 from unnest($3::text[]) as c
     on conflict (role_id, permission_code) do nothing`,
    [orgId, roleId, codes],
  );
}

export async function countRoleMembers(tx: Queryable, orgId: string, roleId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(`select count(*)::int as n from memberships where organization_id = $1 and role_id = $2`, [
    orgId,
    roleId,
  ]);
  return rows[0]!.n;
}

/** Deletes the role (its grants cascade). A member still holding it (a concurrent assignment) is role_in_use. */
export async function deleteRole(tx: Queryable, orgId: string, roleId: string): Promise<void> {
  try {
    await tx.query(`delete from roles where organization_id = $1 and id = $2`, [orgId, roleId]);
  } catch (err) {
    if (pgErrorCode(err) === '23503') throw roleInUse(1);
    throw err;
  }
}

export function roleInUse(members: number): Error {
  return errors.conflict(
    'role_in_use',
    `${members === 1 ? 'A member still holds' : `${members} members still hold`} this role; give ${members === 1 ? 'that member' : 'them'} another role first, then delete it.`,
  );
}
