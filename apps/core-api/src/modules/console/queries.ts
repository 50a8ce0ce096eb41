import type { Queryable } from '@clinic/db';
import type { Pagination } from '@clinic/http-kit';

// The console runs as app_bypass (superadmin): every statement names the organization itself.

export interface ConsolePatient {
  id: string;
  organization_id: string;
  user_id: string;
  email: string;
  profile_shared: boolean;
  deleted_at: Date | null;
  created_at: Date;
}

const PATIENT = `p.id, p.organization_id, p.user_id, u.email, p.profile_shared, p.deleted_at, p.created_at`;

export async function listPatients(tx: Queryable, orgId: string, page: Pagination): Promise<{ rows: ConsolePatient[]; total: number }> {
  const count = await tx.query<{ total: number }>('select count(*)::int as total from patients where organization_id = $1', [orgId]);
  const { rows } = await tx.query<ConsolePatient>(
    `select ${PATIENT} from patients p join users u on u.id = p.user_id
     where p.organization_id = $1 order by p.created_at desc, p.id desc limit $2 offset $3`,
    [orgId, page.limit, page.offset],
  );
  return { rows, total: count.rows[0]!.total };
}

export async function findPatient(
  tx: Queryable,
  orgId: string,
  id: string,
): Promise<(ConsolePatient & { preferred_language: string | null; last_activity: Date | null }) | null> {
  const { rows } = await tx.query<ConsolePatient & { preferred_language: string | null; last_activity: Date | null }>(
    `select ${PATIENT}, u.preferred_language, u.last_activity from patients p join users u on u.id = p.user_id
     where p.organization_id = $1 and p.id = $2`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export interface ConsoleMember {
  user_id: string;
  email: string;
  kind: string;
  role_code: string;
  created_at: Date;
}

export async function listMembers(tx: Queryable, orgId: string, page: Pagination): Promise<{ rows: ConsoleMember[]; total: number }> {
  const count = await tx.query<{ total: number }>('select count(*)::int as total from memberships where organization_id = $1', [orgId]);
  const { rows } = await tx.query<ConsoleMember>(
    `select m.user_id, u.email, u.kind, r.code as role_code, m.created_at
     from memberships m join users u on u.id = m.user_id join roles r on r.id = m.role_id
     where m.organization_id = $1 order by m.created_at desc, m.user_id desc limit $2 offset $3`,
    [orgId, page.limit, page.offset],
  );
  return { rows, total: count.rows[0]!.total };
}

export interface Affiliation {
  organization_id: string;
  organization_name: string;
  relation: 'member' | 'patient';
  role_code: string | null;
}

/**
 * Cross-organization lookup: the user with this email, only if it is staff or a patient at `orgId`
 * (the session's organization is where the question comes from), and every organization it is tied to.
 */
export async function lookupUser(
  tx: Queryable,
  orgId: string,
  email: string,
): Promise<{ user_id: string; email: string; affiliations: Affiliation[] } | null> {
  const { rows } = await tx.query<{ user_id: string; email: string; affiliations: Affiliation[] }>(
    `with u as (
       select u.id, u.email from users u
       where lower(u.email) = lower($2)
         and (exists (select 1 from memberships m where m.user_id = u.id and m.organization_id = $1)
              or exists (select 1 from patients p where p.user_id = u.id and p.organization_id = $1))
     )
     select u.id as user_id, u.email, coalesce((
       select jsonb_agg(a order by a.organization_name) from (
         select o.id as organization_id, o.name as organization_name, 'member' as relation, r.code as role_code
         from memberships m join organizations o on o.id = m.organization_id join roles r on r.id = m.role_id where m.user_id = u.id
         union all
         select o.id, o.name, 'patient', null from patients p join organizations o on o.id = p.organization_id where p.user_id = u.id
       ) a), '[]'::jsonb) as affiliations
     from u`,
    [orgId, email],
  );
  return rows[0] ?? null;
}
