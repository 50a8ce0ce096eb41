import { mkdir } from 'node:fs/promises';
import { openPostgres } from '@clinic/db';
import { createServiceLogger } from '@clinic/http-kit';
import { buildComposerService } from './app.ts';
import { runCli } from './cli.ts';
import { ComposerConfigError, composerConfigFromEnv } from './config.ts';

/**
 * The composer as its own process (production: `npm run composer`). It needs DATABASE_URL (the core
 * API's database, migrated by the core API) and a login that is granted app_composer; on the
 * embedded default it runs inside `npm start` instead.
 */
async function main(): Promise<void> {
  const config = composerConfigFromEnv();
  if (!config.databaseUrl) {
    throw new ComposerConfigError('DATABASE_URL is required: on the embedded default the composer runs inside `npm start`');
  }
  const logger = createServiceLogger({ level: config.logLevel });
  await mkdir(config.workDir, { recursive: true });
  const db = await openPostgres({ connectionString: config.databaseUrl, max: config.databasePoolMax });
  const svc = await buildComposerService(config, { db, logger });
  const url = await svc.app.listen({ host: config.host, port: config.port });
  logger.info({ url, delivery: config.delivery.kind }, 'composer listening');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await svc.close();
    await db.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

// With arguments it is the CLI (`npm run composer -- import <slug> <file>`), else the server.
const cliArgs = process.argv.slice(2);
(cliArgs.length ? runCli(cliArgs).then((code) => process.exit(code)) : main()).catch((err: unknown) => {
  process.stderr.write(
    `Cannot start the composer: ${err instanceof ComposerConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`,
  );
  process.exit(1);
});
