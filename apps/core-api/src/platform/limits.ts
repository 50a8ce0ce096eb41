import type { Redis } from 'ioredis';
import { createRateLimiter, type RateLimiter } from '@clinic/http-kit';

/** A budget of requests per window (seconds). */
export interface RateWindow {
  limit: number;
  windowSeconds: number;
}

/**
 * Every limiter of the core API comes from here (spec 8; docs/operations.md lists them): one
 * rate-limiter-flexible store behind one API, Redis across instances when REDIS_URL is set, memory on the
 * embedded default, failing open alike. Each kind has its own key prefix, so budgets never mix.
 */
export function limiterFactory(redis: Redis | null, keyPrefix: string) {
  return (kind: string, w: RateWindow): RateLimiter =>
    createRateLimiter({ redis, keyPrefix: `${keyPrefix}${kind}`, points: w.limit, durationSeconds: w.windowSeconds });
}

/** The limits the request pipeline applies itself, before any route runs. */
export interface PipelineLimits {
  /** Per client address at the entry of /v1: caps token-verification cost (RATELIMIT_API_*). */
  entry: RateLimiter;
  /** Per client address on every /v1/public/... route, one budget shared by all of them (RATELIMIT_PUBLIC_*). */
  public: RateLimiter;
  /** Per authenticated principal, whatever address it comes from (RATELIMIT_USER_*). */
  user: RateLimiter;
  /** Per organization in scope and route, for callers with access to it (RATELIMIT_TENANT_*). */
  tenant: (orgId: string) => Promise<RateLimiter>;
}

export const PUBLIC_PREFIX = '/v1/public/';

/**
 * Per organization and endpoint (spec 8: "per-tenant, per-endpoint limits for authenticated routes,
 * configurable per organization"): every organization has RATELIMIT_TENANT_LIMIT requests per window on
 * each route, unless the operator gave it its own figure (PUT /v1/admin/organizations/{id}/rate-limits;
 * `figureOf` reads this instance's copy of them). One limiter per distinct figure, made on first use.
 */
export function tenantLimits(
  make: ReturnType<typeof limiterFactory>,
  w: RateWindow,
  figureOf: (orgId: string) => Promise<number | undefined>,
): (orgId: string) => Promise<RateLimiter> {
  const byLimit = new Map<number, RateLimiter>();
  return async (orgId) => {
    const limit = (await figureOf(orgId)) ?? w.limit;
    let limiter = byLimit.get(limit);
    if (!limiter) {
      limiter = make(`rl:tenant:${limit}:`, { limit, windowSeconds: w.windowSeconds });
      byLimit.set(limit, limiter);
    }
    return limiter;
  };
}
