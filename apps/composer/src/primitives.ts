import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AssetStore } from '@clinic/assets';
import { probe, type Probe, type Tools } from './ffmpeg.ts';

export interface LocalPrimitive {
  path: string;
  probe: Probe;
}

/**
 * Local copies of primitives (ffmpeg reads files) with their ffprobe results, per asset version. The
 * store is asked for the object's size on every use, so a replaced file is fetched again even without
 * a version bump; the copy and the probe are reused otherwise, which keeps ffprobe off the hot path.
 * Writes go to a temporary name and are renamed into place: concurrent renders never see half a file.
 */
export function createPrimitiveCache(store: AssetStore, root: string, tools: Tools) {
  const inflight = new Map<string, Promise<LocalPrimitive>>();

  async function fetchOne(key: string, assetVersion: number): Promise<LocalPrimitive> {
    const info = await store.head(key);
    if (!info) throw new Error(`asset ${key} disappeared from the store`);
    const path = join(root, `v${assetVersion}`, ...key.split('/'));
    const probePath = `${path}.probe.json`;
    const cached = await stat(path).then((s) => s.size, () => -1);
    if (cached === info.size) {
      const p = await readFile(probePath, 'utf8').then((s) => JSON.parse(s) as Probe, () => null);
      if (p) return { path, probe: p };
    }
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${randomUUID()}.tmp`;
    try {
      const body = await store.get(key);
      if (!body) throw new Error(`asset ${key} disappeared from the store`);
      await pipeline(body, createWriteStream(tmp));
      const p = await probe(tools, tmp);
      await rename(tmp, path);
      const probeTmp = `${probePath}.tmp-${randomUUID()}`;
      await writeFile(probeTmp, JSON.stringify(p));
      await rename(probeTmp, probePath);
      return { path, probe: p };
    } finally {
      await rm(tmp, { force: true });
    }
  }

  return {
    /** The local copy of `key`; concurrent calls for one key share one download. */
    get(key: string, assetVersion: number): Promise<LocalPrimitive> {
      const id = `${assetVersion}:${key}`;
      let p = inflight.get(id);
      if (!p) {
        p = fetchOne(key, assetVersion).finally(() => inflight.delete(id));
        inflight.set(id, p);
      }
      return p;
    },
  };
}
export type PrimitiveCache = ReturnType<typeof createPrimitiveCache>;
