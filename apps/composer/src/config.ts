import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Type, type Static } from 'typebox';
import Value from 'typebox/value';
import { AssetSettingsError, AssetStoreEnv, assetStoreSettings, type AssetStoreSettings } from '@clinic/assets';

/**
 * Every setting of the composer, parsed once at start-up: the only reader of process.env in this app
 * (the embedded default passes the same environment in from the core API's main.ts).
 */
const Env = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('test'), Type.Literal('production')], { default: 'development' }),
  HOST: Type.String({ default: '127.0.0.1' }),
  COMPOSER_PORT: Type.Integer({ default: 3002, minimum: 0, maximum: 65535 }),
  COMPOSER_PUBLIC_URL: Type.Optional(Type.String()),
  DATA_DIR: Type.String({ default: '.data' }),
  DATABASE_URL: Type.Optional(Type.String()),
  DATABASE_POOL_MAX: Type.Integer({ default: 5, minimum: 1 }),
  LOG_LEVEL: Type.String({ default: 'info' }),
  // Comma-separated: the first signs, all verify (rotation without downtime).
  COMPOSER_AUTH_SECRETS: Type.Optional(Type.String()),
  COMPOSER_AUTH_MAX_SKEW_SECONDS: Type.Integer({ default: 300, minimum: 1 }),
  COMPOSER_ASSETS_DIR: Type.Optional(Type.String()),
  // ASSET_STORE=s3 and ASSET_S3_*: the same bucket as the core API (packages/assets/src/from-settings.ts).
  ...AssetStoreEnv,
  COMPOSER_CACHE_DIR: Type.Optional(Type.String()),
  COMPOSER_WORK_DIR: Type.Optional(Type.String()),
  COMPOSER_INVENTORY_TTL_SECONDS: Type.Integer({ default: 60, minimum: 0 }),
  COMPOSER_RENDER_TIMEOUT_SECONDS: Type.Integer({ default: 120, minimum: 5 }),
  COMPOSER_MAX_SETS: Type.Integer({ default: 10, minimum: 1, maximum: 50 }),
  COMPOSER_DELIVERY: Type.Union([Type.Literal('local'), Type.Literal('stream')], { default: 'local' }),
  STREAM_API_URL: Type.String({ default: 'https://api.cloudflare.com/client/v4' }),
  STREAM_ACCOUNT_ID: Type.Optional(Type.String()),
  STREAM_API_TOKEN: Type.Optional(Type.String()),
  STREAM_POLL_INTERVAL_MS: Type.Integer({ default: 5000, minimum: 10 }),
  FFMPEG_PATH: Type.String({ default: 'ffmpeg' }),
  FFPROBE_PATH: Type.String({ default: 'ffprobe' }),
});
type EnvValues = Static<typeof Env>;

export type DeliveryConfig =
  | { kind: 'local'; root: string }
  | { kind: 'stream'; apiUrl: string; accountId: string; apiToken: string; pollIntervalMs: number };

export interface ComposerConfig {
  env: EnvValues['NODE_ENV'];
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  databasePoolMax: number;
  logLevel: string;
  /** Null: anonymous calls are accepted (development and test only; refused in production). */
  authSecrets: string[] | null;
  authMaxSkewSeconds: number;
  assetsDir: string;
  /** The folder above, or the bucket of ASSET_STORE=s3. */
  assetStore: AssetStoreSettings;
  /** Local copies of primitives and their probes, per asset version (safe to delete at any time). */
  cacheDir: string;
  /** Parent of each render's temporary folder, removed when the render ends. */
  workDir: string;
  inventoryTtlSeconds: number;
  renderTimeoutSeconds: number;
  maxSets: number;
  delivery: DeliveryConfig;
  ffmpeg: string;
  ffprobe: string;
}

export class ComposerConfigError extends Error {}

