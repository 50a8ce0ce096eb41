export { assertKey, InvalidAssetKeyError, type AssetInfo, type AssetStore } from './types.ts';
export { createLocalAssetStore, readAll } from './local.ts';
export { createS3AssetStore, MIN_PART_BYTES, type S3AssetStoreOptions } from './s3.ts';
export {
  AssetSettingsError,
  AssetStoreEnv,
  assetStoreSettings,
  createAssetStore,
  describeAssetStore,
  type AssetStoreSettings,
} from './from-settings.ts';
