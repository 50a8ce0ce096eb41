export { assertKey, InvalidAssetKeyError, type AssetInfo, type AssetStore } from './types.ts';
export { createLocalAssetStore, readAll } from './local.ts';
