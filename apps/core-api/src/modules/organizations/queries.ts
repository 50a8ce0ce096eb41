import { isUniqueViolation, type Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';

export interface OrganizationRow {
  id: string;
  slug: string;
  name: string;
  language_code: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, slug, name, language_code, created_at, updated_at';

export async function findOrganization(tx: Queryable, id: string): Promise<OrganizationRow | null> {
  const { rows } = await tx.query<OrganizationRow>(`select ${COLUMNS} from organizations where id = $1`, [id]);
  return rows[0] ?? null;
}

export interface NewOrganization {
  slug: string;
  name: string;
  language_code?: string | undefined;
}

/** Inserts the organization; a taken slug becomes 409 slug_taken. */
export async function insertOrganization(tx: Queryable, org: NewOrganization): Promise<OrganizationRow> {
  try {
    const { rows } = await tx.query<OrganizationRow>(
      `insert into organizations (slug, name, language_code) values ($1, $2, coalesce($3, 'en')) returning ${COLUMNS}`,
      [org.slug, org.name, org.language_code ?? null],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) throw errors.conflict('slug_taken', `The slug "${org.slug}" is already used by another organization; choose another.`);
    throw err;
  }
}

/** Clones every system role template, with its permission set, into the organization: one statement. */
export async function cloneRoleTemplates(tx: Queryable, organizationId: string): Promise<void> {
  await tx.query(
    `with clones as (
       insert into roles (organization_id, code, name, is_system)
       select $1, t.code, t.name, true from roles t where t.organization_id is null and t.is_system
       returning id, code
     )
     insert into role_permissions (role_id, permission_code, organization_id)
     select c.id, rp.permission_code, $1
     from clones c
     join roles t on t.organization_id is null and t.code = c.code
     join role_permissions rp on rp.role_id = t.id`,
    [organizationId],
  );
}

/**
 * Public resolution (spec 5.3): one row by equality on slug or on a verified domain, allow-listed
 * columns only. Runs as app_bypass because no open row-level policy exists for anonymous callers.
 */
export async function resolveOrganization(tx: Queryable, by: { slug?: string; domain?: string }): Promise<OrganizationRow | null> {
  const { rows } = by.slug
    ? await tx.query<OrganizationRow>(`select ${COLUMNS} from organizations where slug = $1`, [by.slug])
    : await tx.query<OrganizationRow>(
        `select o.id, o.slug, o.name, o.language_code, o.created_at, o.updated_at
         from organization_domains d join organizations o on o.id = d.organization_id
         where d.domain = $1 and d.verified_at is not null`,
        [by.domain],
      );
  return rows[0] ?? null;
}
