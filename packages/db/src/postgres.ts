import pg from 'pg';
import QueryStream from 'pg-query-stream';
import { scopeSetStatements, scopeStatement } from './scope.ts';
import type { Database, QueryOptions, QueryResult, RequestScope, Transaction } from './types.ts';

// int8 (counts, sums) as JS numbers, as PGlite returns them: both backends give the same shapes.
pg.types.setTypeParser(20, (v: string) => Number(v));

export interface PostgresOptions {
  connectionString: string;
  max?: number;
  /** Connections of the separate pool that serves stream() (cursors); default 2. */
  streamMax?: number;
  /** Limit on one stream() query from start to end; default 10 minutes. */
  streamTimeoutMs?: number;
  /** Per-statement limit (spec 8: individual query time-out 5 seconds). */
  statementTimeoutMs?: number;
  applicationName?: string;
}

function wrap(client: pg.PoolClient | pg.Pool): Transaction {
  return {
    async exec(sql: string) {
      await client.query(sql);
    },
    async query<R>(text: string, params?: readonly unknown[], opts?: QueryOptions): Promise<QueryResult<R>> {
      const res = opts?.name
        ? await client.query({ name: opts.name, text, values: params as unknown[] | undefined })
        : await client.query(text, params as unknown[] | undefined);
      // Several statements without parameters (simple protocol) answer one result each: the last one counts.
      const last = (Array.isArray(res) ? res[res.length - 1] : res) as pg.QueryResult | undefined;
      const rows = (last?.rows ?? []) as R[];
      return { rows, rowCount: last?.rowCount ?? rows.length };
    },
  };
}

/**
 * Pipeline mode writes each statement to the socket as soon as it is queued, so a request's simple-protocol
 * BEGIN, its scope statement and its first query were three writes. With the socket corked until the first
 * query has been queued (and the synchronous code that queued it has run, so that statements sent together
 * with Promise.all join in), they leave in one writev. On loopback each write costs the sender the
 * delivery as well, a measurable share of a short request (bench/forms.ts, docs/operations.md).
 */
function corkUntilFirstQuery(client: pg.PoolClient): { tx: Transaction; flush: () => void } {
  const inner = wrap(client);
  const socket = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
  if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return { tx: inner, flush: () => undefined };
  socket.cork();
  let corked = true;
  let scheduled = false;
  const flush = () => {
    if (!corked) return;
    corked = false;
    socket.uncork!();
  };
  const soon = <P>(sent: P): P => {
    if (!scheduled) {
      scheduled = true;
      process.nextTick(flush);
    }
    return sent;
  };
  return {
    tx: {
      exec: (sql) => soon(inner.exec(sql)),
      query: (text, params, opts) => soon(inner.query(text, params, opts)),
    },
    flush,
  };
}

/**
 * PostgreSQL through node-postgres. Clients run in pipeline mode: BEGIN, the scope statement and the
 * first data query leave in one write, which removes two round trips from every request transaction.
 */
export async function openPostgres(opts: PostgresOptions): Promise<Database> {
  const max = opts.max ?? 20;
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max,
    application_name: opts.applicationName ?? 'clinic-platform',
    statement_timeout: opts.statementTimeoutMs ?? 5000,
    // Row-level security inflates plan cost estimates past jit_above_cost, and compiling a short
    // OLTP statement was measured at up to 2 s on a loaded machine: never worth it for this workload.
    options: '-c jit=off',
    pipeline: true,
  } as pg.PoolConfig);
  pool.on('error', () => {
    // An idle client died (server restart). The pool replaces it; requests see errors only if they hold it.
  });
  const direct = wrap(pool);
  // A Citus coordinator needs the request scope as SET LOCAL statements (scopeSetStatements); plain PostgreSQL
  // keeps the prepared set_config() statement. Asked once, at the first scoped transaction: by then start-up
  // has run the migrations, and the extension is not added to a running platform's database.
  let citus: Promise<boolean> | null = null;
  const onCitus = (): Promise<boolean> => {
    citus ??= pool
      .query<{ citus: boolean }>("select exists (select 1 from pg_extension where extname = 'citus') as citus")
      .then((r) => r.rows[0]?.citus === true)
      .catch((err: unknown) => {
        citus = null;
        throw err;
      });
    return citus;
  };
  // Cursors are refused in pipeline mode: streams get their own small pool, opened on first use.
  let streamPool: pg.Pool | null = null;
  const streamClient = () => {
    streamPool ??= new pg.Pool({
      connectionString: opts.connectionString,
      max: opts.streamMax ?? 2,
      application_name: `${opts.applicationName ?? 'clinic-platform'}-stream`,
      // A cursor's fetches count as one statement until the final Sync, so the 5 s per-statement limit
      // would cut any large export: streams get their own limit.
      statement_timeout: opts.streamTimeoutMs ?? 600_000,
      options: '-c jit=off',
    });
    streamPool.on('error', () => undefined);
    return streamPool.connect();
  };

  async function inTransaction<T>(open: (client: pg.PoolClient) => Promise<unknown>[], fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    let broken = false;
    const corked = corkUntilFirstQuery(client);
    try {
      // Not awaited on purpose: in pipeline mode they are sent together with fn's first query.
      const opening = open(client);
      for (const p of opening) p.catch(() => undefined);
      let result: T;
      try {
        result = await fn(corked.tx);
      } finally {
        corked.flush();
      }
      await Promise.all(opening);
      await client.query('commit');
      return result;
    } catch (err) {
      await client.query('rollback').catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  return {
    kind: 'postgres',
    query: (text, params, opts) => direct.query(text, params, opts),
    withScope: async (scope: RequestScope, fn) => {
      if (await onCitus()) {
        const text = scopeSetStatements(scope);
        return inTransaction((c) => [c.query('begin'), c.query(text)], fn);
      }
      const s = scopeStatement(scope);
      return inTransaction((c) => [c.query('begin'), c.query({ name: s.name, text: s.text, values: s.params })], fn);
    },
    transaction: (fn) => inTransaction((c) => [c.query('begin')], fn),
    exec: async (sql) => {
      const client = await pool.connect();
      try {
        await client.query(sql);
      } finally {
        client.release();
      }
    },
    poolMetrics: () => {
      const total = pool.totalCount;
      const idle = pool.idleCount;
      return {
        total_conns: total,
        acquired_conns: total - idle,
        idle_conns: idle,
        max_conns: max,
        utilization_pct: Math.round(((total - idle) / max) * 1000) / 10,
      };
    },
    async *stream<R>(scope: RequestScope, text: string, params?: readonly unknown[], o: { batchSize?: number } = {}): AsyncGenerator<R> {
      const client = await streamClient();
      let done = false;
      try {
        await client.query('begin read only');
        if (await onCitus()) await client.query(scopeSetStatements(scope));
        else {
          const s = scopeStatement(scope);
          await client.query(s.text, s.params);
        }
        const rows = client.query(new QueryStream(text, params as unknown[] | undefined, { batchSize: o.batchSize ?? 500 }));
        for await (const row of rows) yield row as R;
        await client.query('commit');
        done = true;
      } finally {
        // A reader that stopped early (client gone) leaves a cursor mid-flight: drop the connection.
        client.release(done ? undefined : true);
      }
    },
    close: async () => {
      await streamPool?.end();
      await pool.end();
    },
  };
}
