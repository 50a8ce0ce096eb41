import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AssetStore } from '@clinic/assets';
import { probe, run, type Probe, type Tools } from './ffmpeg.ts';

export interface LocalPrimitive {
  path: string;
  probe: Probe;
}

interface Known {
  local: LocalPrimitive;
  size: number;
  checkedAt: number;
}

/** More primitives than this are not remembered in memory (their files and probes stay on disk). */
const MAX_KNOWN = 20_000;

/**
 * Local copies of primitives (ffmpeg reads files) with their ffprobe results, per asset version.
 * The copy and its probe are kept on disk; what a render needs of them (path and probe) is also kept
 * in memory, so a warm render touches neither the store nor the disk before ffmpeg runs. A memory
 * entry is trusted for `verifyTtlMs` (COMPOSER_INVENTORY_TTL_SECONDS, the same bound as the variant
 * lists): after that the store is asked for the object's size again and a replaced file is fetched
 * again even without a version bump. forget() drops the memory after a failed render, in case a
 * local copy was removed under it. Writes go to a temporary name and are renamed into place:
 * concurrent renders never see half a file.
 */
export function createPrimitiveCache(store: AssetStore, root: string, tools: Tools, opts: { verifyTtlMs: number }) {
  const inflight = new Map<string, Promise<LocalPrimitive>>();
  const known = new Map<string, Known>();
  const conformed = new Map<string, Promise<string>>();

  async function fetchOne(id: string, key: string, assetVersion: number): Promise<LocalPrimitive> {
    const path = join(root, `v${assetVersion}`, ...key.split('/'));
    const probePath = `${path}.probe.json`;
    const [info, cached] = await Promise.all([
      store.head(key),
      stat(path).then(
        (s) => s.size,
        () => -1,
      ),
    ]);
    if (!info) throw new Error(`asset ${key} disappeared from the store`);
    const remember = (local: LocalPrimitive) => {
      known.delete(id);
      if (known.size >= MAX_KNOWN) known.delete(known.keys().next().value!);
      known.set(id, { local, size: info.size, checkedAt: Date.now() });
      return local;
    };
    if (cached === info.size) {
      const mem = known.get(id);
      if (mem && mem.size === info.size) return remember(mem.local);
      const p = await readFile(probePath, 'utf8').then(
        (s) => JSON.parse(s) as Probe,
        () => null,
      );
      if (p) return remember({ path, probe: p });
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
      return remember({ path, probe: p });
    } finally {
      await rm(tmp, { force: true });
    }
  }

  return {
    /** The local copy of `key`; concurrent calls for one key share one download. */
    get(key: string, assetVersion: number): Promise<LocalPrimitive> {
      const id = `${assetVersion}:${key}`;
      const mem = known.get(id);
      if (mem && Date.now() - mem.checkedAt < opts.verifyTtlMs) return Promise.resolve(mem.local);
      let p = inflight.get(id);
      if (!p) {
        p = fetchOne(id, key, assetVersion).finally(() => inflight.delete(id));
        inflight.set(id, p);
      }
      return p;
    },
    /**
     * An mp3 of a voice-over at the given sample rate and channel count, made once per asset version
     * beside its local copy. A voice-over prepared unlike the others is re-encoded alone, so the
     * render still joins every voice-over by stream copy (mp3 frames carry their own headers, so
     * files from different encoders join cleanly once rate and channels agree).
     */
    conformAudio(local: LocalPrimitive, rate: number, channels: number): Promise<string> {
      const path = `${local.path}.as-${rate}-${channels}.mp3`;
      let p = conformed.get(path);
      if (!p) {
        p = (async () => {
          if (
            await stat(path).then(
              () => true,
              () => false,
            )
          )
            return path;
          const tmp = `${path}.${randomUUID()}.tmp.mp3`;
          try {
            await run(
              tools.ffmpeg,
              [
                '-hide_banner',
                '-loglevel',
                'error',
                '-y',
                '-i',
                local.path,
                '-map',
                '0:a:0',
                '-ar',
                String(rate),
                '-ac',
                String(channels),
                '-c:a',
                'libmp3lame',
                '-b:a',
                channels > 1 ? '128k' : '96k',
                tmp,
              ],
              { timeoutMs: 60_000 },
            );
            await rename(tmp, path);
          } finally {
            await rm(tmp, { force: true });
          }
          return path;
        })();
        conformed.set(path, p);
        p.catch(() => conformed.delete(path));
      }
      return p;
    },
    /** Makes the next use of every primitive check the store and the disk again. */
    forget(): void {
      for (const k of known.values()) k.checkedAt = 0;
      conformed.clear();
    },
  };
}
export type PrimitiveCache = ReturnType<typeof createPrimitiveCache>;
