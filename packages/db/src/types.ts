export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * Name of a prepared statement, for hot statements run on every request: PostgreSQL then plans
   * them once per connection (measured: the request-context query ran five times faster). PGlite
   * ignores it.
   */
  name?: string;
}

export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[], opts?: QueryOptions): Promise<QueryResult<R>>;
}

export interface Transaction extends Queryable {
  /** Several statements without parameters (migration files). */
  exec(sql: string): Promise<void>;
}

/** The database role a request transaction runs as (architecture section 2). */
export type AppRole = 'app_rls' | 'app_bypass';

/**
 * What a request transaction sets with transaction-local set_config before any query runs.
 * Policies read these through app.current_principal_id(), app.current_org_id(), app.has_permission().
 */
export interface RequestScope {
  role: AppRole;
  principalId: string | null;
  orgId: string | null;
  permissions: readonly string[];
  /** The patient a caregiver acts for (X-Patient-ID); policies see it through app.current_patient_id(). */
  actingPatientId?: string | null;
  /**
   * The transaction's own statement time-out in milliseconds (SET LOCAL statement_timeout), e.g. the
   * route's budget: 5 s for a request, 2 minutes for a long operation. Absent: the connection's default.
   * PGlite accepts the setting but cannot enforce it (one thread, no timer signal).
   */
  statementTimeoutMs?: number;
}

export interface PoolMetrics {
  total_conns: number;
  acquired_conns: number;
  idle_conns: number;
  max_conns: number;
  utilization_pct: number;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** One transaction running as the scope's role with its tenant settings; commits when fn resolves. */
  withScope<T>(scope: RequestScope, fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** One transaction as the owner role: migrations, CLI commands, system jobs. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Several statements without parameters (migration files). */
  exec(sql: string): Promise<void>;
  poolMetrics(): PoolMetrics;
  /**
   * PostgreSQL only: the rows of one query, read through a cursor in batches inside one transaction
   * that runs as the scope's role (exports that must not be buffered). It uses a small separate pool
   * without pipeline mode, which cursors need. PGlite has one connection, which a slow reader would
   * hold: page with keyset pagination there instead.
   */
  stream?<R = Record<string, unknown>>(
    scope: RequestScope,
    text: string,
    params?: readonly unknown[],
    opts?: { batchSize?: number },
  ): AsyncIterable<R>;
  close(): Promise<void>;
}
