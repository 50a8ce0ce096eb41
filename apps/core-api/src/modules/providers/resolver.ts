import type { Database } from '@clinic/db';
import { AppError } from '@clinic/http-kit';
import type { SecretBox } from '../../platform/secrets.ts';
import { openCredentials, type Credentials } from './credentials.ts';
import { resolutionRows, type ProviderRow } from './queries.ts';
import type { Capability } from './schemas.ts';

export interface ResolvedProvider {
  capability: Capability;
  source: 'organization' | 'platform' | 'default';
  /** null for the default (no active row: the deployment's built-in provider). */
  row: Pick<ProviderRow, 'id' | 'provider' | 'config' | 'updated_at'> | null;
  credentials: Credentials | null;
}

interface Entry {
  /** The row's resolution, and for a row in error the 502 it answers with (unless the caller takes failing rows). */
  outcome: ResolvedProvider;
  error: AppError | null;
  /** updated_at of every row that took part, to tell whether a refresh must decrypt again. */
  version: string;
  fetchedAt: number;
}

export interface ProviderResolver {
  /**
   * `acceptFailing`: a row in error is returned instead of the 502. Only the identity provider asks for it: a
   * 502 on every token would lock out the operator who must PATCH the row to repair it (docs/decisions.md).
   */
  resolve(capability: Capability, orgId: string | null, opts?: { acceptFailing?: boolean }): Promise<ResolvedProvider>;
  /**
   * The fresh cached resolution, without touching the database (undefined when there is none or it expired).
   * For callers that may hold a transaction (the asset store is read inside some): on the embedded database a
   * query of their own would wait for it forever.
   */
  peek(capability: Capability, orgId: string | null): { outcome: ResolvedProvider; error: AppError | null } | undefined;
  /** The writing instance's own entries of a capability go at once (spec 3.3). */
  invalidate(capability: Capability): void;
}

const unavailable = (row: ProviderRow) =>
  new AppError(
    502,
    'provider_unavailable',
    `The ${row.capability} provider configured ${row.organization_id ? 'for this organization' : 'for the platform'} is failing its health checks; it is not replaced silently.`,
  );

/**
 * Resolution (spec 2.11, 3.3, 5): the organization's override, else the platform row, else the
 * deployment default. An inactive row is skipped; a row in error answers 502 and is never replaced.
 * Each instance caches outcomes for `ttlMs` (5 minutes); after that it pulls the rows' updated_at and
 * decrypts again only when they changed.
 */
export function createProviderResolver(deps: { db: Database; secrets: SecretBox; ttlMs: number; now?: () => number }): ProviderResolver {
  const cache = new Map<string, Entry>();
  const now = deps.now ?? Date.now;

  function decide(capability: Capability, rows: ProviderRow[]): { outcome: ResolvedProvider; error: AppError | null } {
    const override = rows.find((r) => r.organization_id !== null);
    const platform = rows.find((r) => r.organization_id === null);
    for (const [row, source] of [
      [override, 'organization'],
      [platform, 'platform'],
    ] as const) {
      if (!row || row.status === 'inactive') continue;
      const { id, provider, config, updated_at } = row;
      return {
        outcome: {
          capability,
          source,
          row: { id, provider, config, updated_at },
          credentials: openCredentials(deps.secrets, row.credentials_sealed!),
        },
        error: row.status === 'error' ? unavailable(row) : null,
      };
    }
    return { outcome: { capability, source: 'default', row: null, credentials: null }, error: null };
  }

  return {
    async resolve(capability, orgId, opts) {
      const key = `${capability}:${orgId ?? 'platform'}`;
      const hit = cache.get(key);
      if (!hit || now() - hit.fetchedAt >= deps.ttlMs) {
        const rows = await resolutionRows(deps.db, capability, orgId);
        const version = rows
          .map((r) => `${r.id}@${new Date(r.updated_at).toISOString()}`)
          .sort()
          .join(',');
        if (hit && hit.version === version) hit.fetchedAt = now();
        else cache.set(key, { ...decide(capability, rows), version, fetchedAt: now() });
      }
      const entry = cache.get(key)!;
      if (entry.error && !opts?.acceptFailing) throw entry.error;
      return entry.outcome;
    },
    peek(capability, orgId) {
      const hit = cache.get(`${capability}:${orgId ?? 'platform'}`);
      return hit && now() - hit.fetchedAt < deps.ttlMs ? { outcome: hit.outcome, error: hit.error } : undefined;
    },
    invalidate(capability) {
      for (const key of cache.keys()) if (key.startsWith(`${capability}:`)) cache.delete(key);
    },
  };
}
