import { readFileSync } from 'node:fs';
import type { Database, Queryable, QueryOptions, RequestScope } from '@clinic/db';
import autocannon from 'autocannon';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';

/**
 * Settings that lift every request limit of the core API (the per-IP entry, per-user, per-organization,
 * public and hold limits). A benchmark measures the work of a request; a 429 costs almost nothing and would inflate the
 * rate (the per-user limit, 1,000 a minute, refused most of a run's requests once requests got faster).
 */
export const NO_RATE_LIMITS = {
  RATELIMIT_API_LIMIT: '100000000',
  RATELIMIT_USER_LIMIT: '100000000',
  RATELIMIT_TENANT_LIMIT: '100000000',
  RATELIMIT_PUBLIC_LIMIT: '100000000',
  RATELIMIT_PUBLIC_RESOLVE_LIMIT: '100000000',
  RATELIMIT_HOLDS_PER_IP: '100000000',
  RATELIMIT_HOLDS_PER_ORG: '100000000',
  SCHEDULING_HOLD_STREAMS_PER_IP: '100000000',
} as const;

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Requests completed in the measurement. */
  requests: number;
}

/** Bounded load on a loopback URL: a fixed duration, a fixed number of connections, then it stops. */
export async function load(
  url: string,
  headers: Record<string, string>,
  seconds = Number(process.env.BENCH_SECONDS ?? 8),
  connections = 16,
): Promise<LoadResult> {
  const r = await autocannon({ url, headers, connections, duration: seconds, workers: 1 });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
    requests: r.requests.total,
  };
}

export function row(name: string, r: LoadResult): string {
  return `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   errors ${r.errors + r.non2xx}`;
}

/**
 * CPU time spent by this process's main thread (the servers under test), by the PostgreSQL backends of
 * `pids` and by the Redis server (`redisPid`, optional), read from /proc (Linux) around a measurement: under
 * a shared machine's noise, milliseconds of CPU per request say where a request's cost is better than its
 * rate does. Returns a stop function giving milliseconds per request for `requests`.
 */
export function cpuMeter(pids: number[], redisPid?: number): () => (requests: number) => string {
  // [utime, stime] in clock ticks (100 a second), after the parenthesised command name.
  const ticks = (path: string): [number, number] => {
    try {
      const f = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
      return [Number(f[11]), Number(f[12])];
    } catch {
      return [0, 0];
    }
  };
  const sample = () => ({
    main: ticks(`/proc/self/task/${process.pid}/stat`),
    pg: new Map(pids.map((pid) => [pid, ticks(`/proc/${pid}/stat`)])),
    redis: redisPid ? ticks(`/proc/${redisPid}/stat`) : ([0, 0] as [number, number]),
  });
  const start = sample();
  return () => {
    const end = sample();
    // A backend that ended during the measurement (a pool closing an idle connection) is left out.
    const pg: [number, number] = [0, 0];
    for (const [pid, [u, s]] of end.pg) {
      const [u0, s0] = start.pg.get(pid) ?? [0, 0];
      if (u + s > 0) {
        pg[0] += u - u0;
        pg[1] += s - s0;
      }
    }
    const delta = (a: [number, number], b: [number, number]): [number, number] => [a[0] - b[0], a[1] - b[1]];
    const spent = { main: delta(end.main, start.main), pg, redis: delta(end.redis, start.redis) };
    return (requests) => {
      const ms = (t: number) => ((t * 10) / Math.max(requests, 1)).toFixed(2);
      const of = (k: 'main' | 'pg' | 'redis') => `${ms(spent[k][0] + spent[k][1])} ms (kernel ${ms(spent[k][1])})`;
      return `CPU per request: node main thread ${of('main')}, postgres ${of('pg')}${redisPid ? `, redis ${ms(spent.redis[0] + spent.redis[1])} ms` : ''}`;
    };
  };
}

export interface Statement {
  text: string;
  params: unknown[];
  /** The prepared statement's name, when the API named it: the floor prepares it too. */
  name?: string | undefined;
}

/**
 * Remembers the statements of the latest request transaction in batches: a statement sent while another one
 * of the transaction was still unanswered joins that one's batch (the API pipelined them), and so does the
 * floor. The transaction's scope (role and settings) is kept for EXPLAIN.
 */
export function capturing(db: Database): { db: Database; last: () => Statement[][]; scope: () => RequestScope } {
  let batches: Statement[][] = [];
  let scope: RequestScope | null = null;
  const wrap = (tx: Queryable, into: Statement[][]): Queryable => {
    let pending = 0;
    return {
      query: <R>(text: string, params?: readonly unknown[], opts?: QueryOptions) => {
        if (pending === 0) into.push([]);
        into[into.length - 1]!.push({ text, params: [...(params ?? [])], name: opts?.name });
        pending++;
        const done = tx.query<R>(text, params, opts);
        done.then(
          () => pending--,
          () => pending--,
        );
        return done;
      },
    };
  };
  return {
    db: {
      ...db,
      kind: db.kind,
      withScope: (s, fn) => {
        const into: Statement[][] = [];
        batches = into;
        scope = s;
        return db.withScope(s, (tx) => fn(wrap(tx, into)));
      },
    },
    last: () => batches,
    scope: () => scope!,
  };
}

/**
 * A floor's answer: the captured statements on a bare pool, one at a time on whichever connection the pool
 * gives (the floor of bench/lists.ts), or batched as the API sent them, each batch in one round trip on one
 * connection (what is left is the platform's own cost). Prepared-statement names are kept. The last rows.
 */
export async function replay(pool: pg.Pool, batches: Statement[][], mode: 'sequential' | 'batched'): Promise<unknown[]> {
  let last: unknown[] = [];
  if (mode === 'sequential') {
    for (const s of batches.flat()) last = (await pool.query({ text: s.text, values: s.params, name: s.name })).rows;
    return last;
  }
  const client = await pool.connect();
  try {
    for (const batch of batches) {
      const results = await Promise.all(batch.map((s) => client.query({ text: s.text, values: s.params, name: s.name })));
      last = results[results.length - 1]!.rows;
    }
    return last;
  } finally {
    client.release();
  }
}

/** The benchmarks' superadmin, made by direct database change as the CLI does; returns its token. */
export async function benchSuperadmin(db: Database, issuer: { sign(email: string): Promise<string> }): Promise<string> {
  const email = 'bench-root@example.com';
  await db.query('insert into users (email) values ($1)', [email]);
  await db.query(`insert into platform_memberships (user_id, role) select id, 'superadmin' from users where email = $1`, [email]);
  return issuer.sign(email);
}

/** Calls through app.inject as `token` (in `org` when given) and returns the answer's data; any status >= 300 throws. */
export function injector(app: FastifyInstance) {
  return async (method: string, url: string, token: string, org: string | null, payload?: unknown) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: { authorization: `Bearer ${token}`, ...(org ? { 'x-organization-id': org } : {}) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json().data;
  };
}
