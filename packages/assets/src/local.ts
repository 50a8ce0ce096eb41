import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertKey, type AssetInfo, type AssetStore } from './types.ts';

/**
 * A folder as the asset store (embedded default). Objects are written to a temporary file and renamed
 * into place, so a crash never leaves half an object under its key. The content type lives in a
 * sidecar file (`<key>.__meta.json`) that list() hides.
 */
export function createLocalAssetStore(root: string): AssetStore {
  const pathOf = (key: string) => join(root, ...key.split('/'));
  const metaOf = (key: string) => `${pathOf(key)}.__meta.json`;

  return {
    kind: 'local',
    async put(key, body, opts = {}) {
      assertKey(key);
      const target = pathOf(key);
      await mkdir(dirname(target), { recursive: true });
      const tmp = `${target}.${randomUUID()}.tmp`;
      try {
        if (Buffer.isBuffer(body)) await writeFile(tmp, body);
        else await pipeline(body, createWriteStream(tmp));
        await writeFile(metaOf(key), JSON.stringify({ contentType: opts.contentType ?? null }));
        await rename(tmp, target);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      return { size: (await stat(target)).size, contentType: opts.contentType ?? null };
    },
    async get(key) {
      assertKey(key);
      try {
        await stat(pathOf(key));
      } catch {
        return null;
      }
      return createReadStream(pathOf(key));
    },
    async head(key) {
      assertKey(key);
      let size: number;
      try {
        size = (await stat(pathOf(key))).size;
      } catch {
        return null;
      }
      const meta = await readFile(metaOf(key), 'utf8').then(
        (s) => JSON.parse(s) as { contentType: string | null },
        () => null,
      );
      return { size, contentType: meta?.contentType ?? null } satisfies AssetInfo;
    },
    async list(prefix) {
      assertKey(prefix, { prefix: true });
      const out: string[] = [];
      const walk = async (dir: string) => {
        let names: string[];
        try {
          names = await readdir(dir);
        } catch {
          return;
        }
        for (const name of names) {
          const p = join(dir, name);
          if ((await stat(p)).isDirectory()) await walk(p);
          else if (!name.endsWith('.__meta.json') && !name.endsWith('.tmp')) out.push(relative(root, p).split(sep).join('/'));
        }
      };
      // Only the prefix's folder can hold its keys: walk from there, not the whole root.
      const folder = prefix.slice(0, prefix.lastIndexOf('/') + 1);
      await walk(folder ? pathOf(folder.slice(0, -1)) : root);
      return out.filter((k) => k.startsWith(prefix)).sort();
    },
    async delete(key) {
      assertKey(key);
      await rm(pathOf(key), { force: true });
      await rm(metaOf(key), { force: true });
    },
  };
}

/** Reads a whole stream into memory (small objects only: manifests, test fixtures). */
export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
}
export { Readable };
