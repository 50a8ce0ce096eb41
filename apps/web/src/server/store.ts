import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

/**
 * Where the proxy keeps what must outlive one request: sessions (tokens), sign-in transactions (PKCE
 * verifier, state, nonce) and one-time hand-off codes. Redis when REDIS_URL is set (every instance
 * sees the same sessions), memory otherwise. Records are sealed (AES-256-GCM with a key derived from
 * WEB_SESSION_SECRET) and stored under a hash of their id: a Redis dump holds neither usable cookies
 * nor readable tokens.
 */
export interface SealedStore {
  get<T>(kind: string, id: string): Promise<T | null>;
  set(kind: string, id: string, value: unknown, ttlSeconds: number): Promise<void>;
  /** Reads and deletes in one step: a one-time code is spent by its first reader only. */
  take<T>(kind: string, id: string): Promise<T | null>;
  delete(kind: string, id: string): Promise<void>;
  close(): Promise<void>;
}

interface Backend {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  take(key: string): Promise<string | null>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

function memoryBackend(max: number): Backend {
  const cache = new LRUCache<string, string>({ max, ttlAutopurge: false });
  return {
    async get(key) {
      return cache.get(key) ?? null;
    },
    async set(key, value, ttlSeconds) {
      cache.set(key, value, { ttl: ttlSeconds * 1000 });
    },
    async take(key) {
      const v = cache.get(key) ?? null;
      cache.delete(key);
      return v;
    },
    async delete(key) {
      cache.delete(key);
    },
    async close() {
      cache.clear();
    },
  };
}

function redisBackend(redis: Redis, prefix: string, owned: boolean): Backend {
  return {
    get: (key) => redis.get(prefix + key),
    async set(key, value, ttlSeconds) {
      await redis.set(prefix + key, value, 'EX', Math.max(1, Math.ceil(ttlSeconds)));
    },
    // GETDEL is atomic: two instances cannot both spend one code.
    take: (key) => redis.getdel(prefix + key),
    async delete(key) {
      await redis.del(prefix + key);
    },
    async close() {
      if (owned) redis.disconnect();
    },
  };
}

export function createSealedStore(opts: {
  secret: string;
  redis?: { client: Redis; keyPrefix: string; owned: boolean } | null;
  max?: number;
}): SealedStore {
  const key = Buffer.from(hkdfSync('sha256', opts.secret, 'clinic-web', 'session-records', 32));
  const backend = opts.redis
    ? redisBackend(opts.redis.client, `${opts.redis.keyPrefix}web:`, opts.redis.owned)
    : memoryBackend(opts.max ?? 100_000);
  const storageKey = (kind: string, id: string) => `${kind}:${createHash('sha256').update(id).digest('base64url')}`;
  const seal = (value: unknown) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  };
  const open = <T>(sealed: string | null): T | null => {
    if (!sealed) return null;
    try {
      const raw = Buffer.from(sealed, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as T;
    } catch {
      // Sealed with another secret (rotated) or damaged: as good as absent.
      return null;
    }
  };
  return {
    async get(kind, id) {
      return open(await backend.get(storageKey(kind, id)));
    },
    async set(kind, id, value, ttlSeconds) {
      await backend.set(storageKey(kind, id), seal(value), ttlSeconds);
    },
    async take(kind, id) {
      return open(await backend.take(storageKey(kind, id)));
    },
    async delete(kind, id) {
      await backend.delete(storageKey(kind, id));
    },
    close: () => backend.close(),
  };
}
