import { PGlite } from '@electric-sql/pglite';
import { scopeStatement } from './scope.ts';
import type { Database, QueryResult, RequestScope, Transaction } from './types.ts';

interface PGliteLike {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(sql: string): Promise<unknown>;
}

function wrap(conn: PGliteLike): Transaction {
  return {
    async exec(sql: string) {
      await conn.exec(sql);
    },
    async query<R>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const res = await conn.query<R>(text, params as unknown[] | undefined);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
  };
}

/**
 * The embedded default: real PostgreSQL compiled to WASM, in a folder or in memory.
 * One connection: PGlite serialises transactions itself, so metrics report a pool of one.
 */
export async function openPglite(dataDir?: string): Promise<Database> {
  const pg = dataDir ? new PGlite(dataDir) : new PGlite();
  await pg.waitReady;
  let busy = 0;
  const direct = wrap(pg);
  const track = async <T>(work: () => Promise<T>): Promise<T> => {
    busy++;
    try {
      return await work();
    } finally {
      busy--;
    }
  };
  return {
    kind: 'pglite',
    query: (text, params) => track(() => direct.query(text, params)),
    withScope: (scope: RequestScope, fn) =>
      track(() =>
        pg.transaction(async (tx) => {
          const s = scopeStatement(scope);
          await tx.query(s.text, s.params);
          return fn(wrap(tx));
        }),
      ),
    transaction: (fn) => track(() => pg.transaction((tx) => fn(wrap(tx)))),
    exec: async (sql) => {
      await track(() => pg.exec(sql));
    },
    poolMetrics: () => ({
      total_conns: 1,
      acquired_conns: busy > 0 ? 1 : 0,
      idle_conns: busy > 0 ? 0 : 1,
      max_conns: 1,
      utilization_pct: busy > 0 ? 100 : 0,
    }),
    close: () => pg.close(),
  };
}
