import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Secrets at rest (webhook signing secrets, provider credentials): AES-256-GCM under a master key from the
 * environment. Each ciphertext names the key that sealed it, so the master key can be rotated: add the
 * new key first in MASTER_KEYS (it seals from then on), keep the old ones for opening, re-encrypt, then drop
 * them. Format: `v1.<key id>.<iv b64url>.<tag b64url>.<ciphertext b64url>`.
 */
export interface SecretBox {
  /** The id of the key that seals new secrets. */
  readonly currentKeyId: string;
  seal(plaintext: string): string;
  open(sealed: string): string;
  /** The id of the key a ciphertext was sealed with (for the re-encrypt command). */
  keyIdOf(sealed: string): string;
  /**
   * A 32-byte key for one purpose (`label`) derived from each master key with HKDF-SHA256, the current
   * key's first: sign with the first, accept any (a rotation keeps links signed before it valid).
   */
  derive(label: string): Buffer[];
  /** derive() with each key's master key id (for signatures that name their key, like audit checkpoints). */
  derivedKeys(label: string): { id: string; key: Buffer }[];
}

export class SecretKeyError extends Error {}

export interface MasterKey {
  id: string;
  key: Buffer;
}

/** Parses `id:base64key,id2:base64key2` (first = current); every key must be 32 bytes. */
export function parseMasterKeys(spec: string): MasterKey[] {
  const keys = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf(':');
      const id = entry.slice(0, at);
      const key = Buffer.from(entry.slice(at + 1), 'base64');
      if (at < 1 || !/^[A-Za-z0-9_-]{1,32}$/.test(id))
        throw new SecretKeyError(`MASTER_KEYS: "${id}" is not a key id (use A-Z a-z 0-9 _ -, up to 32)`);
      if (key.length !== 32)
        throw new SecretKeyError(`MASTER_KEYS: key "${id}" must be 32 bytes, base64-encoded (openssl rand -base64 32)`);
      return { id, key };
    });
  if (keys.length === 0) throw new SecretKeyError('MASTER_KEYS is empty');
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new SecretKeyError('MASTER_KEYS repeats a key id');
  return keys;
}

export function createSecretBox(keys: MasterKey[]): SecretBox {
  const [current] = keys;
  if (!current) throw new SecretKeyError('no master key');
  const byId = new Map(keys.map((k) => [k.id, k.key]));
  const parts = (sealed: string) => {
    const p = sealed.split('.');
    if (p.length !== 5 || p[0] !== 'v1') throw new SecretKeyError('not a sealed secret');
    return p as [string, string, string, string, string];
  };
  return {
    currentKeyId: current.id,
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      // The key id is authenticated data: a ciphertext moved under another key id fails to open.
      cipher.setAAD(Buffer.from(current.id));
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', current.id, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
    },
    open(sealed) {
      const [, id, iv, tag, ct] = parts(sealed);
      const key = byId.get(id);
      if (!key) throw new SecretKeyError(`the master key "${id}" that sealed this secret is not in MASTER_KEYS`);
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    },
    keyIdOf: (sealed) => parts(sealed)[1],
    derive: (label) => keys.map((k) => hkdf(k.key, label)),
    derivedKeys: (label) => keys.map((k) => ({ id: k.id, key: hkdf(k.key, label) })),
  };
}

const hkdf = (key: Buffer, label: string) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `clinic:${label}`, 32));

let ephemeral: MasterKey | null = null;

/**
 * The master keys for this process: MASTER_KEYS when set (required in production, enforced by config);
 * otherwise in development a key kept in the data folder (created on first start, mode 0600), and in tests
 * (no data folder) one random key per process, shared by every instance the process starts.
 */
export async function loadMasterKeys(opts: { spec: string | null; env: string; dataDir: string }): Promise<MasterKey[]> {
  if (opts.spec) return parseMasterKeys(opts.spec);
  if (opts.env === 'test') {
    ephemeral ??= { id: 'test', key: randomBytes(32) };
    return [ephemeral];
  }
  const file = join(opts.dataDir, 'master-keys');
  try {
    return parseMasterKeys(await readFile(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(opts.dataDir, { recursive: true });
  const spec = `dev1:${randomBytes(32).toString('base64')}`;
  await writeFile(file, spec, { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  await chmod(file, 0o600);
  return parseMasterKeys(await readFile(file, 'utf8'));
}
