import { createServiceLogger } from '@clinic/http-kit';
import { buildWebServer } from './server/app.ts';
import { parseWebConfig, WebConfigError } from './server/config.ts';

/**
 * Production entry (`npm run web`): the front-end proxy as its own process, any number of instances
 * behind the load balancer (sessions in Redis via REDIS_URL). On the embedded default it runs inside
 * `npm start` instead, beside the development OpenID provider.
 */
async function main(): Promise<void> {
  const config = parseWebConfig(process.env);
  const logger = createServiceLogger({ level: config.logLevel });
  const server = await buildWebServer({ config, logger: logger as never });
  const url = await server.listen();
  logger.info({ url, platform: server.platformOrigin(), issuer: config.oidc?.issuerUrl ?? null }, 'web proxy listening');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(
    `Cannot start the web proxy: ${err instanceof WebConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`,
  );
  process.exit(1);
});
