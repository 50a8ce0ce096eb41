import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';
import type { Database } from './types.ts';

export interface TestDatabase {
  db: Database;
  /** Connection string of the fresh database (postgres mode only), for a second instance or raw clients. */
  url: string | null;
  drop(): Promise<void>;
}

/**
 * A fresh, empty database for one test file: PGlite in memory, or a new database on the PostgreSQL
 * server of `adminUrl` that is dropped afterwards. Nothing is shared between test files.
 */
export async function createTestDatabase(adminUrl: string | null): Promise<TestDatabase> {
  if (!adminUrl) {
    const db = await openPglite();
    return { db, url: null, drop: () => db.close() };
  }
  const name = `clinic_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openPostgres({ connectionString: url.toString(), max: 10 });
  return {
    db,
    url: url.toString(),
    drop: async () => {
      await db.close();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
