import { join } from 'node:path';
import { acquireLock, DataDirBusyError, type Database, MIGRATIONS_DIR, migrate, openPglite, openPostgres, readLiveLock } from '@clinic/db';
import { request } from 'undici';
import { ConfigError, parseConfig } from '../config.ts';
import { createSecretBox, loadMasterKeys } from '../platform/secrets.ts';
import { CheckFailedError, parseCommand, runCommand, runFileCommand, UsageError, USAGE } from './commands.ts';

/**
 * Runs a command on a database this process opened itself. The schema is brought up to date first,
 * as the server does at start-up: `superadmin grant` on a fresh data folder must not fail for lack of
 * a users table.
 */
async function runDirect(db: Database, args: string[]): Promise<string> {
  if (args[0] !== 'migrate') await migrate(db, MIGRATIONS_DIR);
  const config = parseConfig(process.env);
  return runCommand(db, args, {
    secrets: async () => createSecretBox(await loadMasterKeys({ spec: config.masterKeys, env: config.env, dataDir: config.dataDir })),
  });
}

/** `npm run cli -- <command>`: on PostgreSQL directly; on the embedded default through the running server if there is one. */
async function main(args: string[]): Promise<string> {
  // Asked for, the usage is the answer (exit 0); a bare `npm run cli` is a usage error (exit 2).
  if (args[0] === 'help' || args[0] === '--help') return USAGE;
  if (args.length === 0) throw new UsageError(USAGE);
  parseCommand(args);
  const config = parseConfig(process.env);
  const fromFiles = await runFileCommand(args, config.messages.outboxDir);
  if (fromFiles !== null) return fromFiles;
  if (config.databaseUrl) {
    const db = await openPostgres({ connectionString: config.databaseUrl, max: 2 });
    try {
      return await runDirect(db, args);
    } finally {
      await db.close();
    }
  }
  const holder = await readLiveLock(config.dataDir);
  if (holder) {
    if (!holder.controlUrl || !holder.secret) throw new DataDirBusyError(holder, config.dataDir);
    const res = await request(holder.controlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-control-secret': holder.secret },
      body: JSON.stringify({ args }),
    });
    const body = (await res.body.json()) as { output?: string; error?: string };
    if (res.statusCode === 400) throw new UsageError(body.error);
    if (res.statusCode !== 200) throw new Error(body.error ?? `the running server answered ${res.statusCode}`);
    return `${body.output} (through the running server, pid ${holder.pid})`;
  }
  const lock = await acquireLock(config.dataDir);
  const db = await openPglite(join(config.dataDir, 'pgdata'));
  try {
    return await runDirect(db, args);
  } finally {
    await db.close();
    await lock.release();
  }
}

main(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write(`${out}\n`);
  },
  (err: unknown) => {
    const known =
      err instanceof UsageError || err instanceof ConfigError || err instanceof DataDirBusyError || err instanceof CheckFailedError;
    process.stderr.write(`${known ? (err as Error).message : ((err as Error).stack ?? String(err))}\n`);
    process.exit(known && err instanceof UsageError ? 2 : 1);
  },
);
