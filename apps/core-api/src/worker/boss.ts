import type { Database, Queryable } from '@clinic/db';
import PgBoss from 'pg-boss';
import type { Config } from '../config.ts';
import { type InFlight, inFlight } from './in-flight.ts';

/** pg-boss's executor interface: every statement returns its rows. */
export interface BossExecutor {
  // biome-ignore lint/suspicious/noExplicitAny: pg-boss declares its executor with any[] rows.
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/** Runs pg-boss's statements inside one of our transactions (transactional enqueue). */
export function executorOf(tx: Queryable): BossExecutor {
  return { executeSql: async (text, values) => tx.query(text, values ?? []) };
}

/**
 * Our Database as pg-boss's database (PGlite, or a PostgreSQL pool that tests hand in): parameterised
 * statements go through query(); pg-boss's schema scripts (several statements, no parameters) through
 * exec(), which runs them as one simple-protocol batch.
 *
 * It also counts the statements in flight. pg-boss 10 completes or fails a job without awaiting it
 * (manager.js, onFetch), so boss.stop() can return while that statement still runs, and a caller that then
 * closes the database got an unhandled "Cannot use a pool after calling end" from it. The worker's close()
 * waits for them.
 */
function databaseExecutor(db: Database, statements: InFlight): BossExecutor {
  const run = async (text: string, values?: unknown[]) => {
    if (values?.length) return db.query(text, values);
    try {
      return await db.query(text);
    } catch (err) {
      if (!/multiple commands/i.test((err as Error).message)) throw err;
      await db.exec(text);
      return { rows: [] };
    }
  };
  return { executeSql: (text, values) => statements.track(run(text, values)) };
}

export interface Boss {
  boss: PgBoss;
  /** Statements pg-boss sent through our database and still running (none with its own pool). */
  statements: InFlight;
}

/**
 * The durable job system (architecture section 4: pg-boss). With DATABASE_URL it opens its own small pool; on the
 * embedded default (and in tests, which hand the runtime a database) it shares the process's database.
 */
export function createBoss(db: Database, config: Config): Boss {
  const common = {
    schema: 'pgboss',
    // Expired (crashed) jobs come back after at most this long; the delivery queue's own expiry bounds the rest.
    maintenanceIntervalSeconds: config.worker.maintenanceIntervalSeconds,
    monitorStateIntervalSeconds: Math.max(config.worker.maintenanceIntervalSeconds, 10),
    // Completed jobs are history we do not need: the delivery log has it.
    archiveCompletedAfterSeconds: 3600,
    deleteAfterDays: 7,
  };
  if (config.databaseUrl) {
    // pg-boss ends this pool itself in stop(); nothing of ours shares it.
    const boss = new PgBoss({ ...common, connectionString: config.databaseUrl, max: 4, application_name: 'clinic-worker' });
    return { boss, statements: inFlight() };
  }
  const statements = inFlight();
  return { boss: new PgBoss({ ...common, db: databaseExecutor(db, statements) }), statements };
}
