import type { Redis } from 'ioredis';
import { errors } from './errors.ts';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (integer, at least 1 when anything was consumed). */
  resetSeconds: number;
  /** The store failed and the request was let through (fail open, spec 8). */
  storeFailed: boolean;
}

export interface RateLimiter {
  readonly limit: number;
  consume(key: string): Promise<RateDecision>;
}

export interface RateLimiterOptions {
  /** Shared counters across instances; in-process memory when absent (embedded default). */
  redis?: Redis | null;
  keyPrefix: string;
  points: number;
  durationSeconds: number;
  /** How long a Redis store may take before the request passes without it (fail open); default 250 ms. */
  timeoutMs?: number;
}

class StoreTimeout extends Error {}

/** The store's answer, or a StoreTimeout: a Redis that accepts commands but never answers must not hold requests. */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeout(`rate-limit store did not answer in ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Fixed-window limiter over rate-limiter-flexible: the same API on memory and Redis. A store error or
 * a store that does not answer in time lets the request pass, because a broken limiter must not take
 * the API down with it.
 */
export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const base = { keyPrefix: opts.keyPrefix, points: opts.points, duration: opts.durationSeconds };
  const limiter: RateLimiterAbstract = opts.redis
    ? new RateLimiterRedis({ ...base, storeClient: opts.redis, rejectIfRedisNotReady: true })
    : new RateLimiterMemory(base);
  const decide = (res: RateLimiterRes, allowed: boolean): RateDecision => ({
    allowed,
    limit: opts.points,
    remaining: Math.max(0, res.remainingPoints),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    storeFailed: false,
  });
  const timeoutMs = opts.timeoutMs ?? 250;
  return {
    limit: opts.points,
    async consume(key) {
      try {
        // The memory store answers synchronously; only a network store needs the time bound.
        return decide(await (opts.redis ? withTimeout(limiter.consume(key), timeoutMs) : limiter.consume(key)), true);
      } catch (err) {
        if (err instanceof RateLimiterRes) return decide(err, false);
        return { allowed: true, limit: opts.points, remaining: opts.points, resetSeconds: opts.durationSeconds, storeFailed: true };
      }
    },
  };
}

/** `X-RateLimit-*` on every limited response, allowed or denied (spec 8). */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': String(d.limit),
    'x-ratelimit-remaining': String(d.remaining),
    'x-ratelimit-reset': String(d.resetSeconds),
  };
}

/** The decision whose headers a reply carries, when several limits apply to one request. */
const shown = new WeakMap<object, RateDecision>();

/** The tighter of two decisions: a refusal, else fewer requests left, else the smaller limit. */
function tighter(a: RateDecision, b: RateDecision): boolean {
  if (a.allowed !== b.allowed) return !a.allowed;
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return a.limit < b.limit;
}

/**
 * Consumes one point of `key` and answers as every limit does (spec 8): the X-RateLimit-* headers on the
 * reply, 429 rate_limited with Retry-After when the budget is spent. When several limits apply to one
 * request (the entry limit, the public or per-user one, a route's own), the headers are those of the
 * tightest, the one a client has to respect.
 */
export async function enforceLimit(
  limiter: RateLimiter,
  key: string,
  reply: { headers(h: Record<string, string>): unknown },
): Promise<RateDecision> {
  const decision = await limiter.consume(key);
  const before = shown.get(reply);
  if (!before || tighter(decision, before)) {
    shown.set(reply, decision);
    reply.headers(rateLimitHeaders(decision));
  }
  if (!decision.allowed) throw errors.rateLimited(decision.resetSeconds);
  return decision;
}
