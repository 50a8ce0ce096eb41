import { resolve } from 'node:path';
import { Type, type Static } from 'typebox';
import Value from 'typebox/value';
import { AssetSettingsError, AssetStoreEnv, assetStoreSettings, type AssetStoreSettings } from '@clinic/assets';

/**
 * Every setting the platform reads, parsed once at start-up: nothing else reads process.env.
 * The README's configuration table is this schema; keep them in step.
 */
const Env = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('test'), Type.Literal('production')], { default: 'development' }),
  HOST: Type.String({ default: '127.0.0.1' }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  PUBLIC_URL: Type.Optional(Type.String()),
  DATA_DIR: Type.String({ default: '.data' }),
  DATABASE_URL: Type.Optional(Type.String()),
  DATABASE_POOL_MAX: Type.Integer({ default: 20, minimum: 1 }),
  REDIS_URL: Type.Optional(Type.String()),
  REDIS_KEY_PREFIX: Type.String({ default: '' }),
  LOG_LEVEL: Type.String({ default: 'info' }),
  BODY_LIMIT_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024 }),
  TRUST_PROXY: Type.String({ default: 'false' }),
  AUTH_ISSUER: Type.Optional(Type.String()),
  AUTH_AUDIENCE: Type.Optional(Type.String()),
  AUTH_JWKS_URL: Type.Optional(Type.String()),
  AUTH_JWKS_COOLDOWN_SECONDS: Type.Number({ default: 30, minimum: 0 }),
  AUTH_PROFILE_SOURCE: Type.Union([Type.Literal('token'), Type.Literal('oidc_userinfo'), Type.Literal('clerk')], { default: 'token' }),
  AUTH_USERINFO_URL: Type.Optional(Type.String()),
  AUTH_CLERK_API_URL: Type.String({ default: 'https://api.clerk.com' }),
  AUTH_CLERK_SECRET_KEY: Type.Optional(Type.String()),
  RATELIMIT_API_LIMIT: Type.Integer({ default: 1200, minimum: 1 }),
  RATELIMIT_API_WINDOW: Type.String({ default: '60' }),
  RATELIMIT_PUBLIC_RESOLVE_LIMIT: Type.Integer({ default: 30, minimum: 1 }),
  RATELIMIT_PUBLIC_RESOLVE_WINDOW: Type.String({ default: '60' }),
  DNS_SERVERS: Type.String({ default: '' }),
  DOMAIN_VERIFICATION_PREFIX: Type.String({ default: '_clinic-verification', pattern: '^_?[a-z0-9-]+$' }),
  CONSENT_GATE: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  IDEMPOTENCY_TTL_SECONDS: Type.Integer({ default: 86_400, minimum: 60 }),
  // Secrets at rest (platform/secrets.ts): `id:base64key,...`, first seals; required in production.
  MASTER_KEYS: Type.Optional(Type.String()),
  // Operator surface: provider cache and health check, break-glass rate limit.
  PROVIDER_CACHE_TTL_SECONDS: Type.Number({ default: 300, minimum: 0 }),
  PROVIDER_HEALTH_INTERVAL: Type.Optional(Type.String()),
  PROVIDER_PING_TIMEOUT_MS: Type.Integer({ default: 5000, minimum: 100, maximum: 60_000 }),
  PROVIDER_ALLOW_PRIVATE_ENDPOINTS: Type.Optional(Type.Boolean()),
  BREAK_GLASS_RATE_LIMIT: Type.Integer({ default: 10, minimum: 1 }),
  BREAK_GLASS_RATE_WINDOW: Type.String({ default: '1h' }),
  // Durable jobs and webhooks (docs/operations.md).
  WORKER_DISPATCH_INTERVAL_MS: Type.Integer({ default: 200, minimum: 10 }),
  WORKER_MAINTENANCE_INTERVAL_SECONDS: Type.Integer({ default: 30, minimum: 1 }),
  WORKER_DELIVERY_BATCH: Type.Integer({ default: 50, minimum: 1, maximum: 500 }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 60_000 }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({ default: '5,300,1800,7200,18000,36000,36000' }),
  WEBHOOK_RATE_LIMIT: Type.Integer({ default: 50, minimum: 1 }),
  WEBHOOK_RATE_WINDOW_SECONDS: Type.Integer({ default: 5, minimum: 1 }),
  WEBHOOK_DISABLE_AFTER_SECONDS: Type.Integer({ default: 432_000, minimum: 0 }),
  WEBHOOK_SECRET_OVERLAP_SECONDS: Type.Integer({ default: 86_400, minimum: 0, maximum: 604_800 }),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: Type.Boolean({ default: false }),
  WEBHOOK_CA_FILE: Type.Optional(Type.String()),
  WEBHOOK_RETENTION_DAYS: Type.Integer({ default: 30, minimum: 1 }),
  // Telemetry (docs/telemetry.md): its port, the Ed25519 private JWK that signs exercise-session
  // tokens (required in production; generated per process otherwise), token and replay-URL lifetimes.
  TELEMETRY_PORT: Type.Integer({ default: 3001, minimum: 0, maximum: 65535 }),
  TELEMETRY_SIGNING_KEY: Type.Optional(Type.String()),
  TELEMETRY_SESSION_TOKEN_TTL_SECONDS: Type.Integer({ default: 3600, minimum: 60, maximum: 86_400 }),
  TELEMETRY_REPLAY_URL_TTL_SECONDS: Type.Integer({ default: 300, minimum: 10, maximum: 86_400 }),
  // Forms: the local asset folder (default `<DATA_DIR>/assets`; a temporary folder under
  // NODE_ENV=test) and the limits of files attached to forms.
  ASSETS_DIR: Type.Optional(Type.String()),
  // Asset store: ASSET_STORE=s3 and ASSET_S3_* (packages/assets/src/from-settings.ts), the same in every service.
  ...AssetStoreEnv,
  FORM_FILE_MAX_BYTES: Type.Integer({ default: 10_485_760, minimum: 1 }),
  FORM_FILE_TYPES: Type.String({ default: 'application/pdf,image/png,image/jpeg,image/webp,text/plain' }),
  SYSTEM_MANUFACTURER_NAME: Type.String({ default: 'Clinic Platform contributors' }),
  SYSTEM_MANUFACTURER_ADDRESS: Type.String({ default: 'Not configured: set SYSTEM_MANUFACTURER_ADDRESS' }),
  SYSTEM_PRODUCT_NAME: Type.String({ default: 'Clinic Platform' }),
  SYSTEM_PRODUCT_VERSION: Type.String({ default: '0.1.0' }),
  SYSTEM_UDI_DI: Type.String({ default: '' }),
  SYSTEM_REGULATORY_MARKS: Type.String({ default: '' }),
  SYSTEM_MANUFACTURE_DATE: Type.String({ default: '' }),
  SYSTEM_INSTRUCTIONS_URL: Type.String({ default: '' }),
  SYSTEM_SUPPORT_EMAIL: Type.String({ default: '' }),
});
type EnvValues = Static<typeof Env>;

