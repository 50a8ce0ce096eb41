import { isUniqueViolation, type Queryable } from '@clinic/db';
import { containsPattern, errors, SqlWhere, type DateRange, type Pagination, type Sort } from '@clinic/http-kit';

export interface OrganizationRow {
  id: string;
  slug: string;
  name: string;
  language_code: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, slug, name, language_code, created_at, updated_at';
const O_COLUMNS = 'o.id, o.slug, o.name, o.language_code, o.created_at, o.updated_at';

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
    if (isUniqueViolation(err))
      throw errors.conflict('slug_taken', `The slug "${org.slug}" is already used by another organization; choose another.`);
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
        `select ${O_COLUMNS}
         from organization_domains d join organizations o on o.id = d.organization_id
         where d.domain = $1 and d.verified_at is not null`,
        [by.domain],
      );
  return rows[0] ?? null;
}

export interface OrganizationListFilter {
  /** Non-superadmins: only organizations where this principal has a staff membership. */
  memberId: string | null;
  q?: string | undefined;
  created: DateRange;
}

/**
 * GET /v1/organizations: one page and the total in ONE statement. The membership filter is written
 * out rather than left to organizations_read, which also shows patient organizations and the one in
 * scope; superadmins (app_bypass, no policy) pass memberId null and see every organization.
 */
export async function listOrganizationRows(
  tx: Queryable,
  filter: OrganizationListFilter,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: OrganizationRow[]; total: number }> {
  const w = new SqlWhere()
    .optional('o.id in (select m.organization_id from memberships m where m.user_id = ?)', filter.memberId ?? undefined)
    .dateRange('o.created_at', filter.created);
  if (filter.q !== undefined) {
    const pattern = containsPattern(filter.q);
    w.add('(o.name ilike ? or o.slug ilike ?)', pattern, pattern);
  }
  const { rows } = await tx.query<OrganizationRow & { total: number }>(
    `select t.total, p.*
     from (select count(*)::int as total from organizations o where ${w.text}) t
     left join lateral (
       select ${O_COLUMNS}
       from organizations o
       where ${w.text}
       order by ${sort.sql}
       limit ${w.param(page.limit)} offset ${w.param(page.offset)}
     ) p on true`,
    w.params,
  );
  const total = rows[0]?.total ?? 0;
  return { total, rows: rows.filter((r) => r.id !== null).map(({ total: _t, ...r }) => r) };
}

/** The row to update, locked against a concurrent PATCH so that the audited "from" values are exact. */
export async function lockOrganization(tx: Queryable, id: string): Promise<OrganizationRow | null> {
  const { rows } = await tx.query<OrganizationRow>(`select ${COLUMNS} from organizations where id = $1 for update`, [id]);
  return rows[0] ?? null;
}

export type OrganizationChange = Partial<Pick<OrganizationRow, 'name' | 'slug' | 'language_code'>>;
const UPDATABLE = ['name', 'slug', 'language_code'] as const;

/** Writes the given columns (names from the allow-list, values bound); a taken slug becomes 409 slug_taken. */
export async function updateOrganizationRow(tx: Queryable, id: string, change: OrganizationChange): Promise<OrganizationRow | null> {
  const keys = UPDATABLE.filter((k) => change[k] !== undefined);
  const params: unknown[] = [id, ...keys.map((k) => change[k])];
  try {
    const { rows } = await tx.query<OrganizationRow>(
      `update organizations set ${keys.map((k, i) => `${k} = $${i + 2}`).join(', ')} where id = $1 returning ${COLUMNS}`,
      params,
    );
    return rows[0] ?? null;
  } catch (err) {
    if (isUniqueViolation(err))
      throw errors.conflict('slug_taken', `The slug "${change.slug ?? ''}" is already used by another organization; choose another.`);
    throw err;
  }
}

export interface OrganizationSettingsRow {
  organization_id: string;
  language_code: string;
  default_timezone: string;
  calendar_title: 'clinic' | 'clinic_and_service' | 'full';
  updated_at: Date;
}

/** The settings row with the organization's language; null when the row is missing or not visible. */
export async function findOrganizationSettings(tx: Queryable, id: string): Promise<OrganizationSettingsRow | null> {
  const { rows } = await tx.query<OrganizationSettingsRow>(
    `select s.organization_id, o.language_code, s.default_timezone, s.calendar_title, greatest(s.updated_at, o.updated_at) as updated_at
     from organization_settings s join organizations o on o.id = s.organization_id
     where s.organization_id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

/** Sets the calendar title of the settings row; returns the one it replaced (null: not the caller's to change). */
export async function setCalendarTitle(tx: Queryable, id: string, title: string): Promise<string | null> {
  const { rows } = await tx.query<{ previous: string | null }>('select app.set_calendar_title($1, $2) as previous', [id, title]);
  return rows[0]?.previous ?? null;
}
