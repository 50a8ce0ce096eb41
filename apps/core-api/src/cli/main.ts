import { join } from 'node:path';
import { openPglite, openPostgres } from '@clinic/db';
import { request } from 'undici';
import { ConfigError, parseConfig } from '../config.ts';
import { acquireLock, DataDirBusyError, readLiveLock } from '../platform/embedded-lock.ts';
import { runCommand, UsageError, USAGE } from './commands.ts';

/** `npm run cli -- <command>`: on PostgreSQL directly; on the embedded default through the running server if there is one. */
async function main(args: string[]): Promise<string> {
  if (args.length === 0 || args[0] === 'help' || args[0] === '--help') return USAGE;
  const config = parseConfig(process.env);
  if (config.databaseUrl) {
    const db = await openPostgres({ connectionString: config.databaseUrl, max: 2 });
    try {
      return await runCommand(db, args);
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
    return await runCommand(db, args);
  } finally {
    await db.close();
    await lock.release();
  }
}

main(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write(out + '\n');
  },
  (err: unknown) => {
    const known = err instanceof UsageError || err instanceof ConfigError || err instanceof DataDirBusyError;
    process.stderr.write((known ? (err as Error).message : ((err as Error).stack ?? String(err))) + '\n');
    process.exit(known && err instanceof UsageError ? 2 : 1);
  },
);
