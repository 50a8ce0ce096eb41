import { createS3AssetStore, type AssetStore } from '@clinic/assets';
import type { AppError } from '@clinic/http-kit';
import type { Logger } from 'pino';
import type { ProviderResolver, ResolvedProvider } from '../modules/providers/resolver.ts';

/*
 * The asset store of the running service through the storage row of the platform providers (spec 2.11,
 * 3.3, 5 "credential rotation"), resolved like email: each operation asks the resolver (a map look-up while
 * its entry is fresh, PROVIDER_CACHE_TTL_SECONDS), so a PATCH of the row reaches every instance within that
 * bound. While no storage row is active the environment's store (ASSET_STORE, ASSET_S3_*, or the folder)
 * applies: the bootstrap of a new deployment.
 *
 * Every operation, reads included, goes to the store the row names now. Objects written before a rotation
 * stay readable when the row keeps naming the same bucket (new keys, same objects); a row that names
 * another bucket is a migration the operator copies first (docs/operations.md, docs/decisions.md).
 */

const str = (v: unknown) => (typeof v === 'string' ? v : '');

function storeOfRow(p: ResolvedProvider, keyPrefix: string): AssetStore {
  const config = p.row?.config ?? {};
  const creds = p.credentials ?? {};
  return createS3AssetStore({
    bucket: str(config.bucket),
    region: str(config.region),
    endpointUrl: str(config.endpoint_url) || null,
    forcePathStyle: config.use_path_style === true,
    credentials: { accessKeyId: creds.access_key_id ?? '', secretAccessKey: creds.secret_access_key ?? '' },
    keyPrefix,
  });
}

export interface RotatingAssetDeps {
  resolver: ProviderResolver;
  /** The environment's store: used while no storage row is active. */
  bootstrap: AssetStore;
  /** ASSET_S3_PREFIX: the deployment's namespace inside a bucket, kept under the row's bucket too. */
  keyPrefix: string;
  logger: Logger;
}

export interface RotatingAssetStore extends AssetStore {
  /** Resolves the storage row now (start-up, and the writing instance after a PATCH); never inside a transaction. */
  refresh(): Promise<void>;
}

type Resolution = { outcome: ResolvedProvider; error: AppError | null };

/**
 * An AssetStore that forwards each call to the store the storage row (or, without one, the environment) names.
 * Some callers read objects inside a transaction, where a query of ours would wait for theirs forever on the
 * embedded database: so a call never waits for the database. It takes the resolver's fresh entry, or else
 * the last one known while a refresh runs beside it; a rotation is thus seen by the first call after the
 * entry expires plus one round trip, within PROVIDER_CACHE_TTL_SECONDS in practice.
 */
export function createRotatingAssetStore(deps: RotatingAssetDeps): RotatingAssetStore {
  let last: Resolution | null = null;
  let current: { version: string; store: AssetStore } = { version: 'environment', store: deps.bootstrap };
  // Stores of earlier versions may have requests in flight: their sockets are released at close.
  const retired: AssetStore[] = [];
  let refreshing: Promise<void> | null = null;

  async function refresh(): Promise<void> {
    const outcome = await deps.resolver.resolve('storage', null, { acceptFailing: true });
    last = deps.resolver.peek('storage', null) ?? { outcome, error: null };
  }

  function store(): AssetStore {
    const fresh = deps.resolver.peek('storage', null);
    if (fresh) last = fresh;
    else
      refreshing ??= refresh()
        .catch((err: unknown) => deps.logger.warn({ err }, 'storage provider refresh failed; keeping the one in use'))
        .finally(() => {
          refreshing = null;
        });
    const resolved = last?.outcome;
    // A row in error answers 502 provider_unavailable, as for email: never silently another bucket.
    if (last?.error) throw last.error;
    const version = resolved?.row ? `${resolved.row.id}@${new Date(resolved.row.updated_at).toISOString()}` : 'environment';
    if (current.version !== version) {
      if (current.store !== deps.bootstrap) retired.push(current.store);
      current = { version, store: resolved?.row ? storeOfRow(resolved, deps.keyPrefix) : deps.bootstrap };
      deps.logger.info(
        { storage: resolved?.row ? { id: resolved.row.id, bucket: resolved.row.config.bucket } : 'environment' },
        'storage provider in use',
      );
    }
    return current.store;
  }

  return {
    get kind() {
      return current.store.kind;
    },
    refresh,
    put: async (key, body, opts) => store().put(key, body, opts),
    get: async (key) => store().get(key),
    head: async (key) => store().head(key),
    list: async (prefix) => store().list(prefix),
    delete: async (key) => store().delete(key),
    async signedGetUrl(key, opts) {
      const s = store();
      return s.signedGetUrl ? s.signedGetUrl(key, opts) : null;
    },
    close() {
      for (const s of new Set([...retired, current.store, deps.bootstrap])) s.close?.();
    },
  };
}
