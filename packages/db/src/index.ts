export type { Database, Transaction, Queryable, QueryOptions, QueryResult, RequestScope, AppRole, PoolMetrics } from './types.ts';
export { NIL_UUID, scopeStatement } from './scope.ts';
export { openPglite, pgliteImage } from './pglite.ts';
export { openPostgres, type PostgresOptions } from './postgres.ts';
export { migrate } from './migrate.ts';
export { createTestDatabase, createTestTemplate, dropTestTemplate, type TestDatabase, type TestTemplate } from './test-database.ts';
export { isUniqueViolation, isRlsViolation, pgErrorCode } from './errors.ts';
export { MIGRATIONS_DIR } from './migrations-dir.ts';
export { acquireLock, DataDirBusyError, readLiveLock, type HeldLock, type LockInfo } from './embedded-lock.ts';
