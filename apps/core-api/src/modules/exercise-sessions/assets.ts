import { join } from 'node:path';
import { createLocalAssetStore, type AssetStore } from '@clinic/assets';
import type { Runtime } from '../../platform/runtime.ts';

const stores = new WeakMap<object, AssetStore>();

/**
 * The asset store holding replay blobs: the runtime's (`rt.assets`, when the platform provides one),
 * else a folder under DATA_DIR. Tests and the embedded companion hand the same store to both sides
 * with useAssets.
 */
export function assetsOf(rt: Runtime): AssetStore {
  const own = (rt as Runtime & { assets?: AssetStore }).assets;
  if (own) return own;
  let s = stores.get(rt.config);
  if (!s) {
    s = createLocalAssetStore(join(rt.config.dataDir, 'assets'));
    stores.set(rt.config, s);
  }
  return s;
}

export function useAssets(rt: Runtime, store: AssetStore): void {
  stores.set(rt.config, store);
}
