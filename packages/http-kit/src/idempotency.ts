/**
 * Idempotency-Key (spec 4.1 and 8; semantics of draft-ietf-httpapi-idempotency-key-header): a route that
 * opts in with `config: { idempotent: true }` runs once per (scope, method, path, key); a retry gets the
 * first 2xx response again, byte for byte, with `Idempotency-Replayed: true`.
 *
 * Flow per request that carries the header:
 *   preParsing  hashes the raw body as the body parser reads it (fingerprint = method, url, raw bytes);
 *   preHandler  validates the key and atomically reserves it with an in-progress marker (SET NX PX), or
 *               answers 409 (still running), 422 (same key, different request) or the stored replay;
 *   onSend      stores a 2xx serialized payload in place of the marker, or releases the key otherwise;
 *   onResponse  releases a reservation that onSend never finished (a stream body, for example).
 * A store failure never fails the request: it runs without idempotency and a warning is logged.
 */
import { createHash, randomUUID, type Hash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { AppError, errors } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** POST route that creates or has external effects: honours the Idempotency-Key header (spec 4.1). */
    idempotent?: boolean;
  }
}

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_REPLAYED_HEADER = 'idempotency-replayed';
/** Spec 8: 4 to 128 characters of A-Za-z0-9_- . */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{4,128}$/;

/**
 * Where reservations and results live. Values are opaque strings that the plugin encodes; each method
 * must be atomic with respect to the others for the same key (one Lua script each on Redis).
 */
export interface IdempotencyStore {
  /** Sets key to marker for lockTtlMs unless it exists. Returns null when reserved, else the existing value. */
  reserve(key: string, marker: string, lockTtlMs: number): Promise<string | null>;
  /** Replaces the marker with the result for ttlMs, if the key still holds this marker or nothing at all. */
  complete(key: string, marker: string, result: string, ttlMs: number): Promise<void>;
  /** Deletes the key if it still holds this marker (a later owner's marker or result is left alone). */
  release(key: string, marker: string): Promise<void>;
}

export interface MemoryIdempotencyStoreOptions {
  /** Bound on stored keys; the least recently used go first. Default 10 000. */
  maxEntries?: number;
}

/** In-process store for the embedded default: bounded, with per-entry expiry. One process only. */
export function createMemoryIdempotencyStore(opts: MemoryIdempotencyStoreOptions = {}): IdempotencyStore {
  const cache = new LRUCache<string, string>({ max: opts.maxEntries ?? 10_000 });
  // Each method runs synchronously to completion, which makes it atomic on one event loop.
  return {
    async reserve(key, marker, lockTtlMs) {
      const current = cache.get(key);
      if (current !== undefined) return current;
      cache.set(key, marker, { ttl: lockTtlMs });
      return null;
    },
    async complete(key, marker, result, ttlMs) {
      const current = cache.get(key);
      if (current === undefined || current === marker) cache.set(key, result, { ttl: ttlMs });
    },
    async release(key, marker) {
      if (cache.get(key) === marker) cache.delete(key);
    },
  };
}

const RESERVE = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])`;
const COMPLETE = `local cur = redis.call('GET', KEYS[1])
if cur == false or cur == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface RedisIdempotencyStoreOptions {
  /** Prepended to every key, e.g. config.redisKeyPrefix + 'idem:'. Default 'idem:'. */
  keyPrefix?: string;
}

/**
 * Shared store for several instances. Give it a client created with enableOfflineQueue:false (and a
 * commandTimeout if a hung Redis must not hold requests), so that a Redis outage fails fast and open.
 */
export function createRedisIdempotencyStore(redis: Redis, opts: RedisIdempotencyStoreOptions = {}): IdempotencyStore {
  const prefix = opts.keyPrefix ?? 'idem:';
  return {
    async reserve(key, marker, lockTtlMs) {
      const existing = await redis.eval(RESERVE, 1, prefix + key, marker, Math.max(1, Math.ceil(lockTtlMs)));
      return typeof existing === 'string' ? existing : null;
    },
    async complete(key, marker, result, ttlMs) {
      await redis.eval(COMPLETE, 1, prefix + key, marker, result, Math.max(1, Math.ceil(ttlMs)));
    },
    async release(key, marker) {
      await redis.eval(RELEASE, 1, prefix + key, marker);
    },
  };
}

