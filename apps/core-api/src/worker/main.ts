import { ConfigError, parseConfig } from '../config.ts';
import { DataDirBusyError } from '@clinic/db';
import { createRuntime } from '../platform/runtime.ts';
import { startWorker } from './worker.ts';

/**
 * `npm run worker`: the worker alone (production: one process per service, any number of instances).
 * On the embedded default `npm start` runs it inside the API process instead; running this beside it
 * would open the same data folder twice, which the folder lock refuses with a clear message.
 */
async function main(): Promise<void> {
  const config = parseConfig(process.env);
  const rt = await createRuntime(config);
  const worker = await startWorker(rt);
  process.stdout.write(
    `Worker running (${config.databaseUrl ? 'PostgreSQL' : `embedded PGlite in ${config.dataDir}`}); Ctrl-C stops it after the jobs in hand.\n`,
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    rt.logger.info({ signal }, 'worker shutting down');
    await worker.close();
    await rt.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof DataDirBusyError;
  process.stderr.write(`Cannot start the worker: ${known ? (err as Error).message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(1);
});
