import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Database } from './types.ts';

export interface MigrationLog {
  info(obj: object, msg: string): void;
}

/**
 * Applies the numbered `.sql` files of `dir` that are not yet recorded, in name order, all in one
 * transaction. On PostgreSQL an advisory lock makes concurrent starts of several instances safe.
 * The same files run on PGlite and PostgreSQL.
 */
export async function migrate(db: Database, dir: string, log?: MigrationLog): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  await db.exec(
    'create schema if not exists app_meta; ' +
      'create table if not exists app_meta.schema_migrations (name text primary key, applied_at timestamptz not null default now())',
  );
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    if (db.kind === 'postgres') {
      await tx.query('select pg_advisory_xact_lock(7275001)');
      // The pool's statement budget is for requests: rewriting the keys of a large table (0180) or distributing
      // it on Citus (0181) takes longer, once.
      await tx.query('set local statement_timeout = 0');
    }
    const done = new Set((await tx.query<{ name: string }>('select name from app_meta.schema_migrations')).rows.map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(join(dir, file), 'utf8');
      await tx.exec(sql);
      await tx.query('insert into app_meta.schema_migrations (name) values ($1)', [file]);
      applied.push(file);
      log?.info({ migration: file }, 'migration applied');
    }
  });
  return applied;
}