export interface IdempotencyOptions {
  /** Default: a memory store (embedded mode). Pass the Redis store when instances share state. */
  store?: IdempotencyStore;
  /**
   * Who the stored result belongs to: the organization (spec 4.1), plus the principal so that one user
   * can never receive another's replay. Runs after the app's onRequest authentication.
   */
  scopeOf: (request: FastifyRequest) => string | Promise<string>;
  /** How long a 2xx result is kept. Default 24 hours (spec 8). */
  ttlSeconds?: number;
  /** How long an unfinished reservation blocks the key (a crashed process never releases it). Default 60. */
  lockTtlSeconds?: number;
  /** Larger 2xx bodies are not stored (the key is released and a warning logged). Default 1 MiB. */
  maxBodyBytes?: number;
}

/** Marker while running: s 'p'. Stored result: s 'd', status c, headers h, body b (base64, null if none). */
type Entry =
  | { s: 'p'; f: string; t: string }
  | { s: 'd'; f: string; c: number; h: Record<string, string | number | string[]>; b: string | null };

interface Reservation {
  storeKey: string;
  marker: string;
  fingerprint: string;
  finished: boolean;
}

/**
 * Headers that belong to this transfer or this request, not to the result: hop-by-hop, framing, date,
 * the request id, rate-limit and CORS headers. On a replay they come from the replaying request.
 */
const NOT_STORED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'date',
  'content-length',
  'x-request-id',
  'retry-after',
  IDEMPOTENCY_REPLAYED_HEADER,
]);
const NOT_STORED_PREFIXES = ['x-ratelimit-', 'ratelimit', 'access-control-'];

function storedHeaders(reply: FastifyReply): Record<string, string | number | string[]> {
  const out: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    const lower = name.toLowerCase();
    if (value === undefined || NOT_STORED.has(lower) || NOT_STORED_PREFIXES.some((p) => lower.startsWith(p))) continue;
    out[lower] = value;
  }
  return out;
}

function bodyBytes(payload: unknown): Buffer | null | undefined {
  if (payload === null || payload === undefined) return null;
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  return undefined; // a stream or anything else we cannot capture without consuming it
}

