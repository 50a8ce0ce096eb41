import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { Actor } from '../../platform/actor.ts';
import type { TxtAnswer, TxtLookup } from './dns.ts';
import { deleteDomain as deleteRow, findDomain, insertDomain, listDomains as listRows, markVerified, type DomainRow } from './queries.ts';

/** Runs fn in one request transaction (request.inTx). */
export type InTx = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;

export interface DomainDeps {
  /** TXT records are looked up at `<prefix>.<domain>` (config DOMAIN_VERIFICATION_PREFIX). */
  prefix: string;
  lookupTxt: TxtLookup;
}

export interface DomainView {
  id: string;
  domain: string;
  verified: boolean;
  verified_at: Date | null;
  created_at: Date;
  verification: { type: 'TXT'; name: string; value: string };
}

export function toView(row: DomainRow, prefix: string): DomainView {
  return {
    id: row.id,
    domain: row.domain,
    verified: row.verified_at !== null,
    verified_at: row.verified_at,
    created_at: row.created_at,
    verification: { type: 'TXT', name: `${prefix}.${row.domain}`, value: row.verification_token },
  };
}

// The same shape public resolution accepts (organizations/service.ts), so every domain that can be
// added can also be resolved once verified.
const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** A host name as stored: trimmed, lower case, IDN in its xn-- form, no trailing dot. Else 400 with fields.domain. */
export function normalizeDomain(input: string): string {
  const invalid = (reason: string) => errors.validation({ domain: reason });
  const raw = input.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) throw invalid('give the host name only, without a scheme such as https://');
  const host = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (isIP(host) || isIP(host.replace(/^\[(.*)\]$/, '$1')))
    throw invalid('IP addresses cannot be custom domains; give a host name such as clinic.example.com');
  if (/[\s/?#@:\\]/.test(host)) throw invalid('give the host name only: no port, path, user or spaces');
  const ascii = domainToASCII(host);
  if (!ascii || !HOSTNAME.test(ascii)) {
    throw invalid(
      'must be a host name such as clinic.example.com: labels of letters, digits and hyphens, at least one dot, a top-level domain of letters',
    );
  }
  return ascii;
}

export async function listDomains(tx: Queryable, deps: Pick<DomainDeps, 'prefix'>, orgId: string): Promise<DomainView[]> {
  return (await listRows(tx, orgId)).map((r) => toView(r, deps.prefix));
}

/** POST .../domains: a domain belongs to one organization at most (409 domain_taken otherwise). */
export async function addDomain(
  tx: Queryable,
  deps: Pick<DomainDeps, 'prefix'>,
  actor: Actor,
  orgId: string,
  input: string,
): Promise<DomainView> {
  const domain = normalizeDomain(input);
  const token = `clinic-verification=${randomBytes(16).toString('hex')}`;
  const result = await insertDomain(tx, orgId, domain, token);
  if ('taken' in result) {
    throw errors.conflict(
      'domain_taken',
      result.taken === 'this_organization'
        ? `The domain ${domain} is already added to this organization; see GET /v1/organizations/${orgId}/domains.`
        : `The domain ${domain} is already claimed by another organization. If you control it, contact support.`,
    );
  }
  await recordChange(tx, actor, 'domain.added', { type: 'organization_domain', id: result.row.id, organizationId: orgId }, { domain });
  await emitEvent(tx, { organizationId: orgId, type: 'domain.added', data: { organization_id: orgId, domain_id: result.row.id, domain } });
  return toView(result.row, deps.prefix);
}

export async function deleteDomain(tx: Queryable, actor: Actor, orgId: string, domainId: string): Promise<void> {
  const row = await deleteRow(tx, orgId, domainId);
  if (!row) throw errors.notFound('No domain with this id in this organization.');
  await recordChange(
    tx,
    actor,
    'domain.deleted',
    { type: 'organization_domain', id: row.id, organizationId: orgId },
    { domain: row.domain, was_verified: row.verified_at !== null },
  );
  await emitEvent(tx, {
    organizationId: orgId,
    type: 'domain.deleted',
    data: { organization_id: orgId, domain_id: row.id, domain: row.domain },
  });
}

export type VerifyView = DomainView & { reason?: string };

function notVerifiedReason(view: DomainView, answer: TxtAnswer): string {
  const { name, value } = view.verification;
  const publish = `Publish a TXT record at ${name} with the value "${value}", allow time for DNS to propagate, then verify again.`;
  if (answer.status === 'none') return `No TXT record was found at ${name}. ${publish}`;
  if (answer.status === 'found')
    return `The TXT records at ${name} (${answer.records.length} found) do not include the expected value. ${publish}`;
  return `The DNS lookup of ${name} failed (${answer.code}); this is often temporary. ${publish}`;
}

/**
 * POST .../verify. The DNS lookup runs between two short transactions, never inside one: a slow name
 * server must not hold a database connection. A domain already verified is returned as it is (no
 * lookup): verification is not withdrawn by a later DNS outage. A negative result is a 200 with
 * verified false and a reason; nothing is written for it.
 */
export async function verifyDomain(inTx: InTx, deps: DomainDeps, actor: Actor, orgId: string, domainId: string): Promise<VerifyView> {
  const row = await inTx((tx) => findDomain(tx, orgId, domainId));
  if (!row) throw errors.notFound('No domain with this id in this organization.');
  const view = toView(row, deps.prefix);
  if (view.verified) return view;

  const answer = await deps.lookupTxt(view.verification.name);
  if (answer.status !== 'found' || !answer.records.some((r) => r.trim() === row.verification_token)) {
    return { ...view, verified: false, reason: notVerifiedReason(view, answer) };
  }

  const verified = await inTx(async (tx) => {
    const updated = await markVerified(tx, orgId, domainId);
    if (!updated) return findDomain(tx, orgId, domainId); // deleted meanwhile (null), or verified by a concurrent call
    await recordChange(
      tx,
      actor,
      'domain.verified',
      { type: 'organization_domain', id: updated.id, organizationId: orgId },
      { domain: updated.domain, record_name: view.verification.name },
    );
    await emitEvent(tx, {
      organizationId: orgId,
      type: 'domain.verified',
      data: { organization_id: orgId, domain_id: updated.id, domain: updated.domain },
    });
    return updated;
  });
  if (!verified) throw errors.notFound('No domain with this id in this organization.');
  return toView(verified, deps.prefix);
}