export function parseComposerConfig(source: Record<string, string | undefined>): ComposerConfig {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const v = source[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const values = Value.Default(Env, Value.Convert(Env, input)) as EnvValues;
  const problems = [...Value.Errors(Env, values)].map((e) => `${e.instancePath.replace(/^\//, '') || 'config'} ${e.message}`);
  if (problems.length) throw new ComposerConfigError(`invalid composer configuration: ${problems.join('; ')}`);

  const production = values.NODE_ENV === 'production';
  const secrets =
    values.COMPOSER_AUTH_SECRETS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) ?? [];
  if (production && secrets.length === 0) {
    throw new ComposerConfigError('COMPOSER_AUTH_SECRETS is required when NODE_ENV=production: the composer refuses anonymous calls there');
  }
  if (secrets.some((s) => s.length < 32)) throw new ComposerConfigError('each COMPOSER_AUTH_SECRETS entry must be at least 32 characters');

  const dataDir = resolve(values.DATA_DIR);
  let assetStore: AssetStoreSettings;
  try {
    assetStore = assetStoreSettings(values, { production });
  } catch (err) {
    throw err instanceof AssetSettingsError ? new ComposerConfigError(err.message) : err;
  }
  let delivery: DeliveryConfig;
  if (values.COMPOSER_DELIVERY === 'stream') {
    if (!values.STREAM_ACCOUNT_ID || !values.STREAM_API_TOKEN) {
      throw new ComposerConfigError('COMPOSER_DELIVERY=stream needs STREAM_ACCOUNT_ID and STREAM_API_TOKEN');
    }
    let api: URL;
    try {
      api = new URL(values.STREAM_API_URL);
    } catch {
      throw new ComposerConfigError('STREAM_API_URL is not a URL');
    }
    // The token travels to this address: plain HTTP only to a loopback test server, never in production.
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(api.hostname);
    if (api.protocol !== 'https:' && (production || !loopback)) {
      throw new ComposerConfigError(
        'STREAM_API_URL must use https (plain http is accepted only for a loopback test server outside production)',
      );
    }
    delivery = {
      kind: 'stream',
      apiUrl: values.STREAM_API_URL.replace(/\/+$/, ''),
      accountId: values.STREAM_ACCOUNT_ID,
      apiToken: values.STREAM_API_TOKEN,
      pollIntervalMs: values.STREAM_POLL_INTERVAL_MS,
    };
  } else {
    delivery = { kind: 'local', root: join(dataDir, 'composer', 'hls') };
  }

  const host = values.HOST === '0.0.0.0' ? '127.0.0.1' : values.HOST;
  return {
    env: values.NODE_ENV,
    host: values.HOST,
    port: values.COMPOSER_PORT,
    publicUrl: (values.COMPOSER_PUBLIC_URL ?? `http://${host}:${values.COMPOSER_PORT}`).replace(/\/+$/, ''),
    dataDir,
    databaseUrl: values.DATABASE_URL ?? null,
    databasePoolMax: values.DATABASE_POOL_MAX,
    logLevel: values.LOG_LEVEL,
    authSecrets: secrets.length ? secrets : null,
    authMaxSkewSeconds: values.COMPOSER_AUTH_MAX_SKEW_SECONDS,
    assetsDir: resolve(values.COMPOSER_ASSETS_DIR ?? join(dataDir, 'assets')),
    assetStore,
    cacheDir: resolve(values.COMPOSER_CACHE_DIR ?? join(dataDir, 'composer', 'cache')),
    workDir: resolve(values.COMPOSER_WORK_DIR ?? tmpdir()),
    inventoryTtlSeconds: values.COMPOSER_INVENTORY_TTL_SECONDS,
    renderTimeoutSeconds: values.COMPOSER_RENDER_TIMEOUT_SECONDS,
    maxSets: values.COMPOSER_MAX_SETS,
    delivery,
    ffmpeg: values.FFMPEG_PATH,
    ffprobe: values.FFPROBE_PATH,
  };
}

/** The composer's settings from this process's environment (its main, the embedded companion, the CLI, the worker). */
export const composerConfigFromEnv = (): ComposerConfig => parseComposerConfig(process.env);
