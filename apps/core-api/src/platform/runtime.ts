import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAssetStore, describeAssetStore, type AssetStore } from '@clinic/assets';
import { acquireLock, type Database, type HeldLock, MIGRATIONS_DIR, migrate, openPglite, openPostgres } from '@clinic/db';
import { createJwtVerifier, createServiceLogger, type TokenVerifier } from '@clinic/http-kit';
import { Redis } from 'ioredis';
import { createRemoteJWKSet } from 'jose';
import type { Logger } from 'pino';
import { type AccessLog, createAccessLog } from './access-log.ts';
import type { Config } from '../config.ts';
import { permissionCatalog } from './identity/queries.ts';
import { createDevIssuer, type DevIssuer } from './auth/dev-issuer.ts';
import { createProfileSource, type ProfileSource } from './auth/profile-source.ts';
import { createRotatingIdentity } from './auth/identity-provider.ts';
import { createRotatingAssetStore } from './asset-provider.ts';
import { createSecretBox, loadMasterKeys, type SecretBox } from './secrets.ts';
import { createProviderResolver, type ProviderResolver } from '../modules/providers/resolver.ts';

/** Everything a service instance shares across requests: connections, keys, caches. */
export interface Runtime {
  config: Config;
  logger: Logger;
  db: Database;
  redis: Redis | null;
  devIssuer: DevIssuer | null;
  /** Verifies tokens of the identity row's provider, or of the AUTH_* settings while no row is active. */
  verifier: TokenVerifier;
  profile: ProfileSource;
  /** This instance's provider cache (spec 3.3): email, SMS, storage and identity all resolve through it. */
  providers: ProviderResolver;
  permissionCatalog: string[];
  /** Seals and opens secrets at rest (webhook signing secrets, provider credentials). */
  secrets: SecretBox;
  /** Files (form attachments, replays, ...): the storage row's bucket, else a folder or the bucket of ASSET_STORE=s3. */
  assets: AssetStore;
  lock: HeldLock | null;
  /** Reads of patient data, stored in batches before each read is answered (platform/access-log.ts). */
  accessLog: AccessLog;
  close(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  // Never log a credential (headers, secrets in objects, token-like query parameters): http-kit decides.
  return createServiceLogger({ level: config.logLevel });
}

/** Connects to Redis without queueing commands while it is down, so callers fail fast and fail open. */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 500,
    lazyConnect: true,
  });
  redis.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis error'));
  await redis.connect().catch((err: Error) => logger.warn({ err: err.message }, 'redis unreachable at start-up; running degraded'));
  return redis;
}

export interface RuntimeOverrides {
  db?: Database;
  logger?: Logger;
  devIssuer?: DevIssuer;
  skipMigrations?: boolean;
}

export async function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const logger = overrides.logger ?? createLogger(config);
  let lock: HeldLock | null = null;
  let db = overrides.db;
  if (!db) {
    if (config.databaseUrl) {
      db = await openPostgres({
        connectionString: config.databaseUrl,
        max: config.databasePoolMax,
        statementTimeoutMs: config.timeouts.queryMs,
      });
    } else {
      lock = await acquireLock(config.dataDir);
      db = await openPglite(join(config.dataDir, 'pgdata'));
    }
  }
  if (!overrides.skipMigrations) await migrate(db, MIGRATIONS_DIR, logger);
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : null;

  let devIssuer: DevIssuer | null = null;
  let verifier: TokenVerifier;
  if (config.auth.mode === 'development') {
    devIssuer =
      overrides.devIssuer ??
      (await createDevIssuer({ dataDir: config.dataDir, issuer: config.auth.issuer, audience: config.auth.audience }));
    verifier = createJwtVerifier({ keys: devIssuer.keys, issuer: devIssuer.acceptedIssuers, audience: devIssuer.audience });
  } else {
    const keys = createRemoteJWKSet(new URL(config.auth.jwksUrl), {
      cooldownDuration: config.auth.jwksCooldownSeconds * 1000,
      timeoutDuration: 5000,
    });
    verifier = createJwtVerifier({ keys, issuer: config.auth.issuer, audience: config.auth.audience });
  }
  const catalog = await permissionCatalog(db);
  const secrets = createSecretBox(await loadMasterKeys({ spec: config.masterKeys, env: config.env, dataDir: config.dataDir }));
  // Tests get a fresh folder each: no test sees another's files, and nothing lands in DATA_DIR.
  const tempAssets = config.assetStore.kind === 'local' && !config.assetsDir && config.env === 'test';
  const assetsRoot = config.assetsDir ?? (tempAssets ? await mkdtemp(join(tmpdir(), 'clinic-assets-')) : join(config.dataDir, 'assets'));
  const providers = createProviderResolver({ db, secrets, ttlMs: config.providers.cacheTtlSeconds * 1000 });
  const assets = createRotatingAssetStore({
    resolver: providers,
    bootstrap: createAssetStore(config.assetStore, assetsRoot),
    keyPrefix: config.assetStore.kind === 's3' ? (config.assetStore.keyPrefix ?? '') : '',
    logger,
  });
  logger.debug({ assets: describeAssetStore(config.assetStore, assetsRoot) }, 'asset store (until a storage row is active)');
  // The first call must not be the one to resolve: it may come inside a transaction (asset-provider.ts).
  await assets.refresh();
  const identity = createRotatingIdentity({
    resolver: providers,
    bootstrap: { verifier, profile: createProfileSource(config.auth) },
    graceMs: config.providers.identityGraceSeconds * 1000,
    jwksCooldownSeconds: config.auth.mode === 'jwks' ? config.auth.jwksCooldownSeconds : 30,
    logger,
  });
  const database = db;
  const accessLog = createAccessLog(database, logger);
  return {
    config,
    logger,
    db: database,
    redis,
    devIssuer,
    verifier: identity.verifier,
    profile: identity.profile,
    providers,
    permissionCatalog: catalog,
    secrets,
    assets,
    lock,
    accessLog,
    async close() {
      await accessLog.close();
      redis?.disconnect();
      if (!overrides.db) await database.close();
      await lock?.release();
      assets.close?.();
      if (tempAssets) await rm(assetsRoot, { recursive: true, force: true });
    },
  };
}
