import type { Database } from '@clinic/db';
import { request } from 'undici';
import { verifyChain, type ChainReport } from '../audit/chain.ts';
import { CHECKPOINT_KEY_LABEL } from '../audit/checkpoints.ts';
import { readiness, shallowHealth, type HealthDeps } from '../health/service.ts';
import type { Runtime } from '../../platform/runtime.ts';

export type ServiceState = 'up' | 'degraded' | 'down' | 'not_configured';

export interface ServiceStatus {
  name: 'core_api' | 'database' | 'redis' | 'telemetry' | 'composer' | 'worker';
  status: ServiceState;
  latency_ms: number | null;
  detail: Record<string, unknown>;
  error: string | null;
}

/** The outbox is "behind" when its oldest undispatched event waits longer than this: the worker is not draining it. */
export const WORKER_BEHIND_SECONDS = 60;

async function probe(url: string, timeoutMs: number): Promise<{ ok: boolean; latency_ms: number; body: unknown; error: string | null }> {
  const t0 = performance.now();
  try {
    const res = await request(`${url}/health`, { method: 'GET', headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const body = (await res.body.json().catch(() => null)) as unknown;
    const latency_ms = Math.round((performance.now() - t0) * 100) / 100;
    return res.statusCode === 200
      ? { ok: true, latency_ms, body, error: null }
      : { ok: false, latency_ms, body, error: `answered ${res.statusCode}` };
  } catch (err) {
    return { ok: false, latency_ms: Math.round((performance.now() - t0) * 100) / 100, body: null, error: (err as Error).message };
  }
}

/** The worker has no port: its health is whether it drains the outbox (pending events and the oldest one's age). */
async function workerStatus(db: Database): Promise<ServiceStatus> {
  try {
    const { rows } = await db.query<{ pending: string; oldest_seconds: number | null }>(
      `select count(*)::text as pending,
              extract(epoch from (now() - min(occurred_at)))::float8 as oldest_seconds
         from domain_events where dispatched_at is null`,
    );
    const pending = Number(rows[0]?.pending ?? 0);
    const oldest = rows[0]?.oldest_seconds === null || rows[0]?.oldest_seconds === undefined ? null : Math.round(rows[0].oldest_seconds);
    const behind = oldest !== null && oldest > WORKER_BEHIND_SECONDS;
    return {
      name: 'worker',
      status: behind ? 'degraded' : 'up',
      latency_ms: null,
      detail: { outbox_pending: pending, oldest_pending_seconds: oldest, behind_after_seconds: WORKER_BEHIND_SECONDS },
      error: behind ? `the oldest undispatched event waits ${oldest} s: the worker is not draining the outbox` : null,
    };
  } catch (err) {
    return { name: 'worker', status: 'down', latency_ms: null, detail: {}, error: (err as Error).message };
  }
}

/**
 * Every service as one instance of the core API sees it (the console's system health): itself, its
 * database pool and Redis (the same checks as /health and /health/ready), the telemetry service and the
 * composer (their /health over HTTP), and the worker (through the outbox it drains).
 */
export async function systemStatus(rt: Runtime, health: HealthDeps, timeoutMs = 2000) {
  const [shallow, ready, telemetry, composer, worker] = await Promise.all([
    shallowHealth(health),
    readiness(health),
    probe(rt.config.telemetry.url, timeoutMs),
    probe(rt.config.telerehab.composerUrl, timeoutMs),
    workerStatus(rt.db),
  ]);
  const pg = ready.checks.postgresql as { status: string; latency_ms?: number; error?: string };
  const redis = ready.checks.redis as { status: string; latency_ms?: number; error?: string };
  const pool = shallow.checks.postgresql.metrics;
  const services: ServiceStatus[] = [
    {
      name: 'core_api',
      // It is answering this request; its dependencies are the rows below.
      status: 'up',
      latency_ms: null,
      detail: { uptime_seconds: shallow.uptime_seconds, version: rt.config.systemInfo.version },
      error: null,
    },
    {
      name: 'database',
      // A pool of one (the embedded database) is always full while this request holds it: not a warning there.
      status: pg.status !== 'up' ? 'down' : pool.max_conns > 1 && pool.utilization_pct >= 90 ? 'degraded' : 'up',
      latency_ms: pg.latency_ms ?? null,
      detail: { ...pool },
      error: pg.error ?? null,
    },
    {
      name: 'redis',
      status: redis.status === 'not_configured' ? 'not_configured' : redis.status === 'up' ? 'up' : 'down',
      latency_ms: redis.latency_ms ?? null,
      detail: {},
      error: redis.error ?? null,
    },
    {
      name: 'telemetry',
      status: telemetry.ok ? 'up' : 'down',
      latency_ms: telemetry.latency_ms,
      detail: { uptime_seconds: (telemetry.body as { uptime_seconds?: number } | null)?.uptime_seconds ?? null },
      error: telemetry.error,
    },
    {
      name: 'composer',
      status: composer.ok ? 'up' : 'down',
      latency_ms: composer.latency_ms,
      detail: { uptime_seconds: (composer.body as { uptime_seconds?: number } | null)?.uptime_seconds ?? null },
      error: composer.error,
    },
    worker,
  ];
  const states = services.map((s) => s.status);
  const status = states.includes('down') ? 'unhealthy' : states.includes('degraded') ? 'degraded' : 'healthy';
  return { status: status as 'healthy' | 'degraded' | 'unhealthy', checked_at: new Date(), services };
}

/** One chain walked as `npm run cli -- audit verify` does, with the master keys that check retention checkpoints. */
export async function verifyAuditChain(rt: Runtime, orgId: string | null): Promise<ChainReport & { verified_at: Date }> {
  const keys = rt.secrets.derivedKeys(CHECKPOINT_KEY_LABEL);
  const report = await verifyChain(rt.db, orgId, keys);
  return { ...report, verified_at: new Date() };
}
