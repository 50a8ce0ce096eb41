import type { Queryable } from '@clinic/db';
import { containsPattern, type Picker } from '@clinic/http-kit';

export interface UserPickerRow {
  id: string;
  email: string;
  role_code: string;
}

/**
 * Staff of one organization: users with a membership row there, with their role code. The explicit
 * `m.organization_id = $1` is what scopes a superadmin (app_bypass); under app_rls the policies
 * (users_read_directory, memberships_read, roles_read) restrict the rows to the same set again.
 * `ids` mode keeps the order the ids were given in; `q` mode sorts by email.
 */
export async function pickOrganizationUsers(tx: Queryable, organizationId: string, p: Picker): Promise<UserPickerRow[]> {
  const base = `select u.id, u.email, r.code as role_code
     from memberships m
     join users u on u.id = m.user_id
     join roles r on r.id = m.role_id
     where m.organization_id = $1`;
  const { rows } =
    p.mode === 'ids'
      ? await tx.query<UserPickerRow>(`${base} and u.id = any($2::uuid[]) order by array_position($2::uuid[], u.id) limit $3`, [
          organizationId,
          p.ids,
          p.limit,
        ])
      : await tx.query<UserPickerRow>(`${base} and u.email ilike $2 order by lower(u.email), u.id limit $3`, [
          organizationId,
          containsPattern(p.q),
          p.limit,
        ]);
  return rows;
}

/**
 * Every principal of the platform, for a superadmin without organization scope (app_bypass only: under
 * app_rls the policies would leave the caller's own row at most). No organization means no role: ''.
 */
export async function pickAllUsers(tx: Queryable, p: Picker): Promise<UserPickerRow[]> {
  const base = `select u.id, u.email, '' as role_code from users u where`;
  const { rows } =
    p.mode === 'ids'
      ? await tx.query<UserPickerRow>(`${base} u.id = any($1::uuid[]) order by array_position($1::uuid[], u.id) limit $2`, [p.ids, p.limit])
      : await tx.query<UserPickerRow>(`${base} u.email ilike $1 order by lower(u.email), u.id limit $2`, [containsPattern(p.q), p.limit]);
  return rows;
}
