import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import type { SecretBox } from '../../platform/secrets.ts';
import type { WorkerRegistry } from '../../worker/types.ts';
import { recordChange } from '../../platform/audit.ts';
import { describeFailure, pingProvider } from './clients.ts';
import { openCredentials, scrub } from './credentials.ts';
import { assertPublicEndpoint } from './endpoint.ts';
import { allProviders, recordHealth } from './queries.ts';

export interface HealthDeps {
  db: Database;
  secrets: SecretBox;
  logger: Logger;
  pingTimeoutMs: number;
  allowPrivateEndpoints: boolean;
  healthIntervalSeconds: number;
}

export interface HealthResult {
  id: string;
  status: string;
  changed: boolean;
}

/**
 * Walks every row (spec 5): pings active and error rows through their real client and moves them as
 * spec 3.3 says (active -> error with last_error; error -> active once the check passes). Inactive rows
 * are left alone. Pings run outside any transaction; a row changed meanwhile (a PATCH) is not stamped
 * with a verdict about its old credentials. A status change is audited, with no actor. `only` checks one row.
 */
export async function checkProviders(deps: HealthDeps, only?: string): Promise<HealthResult[]> {
  const results: HealthResult[] = [];
  for (const row of await allProviders(deps.db)) {
    // One row on an operator's demand (POST .../{id}/check), else all of them.
    if (only && row.id !== only) continue;
    if (row.status === 'inactive' || !row.credentials_sealed) continue;
    let outcome: { ok: true } | { ok: false; error: string };
    let creds: Record<string, string> = {};
    try {
      creds = openCredentials(deps.secrets, row.credentials_sealed);
      await assertPublicEndpoint(String(row.config.endpoint_url ?? ''), deps.allowPrivateEndpoints);
      await pingProvider(
        { capability: row.capability, credentials: creds, config: row.config },
        deps.pingTimeoutMs,
        deps.allowPrivateEndpoints,
      );
      outcome = { ok: true };
    } catch (err) {
      outcome = { ok: false, error: scrub(describeFailure(err), creds) };
    }
    const updated = await deps.db.transaction(async (tx) => {
      const next = await recordHealth(tx, row.id, row.updated_at, outcome);
      if (next && next.status !== row.status) {
        await recordChange(
          tx,
          null,
          'platform_service_provider.status_changed',
          { type: 'platform_service_provider', id: row.id, organizationId: row.organization_id },
          { capability: row.capability, from: row.status, to: next.status, ...(outcome.ok ? {} : { last_error: outcome.error }) },
        );
      }
      return next;
    });
    if (!updated) continue;
    if (updated.status !== row.status) {
      deps.logger.warn(
        { provider_id: row.id, capability: row.capability, from: row.status, to: updated.status, last_error: updated.last_error },
        'provider status changed',
      );
    }
    results.push({ id: row.id, status: updated.status, changed: updated.status !== row.status });
  }
  return results;
}

/** The scheduled health check: every 1 minute in production, 5 elsewhere (PROVIDER_HEALTH_INTERVAL). */
export function registerProviderJobs(registry: WorkerRegistry, deps: HealthDeps): void {
  registry.every('providers.health_check', deps.healthIntervalSeconds, async () => {
    await checkProviders(deps);
  });
}
