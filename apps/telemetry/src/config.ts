import { join } from 'node:path';
import { assetStoreSettings, type AssetStoreSettings } from '@clinic/assets';

/** The telemetry process's settings (production entry); the only place it reads the environment. */
export interface TelemetryConfig {
  host: string;
  port: number;
  databaseUrl: string;
  poolMax: number;
  logLevel: string;
  assetsDir: string;
  /** ASSETS_DIR above, or the bucket of ASSET_STORE=s3 (the same ASSET_S3_* as the core API, which reads the replays). */
  assetStore: AssetStoreSettings;
  /** The core API's GET /v1/public/telemetry/jwks.json. */
  sessionJwksUrl: string;
  authJwksUrl: string;
  authIssuer: string;
  authAudience: string | null;
  /** Shared rate-limit counters across instances; in-process per instance without it. */
  redisUrl: string | null;
  /** REDIS_KEY_PREFIX, as in the core API: the start of every Redis key. */
  redisKeyPrefix: string;
  /** Pose batches per session per window (TELEMETRY_POSE_RATE_LIMIT per TELEMETRY_POSE_RATE_WINDOW_SECONDS). */
  poseRateLimit: { limit: number; windowSeconds: number };
}

export function parseTelemetryConfig(env: Record<string, string | undefined>): TelemetryConfig {
  const need = (k: string) => {
    const v = env[k];
    if (!v) throw new Error(`${k} is required for the telemetry service`);
    return v;
  };
  const positive = (k: string, fallback: number) => {
    const v = env[k] === undefined ? fallback : Number(env[k]);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${k} must be a positive integer`);
    return v;
  };
  const core = env.CORE_API_URL ?? 'http://127.0.0.1:3000';
  return {
    host: env.HOST ?? '127.0.0.1',
    port: Number(env.TELEMETRY_PORT ?? 3001),
    databaseUrl: need('DATABASE_URL'),
    poolMax: Number(env.DATABASE_POOL_MAX ?? 20),
    logLevel: env.LOG_LEVEL ?? 'info',
    assetsDir: env.ASSETS_DIR ?? join(env.DATA_DIR ?? '.data', 'assets'),
    assetStore: assetStoreSettings(env, { production: env.NODE_ENV === 'production' }),
    sessionJwksUrl: env.TELEMETRY_JWKS_URL ?? `${core}/v1/public/telemetry/jwks.json`,
    authJwksUrl: need('AUTH_JWKS_URL'),
    authIssuer: need('AUTH_ISSUER'),
    authAudience: env.AUTH_AUDIENCE ?? null,
    redisUrl: env.REDIS_URL ?? null,
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? '',
    poseRateLimit: { limit: positive('TELEMETRY_POSE_RATE_LIMIT', 300), windowSeconds: positive('TELEMETRY_POSE_RATE_WINDOW_SECONDS', 60) },
  };
}
