import type { Database, Queryable } from '@clinic/db';

/**
 * One transaction as the telemetry service's own role (migration 0050): it may only execute the
 * telemetry functions. The role is set transaction-locally, so a pooled or shared connection (the
 * embedded default shares the core's) is never left in it. Not awaited before fn's first query: on
 * PostgreSQL both leave in one write (pipeline mode).
 */
export function asTelemetry<T>(db: Database, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const role = tx.query("select set_config('role', 'app_telemetry', true)");
    role.catch(() => undefined);
    const result = await fn(tx);
    await role;
    return result;
  });
}
