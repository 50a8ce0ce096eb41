import { createAssetStore } from '@clinic/assets';
import { openPostgres } from '@clinic/db';
import { createJwtVerifier, createServiceLogger } from '@clinic/http-kit';
import { Redis } from 'ioredis';
import { createRemoteJWKSet } from 'jose';
import { buildTelemetryApp } from './app.ts';
import { parseTelemetryConfig } from './config.ts';
import { createSessionTokenVerifier } from './tokens.ts';

/** Production entry (`npm run telemetry`): its own process, any number of instances, the shared database. */
const config = parseTelemetryConfig(process.env);
const logger = createServiceLogger({ level: config.logLevel });
const db = await openPostgres({ connectionString: config.databaseUrl, max: config.poolMax, applicationName: 'clinic-telemetry' });
// No offline queue: a Redis that is down fails fast and the limiter lets batches through (fail open).
const redis = config.redisUrl ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 }) : null;
redis?.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis error'));
const app = await buildTelemetryApp({
  db,
  assets: createAssetStore(config.assetStore, config.assetsDir),
  logger,
  sessionTokens: createSessionTokenVerifier(createRemoteJWKSet(new URL(config.sessionJwksUrl))),
  redis,
  redisKeyPrefix: config.redisKeyPrefix,
  poseRateLimit: config.poseRateLimit,
  userTokens: createJwtVerifier({
    keys: createRemoteJWKSet(new URL(config.authJwksUrl)),
    issuer: config.authIssuer,
    audience: config.authAudience,
  }),
});
await app.listen({ host: config.host, port: config.port });
const stop = async () => {
  await app.close();
  await db.close();
  redis?.disconnect();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
