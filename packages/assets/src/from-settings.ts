import { Type } from 'typebox';
import { createLocalAssetStore } from './local.ts';
import { createS3AssetStore, type S3AssetStoreOptions } from './s3.ts';
import type { AssetStore } from './types.ts';

/**
 * The asset-store settings every service shares (core API, composer, telemetry), as TypeBox
 * properties a config schema spreads into its own (`Type.Object({ ...AssetStoreEnv, ... })`).
 * The same names in every process, so one environment points all of them at the same bucket.
 */
export const AssetStoreEnv = {
  ASSET_STORE: Type.Union([Type.Literal('local'), Type.Literal('s3')], { default: 'local' }),
  ASSET_S3_BUCKET: Type.Optional(Type.String()),
  ASSET_S3_REGION: Type.Optional(Type.String()),
  ASSET_S3_ENDPOINT_URL: Type.Optional(Type.String()),
  ASSET_S3_FORCE_PATH_STYLE: Type.Optional(Type.Boolean()),
  ASSET_S3_ACCESS_KEY_ID: Type.Optional(Type.String()),
  ASSET_S3_SECRET_ACCESS_KEY: Type.Optional(Type.String()),
  ASSET_S3_PREFIX: Type.Optional(Type.String()),
};

/** What a config keeps: the local folder (whose path each service decides) or a bucket. */
export type AssetStoreSettings = { kind: 'local' } | ({ kind: 's3' } & S3AssetStoreOptions);

export class AssetSettingsError extends Error {}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Checks the ASSET_* values (already converted by a TypeBox schema, or raw strings as the telemetry
 * config passes them) and returns the store to build. Refuses half a configuration rather than
 * falling back to the folder: files written to the wrong place would be lost to the other services.
 */
export function assetStoreSettings(values: Record<string, unknown>, opts: { production: boolean }): AssetStoreSettings {
  const str = (k: keyof typeof AssetStoreEnv) => {
    const v = values[k];
    return typeof v === 'string' && v.trim() !== '' ? v.trim() : null;
  };
  const kind = str('ASSET_STORE') ?? 'local';
  if (kind !== 'local' && kind !== 's3') throw new AssetSettingsError(`ASSET_STORE must be local or s3 (got "${kind}")`);
  const s3Keys = (Object.keys(AssetStoreEnv) as (keyof typeof AssetStoreEnv)[]).filter(
    (k) => k !== 'ASSET_STORE' && values[k] !== undefined && values[k] !== '',
  );
  if (kind === 'local') {
    if (s3Keys.length) throw new AssetSettingsError(`${s3Keys.join(', ')} set but ASSET_STORE is local: set ASSET_STORE=s3, or unset them`);
    return { kind: 'local' };
  }

  const bucket = str('ASSET_S3_BUCKET');
  if (!bucket || !BUCKET.test(bucket))
    throw new AssetSettingsError('ASSET_STORE=s3 needs ASSET_S3_BUCKET, a bucket name (3-63 of a-z 0-9 . -)');
  const region = str('ASSET_S3_REGION');
  if (!region || !/^[a-z0-9-]{2,40}$/.test(region))
    throw new AssetSettingsError(
      'ASSET_STORE=s3 needs ASSET_S3_REGION (e.g. eu-central-1; "auto" or "us-east-1" for most S3-compatible stores)',
    );

  const endpoint = str('ASSET_S3_ENDPOINT_URL');
  if (endpoint) {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw new AssetSettingsError('ASSET_S3_ENDPOINT_URL is not a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AssetSettingsError('ASSET_S3_ENDPOINT_URL must be http(s)');
    if (url.username || url.password)
      throw new AssetSettingsError(
        'ASSET_S3_ENDPOINT_URL must not carry credentials: use ASSET_S3_ACCESS_KEY_ID / ASSET_S3_SECRET_ACCESS_KEY',
      );
    // Patient files travel to this address: in production only over TLS.
    if (opts.production && url.protocol !== 'https:')
      throw new AssetSettingsError('ASSET_S3_ENDPOINT_URL must use https when NODE_ENV=production');
  }

  const rawPathStyle = values.ASSET_S3_FORCE_PATH_STYLE;
  let forcePathStyle: boolean;
  if (rawPathStyle === undefined || rawPathStyle === '')
    forcePathStyle = endpoint !== null; // self-hosted stores rarely have per-bucket DNS
  else if (rawPathStyle === true || rawPathStyle === 'true') forcePathStyle = true;
  else if (rawPathStyle === false || rawPathStyle === 'false') forcePathStyle = false;
  else throw new AssetSettingsError('ASSET_S3_FORCE_PATH_STYLE must be true or false');

  const keyId = str('ASSET_S3_ACCESS_KEY_ID');
  const secret = str('ASSET_S3_SECRET_ACCESS_KEY');
  if (Boolean(keyId) !== Boolean(secret)) {
    throw new AssetSettingsError(
      'set both ASSET_S3_ACCESS_KEY_ID and ASSET_S3_SECRET_ACCESS_KEY, or neither (the AWS default chain: instance or task role)',
    );
  }

  let keyPrefix = str('ASSET_S3_PREFIX') ?? '';
  if (keyPrefix) {
    keyPrefix = keyPrefix.replace(/\/*$/, '/');
    if (
      !keyPrefix
        .slice(0, -1)
        .split('/')
        .every((p) => /^[A-Za-z0-9._-]{1,200}$/.test(p) && p !== '.' && p !== '..')
    ) {
      throw new AssetSettingsError('ASSET_S3_PREFIX must be segments of A-Z a-z 0-9 . _ - joined by / (e.g. staging/)');
    }
  }

  return {
    kind: 's3',
    bucket,
    region,
    endpointUrl: endpoint,
    forcePathStyle,
    credentials: keyId && secret ? { accessKeyId: keyId, secretAccessKey: secret } : null,
    keyPrefix,
  };
}

/** The store a service's settings name; `localDir` is the folder used when they name none. */
export function createAssetStore(settings: AssetStoreSettings, localDir: string): AssetStore {
  if (settings.kind === 's3') {
    const { kind: _kind, ...s3 } = settings;
    return createS3AssetStore(s3);
  }
  return createLocalAssetStore(localDir);
}

/** A description for start-up logs: where files go, never a credential. */
export function describeAssetStore(settings: AssetStoreSettings, localDir: string): Record<string, unknown> {
  return settings.kind === 's3'
    ? {
        kind: 's3',
        bucket: settings.bucket,
        region: settings.region,
        endpoint: settings.endpointUrl ?? 'aws',
        prefix: settings.keyPrefix || null,
      }
    : { kind: 'local', dir: localDir };
}