export interface Config {
  env: EnvValues['NODE_ENV'];
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  databasePoolMax: number;
  redisUrl: string | null;
  /** Namespace of every Redis key, so several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string;
  logLevel: string;
  bodyLimitBytes: number;
  trustProxy: boolean | string;
  auth:
    | { mode: 'development'; issuer: string; audience: string }
    | {
        mode: 'jwks';
        issuer: string;
        audience: string | null;
        jwksUrl: string;
        jwksCooldownSeconds: number;
        profile:
          | { source: 'token' }
          | { source: 'oidc_userinfo'; userinfoUrl: string }
          | { source: 'clerk'; apiUrl: string; secretKey: string };
      };
  /** Resolvers used to verify custom domains (host or host:port); empty means the system's. */
  dnsServers: string[];
  /** TXT records are looked up at `<prefix>.<domain>`. */
  domainVerificationPrefix: string;
  idempotencyTtlSeconds: number;
  /** MASTER_KEYS as given; null means the development/test default of platform/secrets.ts. */
  masterKeys: string | null;
  providers: {
    /** Per-instance cache of resolved providers (spec 8: 5 minutes). */
    cacheTtlSeconds: number;
    /** Health check interval: 1 minute in production, 5 minutes elsewhere (staging sets PROVIDER_HEALTH_INTERVAL=5m). */
    healthIntervalSeconds: number;
    pingTimeoutMs: number;
    /** endpoint_url may name loopback or private addresses (local wire-format servers); refused in production. */
    allowPrivateEndpoints: boolean;
  };
  breakGlass: { rateLimit: number; rateWindowSeconds: number };
  worker: { dispatchIntervalMs: number; maintenanceIntervalSeconds: number; deliveryBatch: number };
  webhooks: {
    timeoutMs: number;
    /** Delays before attempts 2, 3, ... in seconds (attempt 1 is immediate); its length + 1 is the attempt limit. */
    retryScheduleSeconds: number[];
    rateLimit: { limit: number; windowSeconds: number };
    /** A subscription whose endpoint has failed without a success for this long is disabled. */
    disableAfterSeconds: number;
    secretOverlapSeconds: number;
    allowPrivateNetworks: boolean;
    caFile: string | null;
    /** Finished deliveries and dispatched events are kept this long. */
    retentionDays: number;
  };
  /**
   * The universal re-consent gate (spec 4.6 rule 3). On unless CONSENT_GATE=off, which exists for
   * bench/gate.ts (the gate against no gate on the same data) and must not be used in production.
   */
  consentGate: boolean;
  telemetry: {
    port: number;
    /** Private JWK (JSON) of the session-token key; null: a key generated at start (not in production). */
    signingKey: string | null;
    sessionTokenTtlSeconds: number;
    replayUrlTtlSeconds: number;
  };
  /** Root of the local asset store; null: `<dataDir>/assets`, or a temporary folder under NODE_ENV=test. */
  assetsDir: string | null;
  /** The local folder above, or an S3-compatible bucket (ASSET_STORE=s3). */
  assetStore: AssetStoreSettings;
  /** Files attached to forms: largest size in bytes and the accepted content types. */
  formFiles: { maxBytes: number; types: string[] };
  rateLimits: {
    api: { limit: number; windowSeconds: number };
    publicResolve: { limit: number; windowSeconds: number };
  };
  systemInfo: {
    manufacturer_name: string;
    manufacturer_address: string;
    product_name: string;
    version: string;
    udi_di: string;
    regulatory_marks: string[];
    manufacture_date: string;
    instructions_url: string;
    support_email: string;
  };
}

