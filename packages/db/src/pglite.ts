import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
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
 * The contrib extensions the migrations create (PostgreSQL ships them; PGlite loads each one's bundle when
 * a database of this process needs it): trigram and btree GIN indexes for the patient search (0070), btree GiST for the exclusion constraint
 * that keeps a calendar's bookings apart (0067).
 */
const extensions = { pg_trgm, btree_gin, btree_gist };

/**
 * The embedded default: real PostgreSQL compiled to WASM, in a folder or in memory.
 * One connection: PGlite serialises transactions itself, so metrics report a pool of one.
 */
export async function openPglite(dataDir?: string, opts: { loadDataDir?: Blob } = {}): Promise<Database> {
  const load = opts.loadDataDir ? { loadDataDir: opts.loadDataDir, extensions } : { extensions };
  const pg = dataDir ? new PGlite(dataDir, load) : new PGlite(load);
  await pg.waitReady;
  return asDatabase(pg);
}

/**
 * An in-memory database prepared by `prepare` (migrations, typically), as a data-folder image that
 * `openPglite(undefined, { loadDataDir })` starts from. Loading an image skips initdb, which is most
 * of the cost of a new PGlite (about 2 s against 0.4 s here).
 */
export async function pgliteImage(prepare: (db: Database) => Promise<void>): Promise<Blob> {
  const pg = new PGlite({ extensions });
  await pg.waitReady;
  try {
    await prepare(asDatabase(pg));
    return await pg.dumpDataDir('none');
  } finally {
    await pg.close();
  }
}

function asDatabase(pg: PGlite): Database {
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
