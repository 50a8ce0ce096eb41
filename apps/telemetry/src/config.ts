/** The telemetry process's settings (production entry); the only place it reads the environment. */
export interface TelemetryConfig {
  host: string;
  port: number;
  databaseUrl: string;
  poolMax: number;
  logLevel: string;
  assetsDir: string;
  /** The core API's GET /v1/public/telemetry/jwks.json. */
  sessionJwksUrl: string;
  authJwksUrl: string;
  authIssuer: string;
  authAudience: string | null;
}

export function parseTelemetryConfig(env: Record<string, string | undefined>): TelemetryConfig {
  const need = (k: string) => {
    const v = env[k];
    if (!v) throw new Error(`${k} is required for the telemetry service`);
    return v;
  };
  const core = env.CORE_API_URL ?? 'http://127.0.0.1:3000';
  return {
    host: env.HOST ?? '127.0.0.1',
    port: Number(env.TELEMETRY_PORT ?? 3001),
    databaseUrl: need('DATABASE_URL'),
    poolMax: Number(env.DATABASE_POOL_MAX ?? 20),
    logLevel: env.LOG_LEVEL ?? 'info',
    assetsDir: env.ASSETS_DIR ?? '.data/assets',
    sessionJwksUrl: env.TELEMETRY_JWKS_URL ?? `${core}/v1/public/telemetry/jwks.json`,
    authJwksUrl: need('AUTH_JWKS_URL'),
    authIssuer: need('AUTH_ISSUER'),
    authAudience: env.AUTH_AUDIENCE ?? null,
  };
}
