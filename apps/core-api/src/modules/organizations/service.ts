import type { Database, Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { insertAudit } from '../audit/queries.ts';
import type { RequestContext } from '../identity/context.ts';
import { cloneRoleTemplates, findOrganization, insertOrganization, resolveOrganization, type NewOrganization, type OrganizationRow } from './queries.ts';

export interface Actor {
  ctx: RequestContext;
  ip: string | null;
}

/** POST /v1/organizations: the organization and its role clones commit together or not at all. */
export async function createOrganization(tx: Queryable, actor: Actor, input: NewOrganization): Promise<OrganizationRow> {
  const org = await insertOrganization(tx, input);
  await cloneRoleTemplates(tx, org.id);
  await insertAudit(tx, {
    organizationId: org.id,
    actorUserId: actor.ctx.principalId,
    action: 'organization.created',
    entityType: 'organization',
    entityId: org.id,
    data: { slug: org.slug, name: org.name, language_code: org.language_code },
    ip: actor.ip,
  });
  return org;
}

export async function getOrganization(tx: Queryable, id: string): Promise<OrganizationRow> {
  const org = await findOrganization(tx, id);
  if (!org) throw errors.organizationNotFound();
  return org;
}

const SLUG = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** GET /v1/public/organizations/resolve: exactly one of slug or domain. */
export async function resolvePublic(db: Database, query: { slug?: string | undefined; domain?: string | undefined }): Promise<OrganizationRow> {
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
