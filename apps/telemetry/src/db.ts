import type { Database, Queryable } from '@clinic/db';

/**
 * One transaction as the telemetry service's own role (migration 0050): it may only execute the
 * telemetry functions. The role is set transaction-locally, so a pooled or shared connection (the
 * embedded default shares the core's) is never left in it. Not awaited before fn's first query: on
 * PostgreSQL both leave in one write (pipeline mode). Used by everything but the pose hot path.
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

/**
 * A bytea parameter, and the SQL that reads it. node-pg sends a Buffer as a binary parameter (no
 * conversion). PGlite 0.5 serializes bytea parameters in JavaScript, byte by byte into hex strings
 * (measured: 1.2 ms of CPU for a 12 KB batch, more than the insert itself); Buffer's native hex
 * encoding and PostgreSQL's decode() do the same work in C.
 */
export function byteaParam(db: Database, n: number, value: Buffer): { sql: string; value: Buffer | string } {
  return db.kind === 'pglite' ? { sql: `decode($${n}, 'hex')`, value: value.toString('hex') } : { sql: `$${n}`, value };
}

export interface PoseRow {
  sessionId: string;
  userId: string;
  orgId: string;
  seq: number;
  frames: number;
  tFirst: number;
  tLast: number;
  /** The batch exactly as received (gzip). */
  payload: Buffer;
}

/**
 * One pose batch: ONE autocommit statement, one round trip, a named (prepared) statement. The
 * SECURITY DEFINER function checks ownership, restriction, patient row and consent itself and locks
 * the session row against a concurrent end (migrations 0050, 0052), so the transaction and the
 * transaction-local role of asTelemetry add nothing to this call but three statements (measured:
 * +0.5 ms of CPU per batch on PGlite, two more round trips on PostgreSQL). Least privilege in
 * production is the service's own login role (docs/telemetry.md), which holds for every statement.
 * Returns 'stored', 'duplicate' or a refusal (gate.ts).
 */
export async function ingestPose(db: Database, p: PoseRow): Promise<string> {
  const payload = byteaParam(db, 8, p.payload);
  const { rows } = await db.query<{ s: string }>(
    `select app.telemetry_ingest_pose($1, $2, $3, $4, $5, $6, $7, ${payload.sql}) as s`,
    [p.sessionId, p.userId, p.orgId, p.seq, p.frames, p.tFirst, p.tLast, payload.value],
    { name: 'telemetry_ingest_pose' },
  );
  return rows[0]!.s;
}