function parseEntry(value: string): Entry | null {
  try {
    const e = JSON.parse(value) as Entry;
    return e && (e.s === 'p' || e.s === 'd') && typeof e.f === 'string' ? e : null;
  } catch {
    return null;
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

type Hook = (...args: never[]) => unknown;
function appendHook(route: object, name: 'preParsing' | 'preHandler' | 'onSend' | 'onResponse', hook: Hook): void {
  const r = route as Record<string, Hook | Hook[] | undefined>;
  const current = r[name];
  r[name] = current === undefined ? [hook] : [...(Array.isArray(current) ? current : [current]), hook];
}

/**
 * Installs the mechanism. Call it before the routes are declared (it attaches its hooks to each route
 * whose config says `idempotent: true` as that route is added), like installErrorHandling.
 * The hooks are appended to the route's own: they run after the app's onRequest authentication and
 * after the route's preHandler gates, so a replay is only served to a caller who passes them now.
 */
export function installIdempotency(app: FastifyInstance, opts: IdempotencyOptions): void {
  const store = opts.store ?? createMemoryIdempotencyStore();
  const ttlMs = (opts.ttlSeconds ?? 24 * 60 * 60) * 1000;
  const lockTtlMs = (opts.lockTtlSeconds ?? 60) * 1000;
  const maxBodyBytes = opts.maxBodyBytes ?? 1024 * 1024;
  const bodyHashes = new WeakMap<FastifyRequest, Hash>();
  const reservations = new WeakMap<FastifyRequest, Reservation>();

  const startHash = (request: FastifyRequest): Hash => createHash('sha256').update(`${request.method}\n${request.url}\n`);

  async function release(request: FastifyRequest, r: Reservation): Promise<void> {
    r.finished = true;
    try {
      await store.release(r.storeKey, r.marker);
    } catch (err) {
      request.log.warn({ err }, 'idempotency store failed to release a key; it frees itself when the lock expires');
    }
  }

  async function preParsing(request: FastifyRequest, _reply: FastifyReply, payload: Readable): Promise<Readable> {
    if (request.headers[IDEMPOTENCY_KEY_HEADER] === undefined) return payload;
    // A multipart body is read by its handler, from the request itself and later (after preHandler):
    // tapping it here would start the flow early and the handler would miss what had passed. Its
    // bytes also differ on every retry (the boundary), so the fingerprint is method and URL only.
    if (/^multipart\//i.test(request.headers['content-type'] ?? '')) return payload;
    // The fingerprint covers the bytes exactly as received (spec: "different request payload"), which
    // the parsed body no longer has; hashing while Fastify reads costs no extra buffering.
    const hash = startHash(request);
    bodyHashes.set(request, hash);
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    // An earlier preParsing stage (decompression) reports the on-the-wire length this way; keep it
    // visible, or Fastify's Content-Length check would compare against the decoded length.
    Object.defineProperty(tap, 'receivedEncodedLength', {
      get: () => (payload as Readable & { receivedEncodedLength?: number }).receivedEncodedLength,
    });
    payload.on('error', (err) => tap.destroy(err));
    return payload.pipe(tap);
  }

  async function preHandler(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = request.headers[IDEMPOTENCY_KEY_HEADER];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw.join(', ') : raw;
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
      throw errors.validation(
        { 'Idempotency-Key': 'must be 4 to 128 characters of A-Z a-z 0-9 _ -' },
        'The Idempotency-Key header is invalid; see fields.',
      );
    }
    const scope = await opts.scopeOf(request);
    // Path: the route pattern and the concrete path without the query string (POST /items/1 and
    // /items/2 are different operations; the query is part of the fingerprint, not of the scope).
    const path = request.url.split('?', 1)[0] ?? '';
    const storeKey = sha256(JSON.stringify([scope, request.method, request.routeOptions.url ?? '', path, key]));
    // copy(): a stream that has not ended (no body parser ran) may still feed the original hash.
    const fingerprint = (bodyHashes.get(request) ?? startHash(request)).copy().digest('base64url');
    const marker = JSON.stringify({ s: 'p', f: fingerprint, t: randomUUID() } satisfies Entry);

    let existing: string | null;
    try {
      existing = await store.reserve(storeKey, marker, lockTtlMs);
    } catch (err) {
      request.log.warn({ err }, 'idempotency store failed; the request runs without idempotency');
      return;
    }
    if (existing === null) {
      reservations.set(request, { storeKey, marker, fingerprint, finished: false });
      return;
    }
    const entry = parseEntry(existing);
    if (!entry) {
      request.log.warn({ storeKey }, 'idempotency store returned an unreadable entry; the request runs without idempotency');
      return;
    }
    // A different request under the same key is refused whether or not the first has finished:
    // retrying it cannot help, so 422 tells the client more than 409 would.
    if (entry.f !== fingerprint) {
      throw new AppError(
        422,
        'idempotency_key_reused',
        'This Idempotency-Key was already used for a different request (method, path or body). Use a new key for a new request.',
      );
    }
    if (entry.s === 'p') {
      throw errors.conflict(
        'idempotency_key_in_use',
        'A request with this Idempotency-Key is still being processed. Retry after it has finished.',
      );
    }
    // Headers already on this reply (request id, rate-limit, CORS from earlier hooks) win over stored ones.
    for (const [name, value] of Object.entries(entry.h)) {
      if (!reply.hasHeader(name)) reply.header(name, value);
    }
    reply.code(entry.c).header(IDEMPOTENCY_REPLAYED_HEADER, 'true');
    return reply.send(entry.b === null ? undefined : Buffer.from(entry.b, 'base64'));
  }

  async function onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const r = reservations.get(request);
    if (!r || r.finished) return payload;
    const status = reply.statusCode;
    if (status < 200 || status > 299) {
      await release(request, r); // errors are not stored (spec 4.1): the client may retry with the same key
      return payload;
    }
    const body = bodyBytes(payload);
    if (body === undefined || (body !== null && body.length > maxBodyBytes)) {
      request.log.warn({ status, bytes: body?.length }, 'idempotent response not stored (stream or larger than maxBodyBytes)');
      await release(request, r);
      return payload;
    }
    r.finished = true;
    const entry: Entry = {
      s: 'd',
      f: r.fingerprint,
      c: status,
      h: storedHeaders(reply),
      b: body === null ? null : body.toString('base64'),
    };
    try {
      // Stored before the response leaves, so an immediate retry finds the result rather than the lock.
      await store.complete(r.storeKey, r.marker, JSON.stringify(entry), ttlMs);
    } catch (err) {
      request.log.warn({ err }, 'idempotency store failed; the response was not stored');
      await release(request, r);
    }
    return payload;
  }

  async function onResponse(request: FastifyRequest): Promise<void> {
    const r = reservations.get(request);
    if (r && !r.finished) await release(request, r);
  }

  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    appendHook(route, 'preParsing', preParsing);
    appendHook(route, 'preHandler', preHandler);
    appendHook(route, 'onSend', onSend);
    appendHook(route, 'onResponse', onResponse);
  });
}
