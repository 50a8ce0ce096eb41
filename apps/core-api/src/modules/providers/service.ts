import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import type { SecretBox } from '../../platform/secrets.ts';
import { recordChange } from '../../platform/audit.ts';
import type { Actor } from '../../platform/actor.ts';
import { maskCredentials, openCredentials, sealCredentials, type Credentials } from './credentials.ts';
import { resolvesPublicly, urlProblem } from '../../platform/outgoing-url.ts';
import { endpointProblem } from './endpoint.ts';
import { frontendApiOf } from '../../platform/auth/identity-provider.ts';
import { findProvider, insertOverride, updateProvider, type ProviderRow, organizationExists } from './queries.ts';
import { SHAPES, type Capability } from './schemas.ts';

export interface ProviderDeps {
  secrets: SecretBox;
  allowPrivateEndpoints: boolean;
}

/** The row as the console sees it: never a secret (spec 4.10). */
export function toPublic(row: ProviderRow, secrets: SecretBox) {
  const { credentials_sealed, ...rest } = row;
  return { ...rest, credentials: credentials_sealed ? maskCredentials(openCredentials(secrets, credentials_sealed)) : null };
}

/** 400 with one field per problem, named like `config.region`. */
function check(schema: TSchema, value: unknown, prefix: string, fields: Record<string, string>): void {
  for (const e of Value.Errors(schema, value)) {
    const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const extra = (e.params as { additionalProperties?: string[]; requiredProperties?: string[] }) ?? {};
    const names = extra.additionalProperties ?? extra.requiredProperties ?? [];
    if (names.length) for (const n of names) fields[`${prefix}.${n}`] = e.message;
    else fields[path ? `${prefix}.${path}` : prefix] = e.message;
  }
}

async function validate(capability: Capability, creds: unknown, config: Record<string, unknown>, allowPrivate: boolean): Promise<void> {
  const fields: Record<string, string> = {};
  if (creds !== undefined) check(SHAPES[capability].credentials, creds, 'credentials', fields);
  // Token verification takes the issuer from the publishable key (platform/auth/identity-provider.ts).
  const publishable = (creds as { publishable_key?: unknown } | undefined)?.publishable_key;
  if (capability === 'auth' && typeof publishable === 'string' && !fields['credentials.publishable_key'] && !frontendApiOf(publishable))
    fields['credentials.publishable_key'] = 'must be pk_test_ or pk_live_ and the base64 of the frontend API host followed by $';
  check(SHAPES[capability].config, config, 'config', fields);
  if (typeof config.endpoint_url === 'string') {
    // At creation the name is resolved too (a clear 400); the ping's sockets check again when they connect.
    const problem =
      endpointProblem(config.endpoint_url, allowPrivate) ??
      (config.endpoint_url === '' ? null : await resolvesPublicly(config.endpoint_url, allowPrivate));
    if (problem) fields['config.endpoint_url'] = problem;
  }
  if (typeof config.smtp_endpoint === 'string' && config.smtp_endpoint !== '') {
    const problem = urlProblem(config.smtp_endpoint, allowPrivate, { schemes: ['smtp:', 'smtps:'] });
    if (problem) fields['config.smtp_endpoint'] = problem;
  }
  if (Object.keys(fields).length) throw errors.validation(fields, `The ${capability} provider body does not match spec 2.11; see fields.`);
}

const notFound = () => errors.notFound('No platform service provider with this id.');

export async function getProvider(tx: Queryable, id: string): Promise<ProviderRow> {
  const row = await findProvider(tx, id);
  if (!row) throw notFound();
  return row;
}

export interface UpdateInput {
  credentials?: Record<string, unknown>;
  config?: Record<string, unknown>;
  status?: 'active' | 'inactive';
}

/**
 * PATCH (spec 4.10): credentials replace the stored set, config keys merge onto the stored config, and
 * the result is checked whole against the capability's shape. The audit entry carries the full diff
 * with credentials masked. A row in error stays in error until a health check passes (spec 3.3).
 */
export async function updateProviderRow(
  tx: Queryable,
  actor: Actor,
  deps: ProviderDeps,
  id: string,
  body: UpdateInput,
): Promise<ProviderRow> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give credentials, config or status' });
  const row = await findProvider(tx, id, { forUpdate: true });
  if (!row) throw notFound();
  const config = { ...row.config, ...(body.config ?? {}) };
  await validate(row.capability, body.credentials, config, deps.allowPrivateEndpoints);

  const oldCreds = row.credentials_sealed ? openCredentials(deps.secrets, row.credentials_sealed) : null;
  const newCreds = (body.credentials as Credentials | undefined) ?? oldCreds;
  let status: ProviderRow['status'] = row.status;
  if (body.status === 'inactive') status = 'inactive';
  if (body.status === 'active' && row.status === 'inactive') status = 'active';
  if (status !== 'inactive' && !newCreds) throw errors.validation({ status: 'set credentials before activating the row' });

  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const key of new Set([...Object.keys(row.config), ...Object.keys(config)])) {
    if (JSON.stringify(row.config[key]) !== JSON.stringify(config[key]))
      changes[`config.${key}`] = { from: row.config[key] ?? null, to: config[key] ?? null };
  }
  if (body.credentials) changes.credentials = { from: maskCredentials(oldCreds), to: maskCredentials(newCreds) };
  if (status !== row.status) changes.status = { from: row.status, to: status };
  if (!Object.keys(changes).length) return row;

  const sealed = body.credentials ? sealCredentials(deps.secrets, newCreds!) : null;
  const next = await updateProvider(tx, id, {
    credentials_sealed: sealed ? sealed.sealed : row.credentials_sealed,
    credentials_key_id: sealed ? sealed.keyId : row.credentials_key_id,
    config,
    status,
  });
  await recordChange(
    tx,
    actor,
    'platform_service_provider.updated',
    { type: 'platform_service_provider', id: id, organizationId: row.organization_id },
    { capability: row.capability, provider: row.provider, changes },
  );
  return next;
}

export interface CreateOverrideInput {
  capability: Capability;
  organization_id: string;
  credentials: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** A per-organization override, active at once; one per capability and organization (409 otherwise). */
export async function createOverride(tx: Queryable, actor: Actor, deps: ProviderDeps, body: CreateOverrideInput): Promise<ProviderRow> {
  await validate(body.capability, body.credentials, body.config, deps.allowPrivateEndpoints);
  if (!(await organizationExists(tx, body.organization_id))) throw errors.organizationNotFound();
  const sealed = sealCredentials(deps.secrets, body.credentials as Credentials);
  const row = await insertOverride(tx, body.capability, SHAPES[body.capability].provider, body.organization_id, {
    credentials_sealed: sealed.sealed,
    credentials_key_id: sealed.keyId,
    config: body.config,
    status: 'active',
  });
  if (!row) throw errors.conflict('provider_exists', `This organization already has a ${body.capability} provider row; PATCH it instead.`);
  await recordChange(
    tx,
    actor,
    'platform_service_provider.created',
    { type: 'platform_service_provider', id: row.id, organizationId: body.organization_id },
    {
      capability: row.capability,
      provider: row.provider,
      config: row.config,
      credentials: maskCredentials(body.credentials as Credentials),
    },
  );
  return row;
}
