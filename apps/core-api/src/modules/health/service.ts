import type { Database, PoolMetrics } from '@clinic/db';
import type { Redis } from 'ioredis';

export type Status = 'healthy' | 'degraded' | 'unhealthy';

export interface HealthDeps {
  db: Database;
  redis: Redis | null;
  startedAt: number;
}

async function timed<T>(work: () => Promise<T>, timeoutMs: number): Promise<{ ok: boolean; latency_ms: number; error?: string }> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      work(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true, latency_ms: Math.round((performance.now() - t0) * 100) / 100 };
  } catch (err) {
    return { ok: false, latency_ms: Math.round((performance.now() - t0) * 100) / 100, error: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** Redis as the instance sees it without a round trip: the client's connection state. */
function redisState(redis: Redis | null): 'up' | 'down' | 'not_configured' {
  if (!redis) return 'not_configured';
  return redis.status === 'ready' ? 'up' : 'down';
}

/**
 * GET /health (spec 4.3): shallow, for the load balancer. Healthy needs one working database
 * connection; a lost Redis or a nearly exhausted pool makes it degraded (still 200); no working
 * database connection makes it unhealthy (503).
 */
export async function shallowHealth(deps: HealthDeps) {
  const db = await timed(() => deps.db.query('select 1'), 2000);
  const metrics: PoolMetrics = deps.db.poolMetrics();
  const redis = redisState(deps.redis);
  let status: Status = 'healthy';
  if (!db.ok) status = 'unhealthy';
  else if (redis === 'down' || metrics.utilization_pct >= 90) status = 'degraded';
  return {
    status,
    checks: {
      postgresql: { status: db.ok ? 'up' : 'down', metrics },
      redis: { status: redis },
    },
    uptime_seconds: Math.floor((Date.now() - deps.startedAt) / 1000),
  };
}

/** GET /health/ready: pings every dependency, for monitoring tools; 503 unless all answer. */
export async function readiness(deps: HealthDeps) {
  const db = await timed(() => deps.db.query('select 1 from permissions limit 1'), 2000);
  const redis = deps.redis ? await timed(() => deps.redis!.ping(), 1000) : null;
  const ready = db.ok && (redis === null || redis.ok);
  return {
    status: ready ? ('ready' as const) : ('not_ready' as const),
    checks: {
      postgresql: { status: db.ok ? 'up' : 'down', latency_ms: db.latency_ms, ...(db.error ? { error: db.error } : {}) },
      redis: redis
        ? { status: redis.ok ? 'up' : 'down', latency_ms: redis.latency_ms, ...(redis.error ? { error: redis.error } : {}) }
        : { status: 'not_configured' },
    },
    uptime_seconds: Math.floor((Date.now() - deps.startedAt) / 1000),
  };
}
