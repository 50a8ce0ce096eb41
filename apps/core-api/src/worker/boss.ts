import type { Database, Queryable } from '@clinic/db';
import PgBoss from 'pg-boss';
import type { Config } from '../config.ts';

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
 */
function databaseExecutor(db: Database): BossExecutor {
  return {
    async executeSql(text, values) {
      if (values?.length) return db.query(text, values);
      try {
        return await db.query(text);
      } catch (err) {
        if (!/multiple commands/i.test((err as Error).message)) throw err;
        await db.exec(text);
        return { rows: [] };
      }
    },
  };
}

/**
 * The durable job system (architecture section 4: pg-boss). With DATABASE_URL it opens its own small pool; on the
 * embedded default (and in tests, which hand the runtime a database) it shares the process's database.
 */
export function createBoss(db: Database, config: Config): PgBoss {
  const common = {
    schema: 'pgboss',
    // Expired (crashed) jobs come back after at most this long; the delivery queue's own expiry bounds the rest.
    maintenanceIntervalSeconds: config.worker.maintenanceIntervalSeconds,
    monitorStateIntervalSeconds: Math.max(config.worker.maintenanceIntervalSeconds, 10),
    // Completed jobs are history we do not need: the delivery log has it.
    archiveCompletedAfterSeconds: 3600,
    deleteAfterDays: 7,
  };
  return config.databaseUrl
    ? new PgBoss({ ...common, connectionString: config.databaseUrl, max: 4, application_name: 'clinic-worker' })
    : new PgBoss({ ...common, db: databaseExecutor(db) });
}
