import type { Queryable } from '@clinic/db';

export async function storeCurrentOrganization(tx: Queryable, userId: string, organizationId: string): Promise<void> {
  await tx.query('update users set current_organization_id = $2 where id = $1', [userId, organizationId]);
}

/**
 * The caller's own row, locked so that the audited "from" value is exact under concurrent PATCHes.
 * app_rls may update only current_organization_id and preferred_language of its own row.
 */
export async function lockPreferredLanguage(tx: Queryable, userId: string): Promise<string | null | undefined> {
  const { rows } = await tx.query<{ preferred_language: string | null }>('select preferred_language from users where id = $1 for update', [
    userId,
  ]);
  return rows[0] ? rows[0].preferred_language : undefined;
}

export async function storePreferredLanguage(tx: Queryable, userId: string, language: string | null): Promise<void> {
  await tx.query('update users set preferred_language = $2 where id = $1', [userId, language]);
}

/** language_code of the organization, or null when it is not visible to the request (no access). */
export async function organizationLanguage(tx: Queryable, organizationId: string): Promise<string | null> {
  const { rows } = await tx.query<{ language_code: string }>('select language_code from organizations where id = $1', [organizationId]);
  return rows[0]?.language_code ?? null;
}

export interface ClinicOrganizationRow {
  id: string;
  slug: string;
  name: string;
  language_code: string;
}

/** The organizations of these ids, by name (case-insensitive) then id. */
export async function organizationsByIds(tx: Queryable, ids: readonly string[]): Promise<ClinicOrganizationRow[]> {
  if (!ids.length) return [];
  const { rows } = await tx.query<ClinicOrganizationRow>(
    'select id, slug, name, language_code from organizations where id = any($1::uuid[]) order by lower(name), id',
    [ids],
  );
  return rows;
}