export class ConfigError extends Error {}

/** `60`, `60s`, `1m` or `1h` to seconds. */
export function parseWindow(name: string, raw: string): number {
  const m = /^(\d+)\s*(s|m|h)?$/.exec(raw.trim());
  if (!m || Number(m[1]) <= 0) throw new ConfigError(`${name} must be a positive number of seconds, or like 60s, 1m, 1h (got "${raw}")`);
  const unit = m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1;
  return Number(m[1]) * unit;
}

/** `true`, `false`, or a comma-separated list of trusted proxy addresses or CIDR ranges. */
function parseTrustProxy(raw: string): boolean | string {
  if (raw === 'true') return true;
  if (raw === 'false' || raw === '') return false;
  return raw;
}

function required(v: string | undefined, name: string, why: string): string {
  if (!v) throw new ConfigError(`${name} is required ${why}`);
  return v;
}

export function parseConfig(source: Record<string, string | undefined>): Config {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const v = source[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const values = Value.Default(Env, Value.Convert(Env, input)) as EnvValues;
  const problems = [...Value.Errors(Env, values)].map((e) => `${e.instancePath.replace(/^\//, '') || 'config'} ${e.message}`);
  if (problems.length) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);

  const production = values.NODE_ENV === 'production';
  if (production && values.WEBHOOK_ALLOW_PRIVATE_NETWORKS) {
    throw new ConfigError(
      'WEBHOOK_ALLOW_PRIVATE_NETWORKS=true lets webhooks reach internal addresses and is refused when NODE_ENV=production',
    );
  }
  if (production && values.PROVIDER_ALLOW_PRIVATE_ENDPOINTS) {
    throw new ConfigError(
      'PROVIDER_ALLOW_PRIVATE_ENDPOINTS=true lets provider endpoints reach internal addresses and is refused when NODE_ENV=production',
    );
  }
  if (production && values.CONSENT_GATE === 'off') {
    throw new ConfigError('CONSENT_GATE=off is for benchmarks only and is refused when NODE_ENV=production');
  }
  let auth: Config['auth'];
  if (!values.AUTH_JWKS_URL) {
    if (production) {
      throw new ConfigError(
        'AUTH_JWKS_URL and AUTH_ISSUER are required when NODE_ENV=production: the development issuer refuses to run in production',
      );
    }
    auth = { mode: 'development', issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' };
  } else {
    const issuer = required(values.AUTH_ISSUER, 'AUTH_ISSUER', 'with AUTH_JWKS_URL');
    const profile =
      values.AUTH_PROFILE_SOURCE === 'oidc_userinfo'
        ? {
            source: 'oidc_userinfo' as const,
            userinfoUrl: required(values.AUTH_USERINFO_URL, 'AUTH_USERINFO_URL', 'for AUTH_PROFILE_SOURCE=oidc_userinfo'),
          }
        : values.AUTH_PROFILE_SOURCE === 'clerk'
          ? {
              source: 'clerk' as const,
              apiUrl: values.AUTH_CLERK_API_URL,
              secretKey: required(values.AUTH_CLERK_SECRET_KEY, 'AUTH_CLERK_SECRET_KEY', 'for AUTH_PROFILE_SOURCE=clerk'),
            }
          : { source: 'token' as const };
    auth = {
      mode: 'jwks',
      issuer,
      audience: values.AUTH_AUDIENCE ?? null,
      jwksUrl: values.AUTH_JWKS_URL,
      jwksCooldownSeconds: values.AUTH_JWKS_COOLDOWN_SECONDS,
      profile,
    };
  }
  // Keys every instance must share in production (a per-process default would break the others), all named
  // at once so an operator fixes the environment in one go.
  const missingKeys = [
    !values.MASTER_KEYS && 'MASTER_KEYS (secrets at rest; generate one with: echo "k1:$(openssl rand -base64 32)")',
    !values.TELEMETRY_SIGNING_KEY && 'TELEMETRY_SIGNING_KEY (an Ed25519 private JWK that signs exercise-session tokens)',
  ].filter(Boolean);
  if (production && missingKeys.length) throw new ConfigError(`required when NODE_ENV=production: ${missingKeys.join('; ')}`);

  return {
    env: values.NODE_ENV,
    host: values.HOST,
    port: values.PORT,
    publicUrl: values.PUBLIC_URL ?? `http://${values.HOST === '0.0.0.0' ? '127.0.0.1' : values.HOST}:${values.PORT}`,
    dataDir: resolve(values.DATA_DIR),
    databaseUrl: values.DATABASE_URL ?? null,
    databasePoolMax: values.DATABASE_POOL_MAX,
    redisUrl: values.REDIS_URL ?? null,
    redisKeyPrefix: values.REDIS_KEY_PREFIX,
    logLevel: values.LOG_LEVEL,
    bodyLimitBytes: values.BODY_LIMIT_BYTES,
    trustProxy: parseTrustProxy(values.TRUST_PROXY),
    auth,
    dnsServers: values.DNS_SERVERS.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    domainVerificationPrefix: values.DOMAIN_VERIFICATION_PREFIX,
    idempotencyTtlSeconds: values.IDEMPOTENCY_TTL_SECONDS,
    masterKeys: values.MASTER_KEYS ?? null,
    providers: {
      cacheTtlSeconds: values.PROVIDER_CACHE_TTL_SECONDS,
      healthIntervalSeconds: values.PROVIDER_HEALTH_INTERVAL
        ? parseWindow('PROVIDER_HEALTH_INTERVAL', values.PROVIDER_HEALTH_INTERVAL)
        : production
          ? 60
          : 300,
      pingTimeoutMs: values.PROVIDER_PING_TIMEOUT_MS,
      allowPrivateEndpoints: values.PROVIDER_ALLOW_PRIVATE_ENDPOINTS ?? !production,
    },
    breakGlass: {
      rateLimit: values.BREAK_GLASS_RATE_LIMIT,
      rateWindowSeconds: parseWindow('BREAK_GLASS_RATE_WINDOW', values.BREAK_GLASS_RATE_WINDOW),
    },
    worker: {
      dispatchIntervalMs: values.WORKER_DISPATCH_INTERVAL_MS,
      maintenanceIntervalSeconds: values.WORKER_MAINTENANCE_INTERVAL_SECONDS,
      deliveryBatch: values.WORKER_DELIVERY_BATCH,
    },
    webhooks: {
      timeoutMs: values.WEBHOOK_TIMEOUT_MS,
      retryScheduleSeconds: parseSchedule(values.WEBHOOK_RETRY_SCHEDULE),
      rateLimit: { limit: values.WEBHOOK_RATE_LIMIT, windowSeconds: values.WEBHOOK_RATE_WINDOW_SECONDS },
      disableAfterSeconds: values.WEBHOOK_DISABLE_AFTER_SECONDS,
      secretOverlapSeconds: values.WEBHOOK_SECRET_OVERLAP_SECONDS,
      allowPrivateNetworks: values.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      caFile: values.WEBHOOK_CA_FILE ?? null,
      retentionDays: values.WEBHOOK_RETENTION_DAYS,
    },
    consentGate: values.CONSENT_GATE === 'on',
    telemetry: {
      port: values.TELEMETRY_PORT,
      signingKey: values.TELEMETRY_SIGNING_KEY ?? null,
      sessionTokenTtlSeconds: values.TELEMETRY_SESSION_TOKEN_TTL_SECONDS,
      replayUrlTtlSeconds: values.TELEMETRY_REPLAY_URL_TTL_SECONDS,
    },
    assetsDir: values.ASSETS_DIR ? resolve(values.ASSETS_DIR) : null,
    assetStore: parseAssetStore(values, production),
    formFiles: {
      maxBytes: values.FORM_FILE_MAX_BYTES,
      types: values.FORM_FILE_TYPES.split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    },
    rateLimits: {
      api: { limit: values.RATELIMIT_API_LIMIT, windowSeconds: parseWindow('RATELIMIT_API_WINDOW', values.RATELIMIT_API_WINDOW) },
      publicResolve: {
        limit: values.RATELIMIT_PUBLIC_RESOLVE_LIMIT,
        windowSeconds: parseWindow('RATELIMIT_PUBLIC_RESOLVE_WINDOW', values.RATELIMIT_PUBLIC_RESOLVE_WINDOW),
      },
    },
    systemInfo: {
      manufacturer_name: values.SYSTEM_MANUFACTURER_NAME,
      manufacturer_address: values.SYSTEM_MANUFACTURER_ADDRESS,
      product_name: values.SYSTEM_PRODUCT_NAME,
      version: values.SYSTEM_PRODUCT_VERSION,
      udi_di: values.SYSTEM_UDI_DI,
      regulatory_marks: values.SYSTEM_REGULATORY_MARKS.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      manufacture_date: values.SYSTEM_MANUFACTURE_DATE,
      instructions_url: values.SYSTEM_INSTRUCTIONS_URL,
      support_email: values.SYSTEM_SUPPORT_EMAIL,
    },
  };
}

function parseAssetStore(values: EnvValues, production: boolean): AssetStoreSettings {
  try {
    return assetStoreSettings(values, { production });
  } catch (err) {
    if (err instanceof AssetSettingsError) throw new ConfigError(err.message);
    throw err;
  }
}

/** `5,300,1800`: the delays in seconds before each retry, each a non-negative integer. */
function parseSchedule(raw: string): number[] {
  const parts = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const delays = parts.map(Number);
  if (delays.length === 0 || delays.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE must list delays in whole seconds, like 5,300,1800 (got "${raw}")`);
  }
  return delays;
}
