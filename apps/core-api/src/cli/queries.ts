import type { Queryable } from '@clinic/db';

/** The user with this (lower-cased) email, created by email if there is none (linked on first sign-in). */
export async function userByEmailCreating(tx: Queryable, email: string): Promise<{ id: string; kind: string }> {
  await tx.query(`insert into users (email) values ($1) on conflict do nothing`, [email]);
  const { rows } = await tx.query<{ id: string; kind: string }>('select id, kind from users where lower(email) = $1', [email]);
  return rows[0]!;
}

/** Grants the superadmin platform role; false when the user already held it. */
export async function insertSuperadmin(tx: Queryable, userId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `insert into platform_memberships (user_id, role) values ($1, 'superadmin') on conflict do nothing returning user_id`,
    [userId],
  );
  return rowCount > 0;
}

/** Removes the superadmin platform role of the user with this email; the user's id, or null when none held it. */
export async function deleteSuperadmin(tx: Queryable, email: string): Promise<string | null> {
  const { rows } = await tx.query<{ user_id: string }>(
    `delete from platform_memberships pm using users u
     where pm.user_id = u.id and lower(u.email) = $1 and pm.role = 'superadmin' returning pm.user_id`,
    [email],
  );
  return rows[0]?.user_id ?? null;
}

/** The organizations (id and name) where the user is a member. */
export async function membershipsOf(tx: Queryable, userId: string): Promise<{ id: string; name: string }[]> {
  const { rows } = await tx.query<{ id: string; name: string }>(
    `select o.id, o.name from memberships m join organizations o on o.id = m.organization_id where m.user_id = $1 order by o.name, o.id`,
    [userId],
  );
  return rows;
}
