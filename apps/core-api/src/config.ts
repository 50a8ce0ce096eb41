import { resolve } from 'node:path';
import { Type, type Static } from 'typebox';
import Value from 'typebox/value';
import { AssetSettingsError, AssetStoreEnv, assetStoreSettings, type AssetStoreSettings } from '@clinic/assets';

/** Spec 8 retention, in calendar months: media session metrics 2 years, pose aggregates 7, replay blobs 6 months, audit 6 years. */
export const RETENTION_DEFAULTS = { mediaMetricsMonths: 24, poseAggregatesMonths: 84, replayBlobsMonths: 6, auditMonths: 72 } as const;
/** Below this, AUDIT_RETENTION_MONTHS is refused: a slip (6 for 6 years) would delete the trail for good. */
export const AUDIT_RETENTION_MIN_MONTHS = 12;

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
  // Time-outs (spec 8; docs/operations.md): a request, one database statement, a long operation.
  REQUEST_TIMEOUT_MS: Type.Integer({ default: 30_000, minimum: 1 }),
  QUERY_TIMEOUT_MS: Type.Integer({ default: 5000, minimum: 1 }),
  LONG_OPERATION_TIMEOUT_MS: Type.Integer({ default: 120_000, minimum: 1 }),
  // Unset: `loopback` on the embedded default (the web proxy beside it forwards the visitor's address), else false.
  TRUST_PROXY: Type.Optional(Type.String()),
  // The development OpenID provider of the embedded default (docs/decisions.md): its own port.
  DEV_OIDC_PORT: Type.Integer({ default: 3004, minimum: 0, maximum: 65535 }),
  AUTH_ISSUER: Type.Optional(Type.String()),
  AUTH_AUDIENCE: Type.Optional(Type.String()),
  AUTH_JWKS_URL: Type.Optional(Type.String()),
  AUTH_JWKS_COOLDOWN_SECONDS: Type.Number({ default: 30, minimum: 0 }),
  AUTH_PROFILE_SOURCE: Type.Union([Type.Literal('token'), Type.Literal('oidc_userinfo'), Type.Literal('clerk')], { default: 'token' }),
  AUTH_USERINFO_URL: Type.Optional(Type.String()),
  AUTH_CLERK_API_URL: Type.String({ default: 'https://api.clerk.com' }),
  AUTH_CLERK_SECRET_KEY: Type.Optional(Type.String()),
  // After an instance sees a new identity provider (the identity row changed), tokens of the one before keep
  // verifying there for this long; 0 refuses them at once (docs/operations.md, "Rotating credentials").
  AUTH_ROTATION_GRACE_SECONDS: Type.Number({ default: 600, minimum: 0, maximum: 86_400 }),
  RATELIMIT_API_LIMIT: Type.Integer({ default: 1200, minimum: 1 }),
  RATELIMIT_API_WINDOW: Type.String({ default: '60' }),
  RATELIMIT_PUBLIC_RESOLVE_LIMIT: Type.Integer({ default: 30, minimum: 1 }),
  RATELIMIT_PUBLIC_RESOLVE_WINDOW: Type.String({ default: '60' }),
  RATELIMIT_PUBLIC_LIMIT: Type.Integer({ default: 100, minimum: 1 }),
  RATELIMIT_USER_LIMIT: Type.Integer({ default: 1000, minimum: 1 }),
  RATELIMIT_USER_WINDOW: Type.String({ default: '60' }),
  RATELIMIT_TENANT_LIMIT: Type.Integer({ default: 3000, minimum: 1 }),
  RATELIMIT_TENANT_WINDOW: Type.String({ default: '60' }),
  // Per-organization figures set by the operator: `<organization id>=<limit>,...` (a bigger plan).
  RATELIMIT_TENANT_REFRESH_SECONDS: Type.Integer({ default: 30, minimum: 0, maximum: 3600 }),
  SCHEDULING_HOLD_MINUTES: Type.Integer({ default: 10, minimum: 1, maximum: 60 }),
  RATELIMIT_HOLDS_PER_IP: Type.Integer({ default: 10, minimum: 1 }),
  RATELIMIT_HOLDS_PER_IP_WINDOW: Type.String({ default: '600' }),
  RATELIMIT_HOLDS_PER_ORG: Type.Integer({ default: 600, minimum: 1 }),
  RATELIMIT_HOLDS_PER_ORG_WINDOW: Type.String({ default: '60' }),
  // Open hold streams (GET /v1/public/holds/{id}/stream) one client address may have on one instance.
  SCHEDULING_HOLD_STREAMS_PER_IP: Type.Integer({ default: 20, minimum: 1 }),
  APPOINTMENT_NO_SHOW_GRACE_MINUTES: Type.Integer({ default: 30, minimum: 0 }),
  RATELIMIT_PUBLIC_WINDOW: Type.String({ default: '60' }),
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
  // Retention of spec 8 in calendar months (docs/operations.md): telemetry, and the audit log (with checkpoints).
  TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS: Type.Integer({ default: RETENTION_DEFAULTS.mediaMetricsMonths }),
  TELEMETRY_POSE_RETENTION_MONTHS: Type.Integer({ default: RETENTION_DEFAULTS.poseAggregatesMonths }),
  TELEMETRY_REPLAY_RETENTION_MONTHS: Type.Integer({ default: RETENTION_DEFAULTS.replayBlobsMonths }),
  AUDIT_RETENTION_MONTHS: Type.Integer({ default: RETENTION_DEFAULTS.auditMonths }),
  // Telemetry (docs/telemetry.md): its port, the Ed25519 private JWK that signs exercise-session
  // tokens (required in production; generated per process otherwise), token and replay-URL lifetimes.
  // Messages and automations (docs/automations.md).
  MESSAGES_OUTBOX_DIR: Type.Optional(Type.String()),
  MESSAGES_FROM: Type.String({ default: 'no-reply@clinic.localhost', maxLength: 320 }),
  MESSAGES_SEND_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 120_000 }),
  MESSAGES_SMTP_CONNECTIONS: Type.Integer({ default: 5, minimum: 1, maximum: 100 }),
  MESSAGES_RETRY_SCHEDULE: Type.String({ default: '60,300,1800,7200,21600' }),
  AUTOMATIONS_SWEEP_SECONDS: Type.Integer({ default: 30, minimum: 1, maximum: 3600 }),
  AUTOMATIONS_BATCH: Type.Integer({ default: 50, minimum: 1, maximum: 500 }),
  SEGMENTS_SYNC_LIMIT: Type.Integer({ default: 5000, minimum: 0 }),
  SEGMENTS_CHUNK: Type.Integer({ default: 20_000, minimum: 1 }),
  TELEMETRY_PORT: Type.Integer({ default: 3001, minimum: 0, maximum: 65535 }),
  // Where the core API reaches the telemetry service for the console's system status (default beside it).
  TELEMETRY_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  TELEMETRY_SIGNING_KEY: Type.Optional(Type.String()),
  TELEMETRY_SESSION_TOKEN_TTL_SECONDS: Type.Integer({ default: 3600, minimum: 60, maximum: 86_400 }),
  TELEMETRY_REPLAY_URL_TTL_SECONDS: Type.Integer({ default: 300, minimum: 10, maximum: 86_400 }),
  // Telerehab plan sessions (docs/telerehab.md): where the core API asks the composer for an item's video
  // (default the composer beside it, http://127.0.0.1:COMPOSER_PORT), signed with the first of
  // COMPOSER_AUTH_SECRETS (unsigned when none, as the composer accepts in development), and how long it waits.
  COMPOSER_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  COMPOSER_PORT: Type.Integer({ default: 3002, minimum: 0, maximum: 65535 }),
  COMPOSER_AUTH_SECRETS: Type.Optional(Type.String()),
  TELEREHAB_COMPOSE_TIMEOUT_MS: Type.Integer({ default: 20_000, minimum: 100, maximum: 120_000 }),
  // Forms: the local asset folder (default `<DATA_DIR>/assets`; a temporary folder under
  // NODE_ENV=test) and the limits of files attached to forms.
  ASSETS_DIR: Type.Optional(Type.String()),
  // Asset store: ASSET_STORE=s3 and ASSET_S3_* (packages/assets/src/from-settings.ts), the same in every service.
  ...AssetStoreEnv,
  FORM_FILE_MAX_BYTES: Type.Integer({ default: 10_485_760, minimum: 1 }),
  FORM_FILE_TYPES: Type.String({ default: 'application/pdf,image/png,image/jpeg,image/webp,text/plain' }),
  // Documents (docs/documents.md): rendering bounds, the inline threshold, the download links' lifetime.
  DOCUMENT_MAX_PAGES: Type.Integer({ default: 200, minimum: 1, maximum: 2000 }),
  DOCUMENT_RENDER_TIMEOUT_MS: Type.Integer({ default: 20_000, minimum: 100, maximum: 300_000 }),
  // Engine processes of each API instance and worker; 0: one per core.
  DOCUMENT_RENDER_WORKERS: Type.Integer({ default: 0, minimum: 0, maximum: 64 }),
  DOCUMENT_INLINE_MAX_ROWS: Type.Integer({ default: 60, minimum: 0, maximum: 10_000 }),
  DOCUMENT_URL_TTL_SECONDS: Type.Integer({ default: 300, minimum: 10, maximum: 86_400 }),
  DOCUMENT_LOGO_MAX_BYTES: Type.Integer({ default: 524_288, minimum: 1024, maximum: 10_485_760 }),
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
  /** Budgets in milliseconds: a request (and its statements), and a long operation (exports, renders, evaluations). */
  timeouts: { requestMs: number; queryMs: number; longMs: number };
  trustProxy: boolean | string;
  /** Port of the development OpenID provider (embedded default only). */
  devOidcPort: number;
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
  scheduling: {
    /** How long a hold keeps its slot (SCHEDULING_HOLD_MINUTES). */
    holdMinutes: number;
    holdsPerIp: { limit: number; windowSeconds: number };
    holdsPerOrg: { limit: number; windowSeconds: number };
    /** Open hold streams per client address on one instance (SCHEDULING_HOLD_STREAMS_PER_IP). */
    holdStreamsPerIp: number;
    /** How long after its end an appointment nobody checked in becomes no_show. */
    noShowGraceMinutes: number;
  };
  /** MASTER_KEYS as given; null means the development/test default of platform/secrets.ts. */
  masterKeys: string | null;
  providers: {
    /** Per-instance cache of resolved providers (spec 8: 5 minutes). */
    cacheTtlSeconds: number;
    /** Health check interval: 1 minute in production, 5 minutes elsewhere (staging sets PROVIDER_HEALTH_INTERVAL=5m). */
    healthIntervalSeconds: number;
    pingTimeoutMs: number;
    /** Tokens of the identity provider an instance replaced keep verifying there this long (AUTH_ROTATION_GRACE_SECONDS). */
    identityGraceSeconds: number;
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
  /** How long data is kept before the worker's sweeps delete it, in calendar months (spec 8). */
  retention: {
    /** TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS: media session metrics. */
    mediaMetricsMonths: number;
    /** TELEMETRY_POSE_RETENTION_MONTHS: ended exercise sessions with their pose aggregates. */
    poseAggregatesMonths: number;
    /** TELEMETRY_REPLAY_RETENTION_MONTHS: pose replay blobs (the session stays). */
    replayBlobsMonths: number;
    /** AUDIT_RETENTION_MONTHS: audit entries, each cut recorded by a signed checkpoint. */
    auditMonths: number;
  };
  /**
   * The universal re-consent gate (spec 4.6 rule 3). On unless CONSENT_GATE=off, which exists for
   * bench/gate.ts (the gate against no gate on the same data) and must not be used in production.
   */
  consentGate: boolean;
  messages: {
    /** Where the embedded default (no active provider row) writes messages: `<dataDir>/outbox` unless set. */
    outboxDir: string;
    /** The From address of outbox messages (a provider row names its own verified sender). */
    from: string;
    /** One SMTP exchange or SMS API call. */
    timeoutMs: number;
    /** Pooled SMTP connections per provider row and worker. */
    smtpConnections: number;
    /** Delays in seconds before each retry of a temporarily failed send; its length + 1 is the attempt limit. */
    retryScheduleSeconds: number[];
  };
  automations: {
    /** How often the worker looks for appointment reminders and schedules that have come due. */
    sweepSeconds: number;
    /** Runs handled at once by one worker. */
    batchSize: number;
  };
  segments: {
    /** POST /evaluate answers at once (200) for organizations with at most this many patients; a job (202) above. */
    syncLimit: number;
    /** Patients per statement of a background evaluation (its progress steps). */
    chunkSize: number;
  };
  telemetry: {
    port: number;
    /** The telemetry service's base URL as the core API reaches it (the console's system status). */
    url: string;
    /** Private JWK (JSON) of the session-token key; null: a key generated at start (not in production). */
    signingKey: string | null;
    sessionTokenTtlSeconds: number;
    replayUrlTtlSeconds: number;
  };
  telerehab: {
    /** The composer's base URL as the core API reaches it. */
    composerUrl: string;
    /** Signs compose requests (docs/composer.md); null: unsigned (development). */
    composerSecret: string | null;
    composeTimeoutMs: number;
  };
  /** Root of the local asset store; null: `<dataDir>/assets`, or a temporary folder under NODE_ENV=test. */
  assetsDir: string | null;
  /** The local folder above, or an S3-compatible bucket (ASSET_STORE=s3). */
  assetStore: AssetStoreSettings;
  /** Files attached to forms: largest size in bytes and the accepted content types. */
  formFiles: { maxBytes: number; types: string[] };
  documents: {
    maxPages: number;
    renderTimeoutMs: number;
    /** PDF engine processes (each lays out one document at a time); 0: one per core. */
    renderWorkers: number;
    /** Documents with more table rows (answers, items) than this render on the worker; shorter ones inline. */
    inlineMaxRows: number;
    /** Lifetime of a download URL (S3 presign or the API's signed path). */
    urlTtlSeconds: number;
    logoMaxBytes: number;
  };
  rateLimits: {
    api: { limit: number; windowSeconds: number };
    publicResolve: { limit: number; windowSeconds: number };
    /** Every /v1/public/... route, one budget per IP (RATELIMIT_PUBLIC_*). */
    publicBooking: { limit: number; windowSeconds: number };
    /** Per authenticated principal, whatever its address (RATELIMIT_USER_*). */
    user: { limit: number; windowSeconds: number };
    /**
     * Per organization and endpoint (RATELIMIT_TENANT_*). The operator's per-organization figures live in the
     * database (PUT /v1/admin/organizations/{id}/rate-limits); each instance reloads them every refreshSeconds.
     */
    tenant: { limit: number; windowSeconds: number; refreshSeconds: number };
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
  const retention = parseRetention(values);
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
    timeouts: { requestMs: values.REQUEST_TIMEOUT_MS, queryMs: values.QUERY_TIMEOUT_MS, longMs: values.LONG_OPERATION_TIMEOUT_MS },
    trustProxy: parseTrustProxy(values.TRUST_PROXY ?? (values.DATABASE_URL ? 'false' : 'loopback')),
    devOidcPort: values.DEV_OIDC_PORT,
    auth,
    dnsServers: values.DNS_SERVERS.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    domainVerificationPrefix: values.DOMAIN_VERIFICATION_PREFIX,
    idempotencyTtlSeconds: values.IDEMPOTENCY_TTL_SECONDS,
    scheduling: {
      holdMinutes: values.SCHEDULING_HOLD_MINUTES,
      holdsPerIp: {
        limit: values.RATELIMIT_HOLDS_PER_IP,
        windowSeconds: parseWindow('RATELIMIT_HOLDS_PER_IP_WINDOW', values.RATELIMIT_HOLDS_PER_IP_WINDOW),
      },
      holdsPerOrg: {
        limit: values.RATELIMIT_HOLDS_PER_ORG,
        windowSeconds: parseWindow('RATELIMIT_HOLDS_PER_ORG_WINDOW', values.RATELIMIT_HOLDS_PER_ORG_WINDOW),
      },
      holdStreamsPerIp: values.SCHEDULING_HOLD_STREAMS_PER_IP,
      noShowGraceMinutes: values.APPOINTMENT_NO_SHOW_GRACE_MINUTES,
    },
    masterKeys: values.MASTER_KEYS ?? null,
    providers: {
      cacheTtlSeconds: values.PROVIDER_CACHE_TTL_SECONDS,
      healthIntervalSeconds: values.PROVIDER_HEALTH_INTERVAL
        ? parseWindow('PROVIDER_HEALTH_INTERVAL', values.PROVIDER_HEALTH_INTERVAL)
        : production
          ? 60
          : 300,
      pingTimeoutMs: values.PROVIDER_PING_TIMEOUT_MS,
      identityGraceSeconds: values.AUTH_ROTATION_GRACE_SECONDS,
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
    retention,
    consentGate: values.CONSENT_GATE === 'on',
    messages: {
      outboxDir: values.MESSAGES_OUTBOX_DIR ? resolve(values.MESSAGES_OUTBOX_DIR) : resolve(values.DATA_DIR, 'outbox'),
      from: values.MESSAGES_FROM,
      timeoutMs: values.MESSAGES_SEND_TIMEOUT_MS,
      smtpConnections: values.MESSAGES_SMTP_CONNECTIONS,
      retryScheduleSeconds: parseSchedule(values.MESSAGES_RETRY_SCHEDULE, 'MESSAGES_RETRY_SCHEDULE'),
    },
    automations: { sweepSeconds: values.AUTOMATIONS_SWEEP_SECONDS, batchSize: values.AUTOMATIONS_BATCH },
    segments: { syncLimit: values.SEGMENTS_SYNC_LIMIT, chunkSize: values.SEGMENTS_CHUNK },
    telemetry: {
      port: values.TELEMETRY_PORT,
      url: (values.TELEMETRY_URL ?? `http://127.0.0.1:${values.TELEMETRY_PORT}`).replace(/\/+$/, ''),
      signingKey: values.TELEMETRY_SIGNING_KEY ?? null,
      sessionTokenTtlSeconds: values.TELEMETRY_SESSION_TOKEN_TTL_SECONDS,
      replayUrlTtlSeconds: values.TELEMETRY_REPLAY_URL_TTL_SECONDS,
    },
    telerehab: {
      composerUrl: (values.COMPOSER_URL ?? `http://127.0.0.1:${values.COMPOSER_PORT}`).replace(/\/+$/, ''),
      composerSecret:
        values.COMPOSER_AUTH_SECRETS?.split(',')
          .map((x) => x.trim())
          .find(Boolean) ?? null,
      composeTimeoutMs: values.TELEREHAB_COMPOSE_TIMEOUT_MS,
    },
    assetsDir: values.ASSETS_DIR ? resolve(values.ASSETS_DIR) : null,
    assetStore: parseAssetStore(values, production),
    formFiles: {
      maxBytes: values.FORM_FILE_MAX_BYTES,
      types: values.FORM_FILE_TYPES.split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    },
    documents: {
      maxPages: values.DOCUMENT_MAX_PAGES,
      renderTimeoutMs: values.DOCUMENT_RENDER_TIMEOUT_MS,
      renderWorkers: values.DOCUMENT_RENDER_WORKERS,
      inlineMaxRows: values.DOCUMENT_INLINE_MAX_ROWS,
      urlTtlSeconds: values.DOCUMENT_URL_TTL_SECONDS,
      logoMaxBytes: values.DOCUMENT_LOGO_MAX_BYTES,
    },
    rateLimits: {
      api: { limit: values.RATELIMIT_API_LIMIT, windowSeconds: parseWindow('RATELIMIT_API_WINDOW', values.RATELIMIT_API_WINDOW) },
      publicResolve: {
        limit: values.RATELIMIT_PUBLIC_RESOLVE_LIMIT,
        windowSeconds: parseWindow('RATELIMIT_PUBLIC_RESOLVE_WINDOW', values.RATELIMIT_PUBLIC_RESOLVE_WINDOW),
      },
      publicBooking: {
        limit: values.RATELIMIT_PUBLIC_LIMIT,
        windowSeconds: parseWindow('RATELIMIT_PUBLIC_WINDOW', values.RATELIMIT_PUBLIC_WINDOW),
      },
      user: { limit: values.RATELIMIT_USER_LIMIT, windowSeconds: parseWindow('RATELIMIT_USER_WINDOW', values.RATELIMIT_USER_WINDOW) },
      tenant: {
        limit: values.RATELIMIT_TENANT_LIMIT,
        windowSeconds: parseWindow('RATELIMIT_TENANT_WINDOW', values.RATELIMIT_TENANT_WINDOW),
        refreshSeconds: values.RATELIMIT_TENANT_REFRESH_SECONDS,
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

/** The retention settings: whole months, at least 1 (12 for the audit log), at most 100 years. */
function parseRetention(values: EnvValues): Config['retention'] {
  const months = (name: keyof EnvValues, min = 1): number => {
    const v = values[name] as number;
    if (v < min || v > 1200) {
      const why = min > 1 ? ' (a smaller figure would delete most of the audit trail for good; it is in months: 72 is 6 years)' : '';
      throw new ConfigError(`${name} must be a whole number of calendar months from ${min} to 1200 (got ${v})${why}`);
    }
    return v;
  };
  const r = {
    mediaMetricsMonths: months('TELEMETRY_MEDIA_METRICS_RETENTION_MONTHS'),
    poseAggregatesMonths: months('TELEMETRY_POSE_RETENTION_MONTHS'),
    replayBlobsMonths: months('TELEMETRY_REPLAY_RETENTION_MONTHS'),
    auditMonths: months('AUDIT_RETENTION_MONTHS', AUDIT_RETENTION_MIN_MONTHS),
  };
  if (r.replayBlobsMonths > r.poseAggregatesMonths)
    throw new ConfigError(
      `TELEMETRY_REPLAY_RETENTION_MONTHS (${r.replayBlobsMonths}) may not exceed TELEMETRY_POSE_RETENTION_MONTHS (${r.poseAggregatesMonths}): a replay goes with its session`,
    );
  return r;
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
function parseSchedule(raw: string, name = 'WEBHOOK_RETRY_SCHEDULE'): number[] {
  const parts = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const delays = parts.map(Number);
  if (delays.length === 0 || delays.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new ConfigError(`${name} must list delays in whole seconds, like 5,300,1800 (got "${raw}")`);
  }
  return delays;
}
