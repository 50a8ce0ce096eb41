import type { Database, Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort, type ListEnvelope, isUuid } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { RequestContext } from '../../platform/identity/context.ts';
import type { Actor } from '../../platform/actor.ts';
import {
  cloneRoleTemplates,
  findOrganization,
  findOrganizationSettings,
  setCalendarTitle,
  insertOrganization,
  listOrganizationRows,
  lockOrganization,
  resolveOrganization,
  updateOrganizationRow,
  type NewOrganization,
  type OrganizationChange,
  type OrganizationRow,
  type OrganizationSettingsRow,
} from './queries.ts';

/** POST /v1/organizations: the organization and its role clones commit together or not at all. */
export async function createOrganization(tx: Queryable, actor: Actor, input: NewOrganization): Promise<OrganizationRow> {
  const org = await insertOrganization(tx, input);
  await cloneRoleTemplates(tx, org.id);
  await recordChange(
    tx,
    actor,
    'organization.created',
    { type: 'organization', id: org.id, organizationId: org.id },
    { slug: org.slug, name: org.name, language_code: org.language_code },
  );
  return org;
}

export async function getOrganization(tx: Queryable, id: string): Promise<OrganizationRow> {
  const org = await findOrganization(tx, id);
  if (!org) throw errors.organizationNotFound();
  return org;
}

/** Public sort fields and the SQL they stand for; `o.id` breaks ties. Names sort case-insensitively. */
export const ORGANIZATION_SORT = { name: 'lower(o.name)', slug: 'o.slug', created_at: 'o.created_at' } as const;

/**
 * GET /v1/organizations (spec 4.1 list conventions): the organizations where the caller is a staff
 * member; patient organizations are GET /v1/me/clinics. A superadmin has no memberships (spec 5.6)
 * and gets every organization, which is what the console lists.
 */
export async function listOrganizations(
  tx: Queryable,
  ctx: RequestContext,
  query: Record<string, unknown>,
): Promise<ListEnvelope<OrganizationRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, ORGANIZATION_SORT, '-created_at', 'o.id');
  const created = parseDateRange(query, 'created_at');
  const q = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await listOrganizationRows(
    tx,
    { memberId: ctx.isSuperadmin ? null : ctx.principalId, q: q || undefined, created },
    sort,
    page,
  );
  return listEnvelope(rows, page, total);
}

export interface UpdateOrganizationInput {
  name?: string | undefined;
  slug?: string | undefined;
  language_code?: string | undefined;
  calendar_title?: string | undefined;
}

/**
 * PATCH /v1/organizations/{id}: only the fields given, and of those only the ones whose value differs
 * are written and audited (`changes: { field: { from, to } }`, same transaction). A PATCH that changes
 * nothing writes nothing and returns the organization.
 */
export async function updateOrganization(
  tx: Queryable,
  actor: Actor,
  id: string,
  input: UpdateOrganizationInput,
): Promise<OrganizationRow> {
  const given = (['name', 'slug', 'language_code'] as const).filter((k) => input[k] !== undefined);
  if (!given.length && input.calendar_title === undefined)
    throw errors.validation({ _body: 'give at least one of name, slug, language_code, calendar_title' });
  const current = await lockOrganization(tx, id);
  if (!current) throw errors.organizationNotFound();
  const change: OrganizationChange = {};
  const changes: Record<string, { from: string; to: string }> = {};
  // The calendar title lives in the settings row; it changes with the organization's other fields, in one audit entry.
  if (input.calendar_title !== undefined) {
    const from = await setCalendarTitle(tx, id, input.calendar_title);
    if (from !== null && from !== input.calendar_title) changes.calendar_title = { from, to: input.calendar_title };
  }
  for (const key of given) {
    const to = input[key]!;
    if (to === current[key]) continue;
    change[key] = to;
    changes[key] = { from: current[key], to };
  }
  if (!Object.keys(changes).length) return current;
  const org = Object.keys(change).length ? await updateOrganizationRow(tx, id, change) : current;
  if (!org) throw errors.organizationNotFound();
  await recordChange(tx, actor, 'organization.updated', { type: 'organization', id: id, organizationId: id }, { changes });
  await emitEvent(tx, { organizationId: id, type: 'organization.updated', data: { organization_id: id, changed: Object.keys(changes) } });
  return org;
}

/** GET /v1/organizations/{id}/settings; the row exists for every organization (migration 0007 trigger). */
export async function getOrgSettings(tx: Queryable, id: string): Promise<OrganizationSettingsRow> {
  const settings = await findOrganizationSettings(tx, id);
  if (!settings) throw errors.notFound('This organization has no settings row.');
  return settings;
}

const SLUG = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** GET /v1/public/organizations/resolve: exactly one of slug or domain. */
export async function resolvePublic(
  db: Database,
  query: { slug?: string | undefined; domain?: string | undefined },
): Promise<OrganizationRow> {
  const slug = query.slug?.trim().toLowerCase();
  const domain = query.domain?.trim().toLowerCase().replace(/\.$/, '');
  if (!slug === !domain) {
    throw errors.queryValidation({ slug: 'give exactly one of slug or domain' });
  }
  if (slug && !SLUG.test(slug)) throw errors.organizationNotFound();
  if (domain && !DOMAIN.test(domain)) throw errors.organizationNotFound();
  const org = await db.withScope({ role: 'app_bypass', principalId: null, orgId: null, permissions: [] }, (tx) =>
    resolveOrganization(tx, slug ? { slug } : { domain: domain! }),
  );
  if (!org) throw errors.organizationNotFound();
  return org;
}

/**
 * The organization a public booking route serves (spec 5.2-5.3): `organization` (its id or slug) when
 * given, else the request's host as a verified custom domain (what the front-end proxy forwards). One
 * equality lookup on app_bypass with allow-listed columns; 404 organization_not_found otherwise.
 */
export async function resolveBookingOrganization(
  db: Database,
  by: { organization?: string | undefined; host: string },
): Promise<OrganizationRow> {
  const given = by.organization?.trim().toLowerCase();
  if (given && isUuid(given)) {
    const org = await db.withScope({ role: 'app_bypass', principalId: null, orgId: null, permissions: [] }, (tx) =>
      findOrganization(tx, given),
    );
    if (!org) throw errors.organizationNotFound();
    return org;
  }
  if (given) return resolvePublic(db, { slug: given });
  const host = by.host.toLowerCase().replace(/:\d+$/, '');
  if (!DOMAIN.test(host)) {
    throw errors.queryValidation({ organization: 'name the organization (its id or slug), or call from its custom domain' });
  }
  return resolvePublic(db, { domain: host });
}
