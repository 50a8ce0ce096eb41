import { buildApp } from './app.ts';
import { telemetryCompanion } from './modules/exercise-sessions/companion.ts';
import { createServer } from 'node:net';
import { type ComposerConfig, ComposerConfigError, composerCompanion, composerConfigFromEnv } from '@clinic/composer';
import { ConfigError, parseConfig } from './config.ts';
import { DataDirBusyError } from '@clinic/db';
import { startControlServer } from './platform/control-server.ts';
import { createRuntime, type Runtime } from './platform/runtime.ts';
import { startWorker } from './worker/worker.ts';
import { parseWebConfig, WebConfigError, type WebConfig } from '@clinic/web';
import { seedDemoClinic } from './platform/demo-clinic.ts';
import { webCompanion } from './platform/web-companion.ts';

/** A start-up failure with a message for the operator rather than a stack trace. */
class StartError extends Error {}

/** A service started beside the core API in this process (architecture section 1: all four in one process on the embedded default). */
interface Companion {
  /** Banner label, for example 'Telemetry'. */
  name: string;
  /** Starts it on the shared runtime; returns its URL (if it listens), extra banner lines and how to stop it. */
  start(rt: Runtime): Promise<{ url?: string; banner?: string[]; close(): Promise<void> }>;
}

/** The worker in-process: durable jobs, webhook deliveries, scheduled sweeps. */
const workerCompanion: Companion = {
  name: 'Worker',
  async start(rt) {
    const worker = await startWorker(rt);
    return { close: () => worker.close() };
  },
};

/** A port this process will listen on, and the setting that chooses it (named in the error when it is taken). */
interface PlannedPort {
  setting: string;
  host: string;
  port: number;
}

/** Resolves when the port can be bound now; StartError naming its setting when something already listens there. */
function assertPortFree({ setting, host, port }: PlannedPort): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new StartError(`port ${port} on ${host} is already in use: stop what listens there, or set ${setting} to another port.`)
          : err,
      ),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Every port of this process, checked before the database is opened and migrated: a busy port is
 * reported at once, naming its own setting, instead of after the migrations.
 */
function plannedPorts(config: ReturnType<typeof parseConfig>, composer: ComposerConfig | null, web: WebConfig | null): PlannedPort[] {
  const planned: PlannedPort[] = [{ setting: 'PORT', host: config.host, port: config.port }];
  if (composer) {
    planned.push({ setting: 'TELEMETRY_PORT', host: config.host, port: config.telemetry.port });
    planned.push({ setting: 'COMPOSER_PORT', host: composer.host, port: composer.port });
  }
  if (web) {
    planned.push({ setting: 'WEB_PORT', host: web.host, port: web.port });
    if (!web.oidc) planned.push({ setting: 'DEV_OIDC_PORT', host: config.host, port: config.devOidcPort });
  }
  return planned;
}

async function main(): Promise<void> {
  const config = parseConfig(process.env);
  // The embedded default runs every service in this process: the composer's settings are parsed here, once.
  const composer = config.databaseUrl ? null : composerConfigFromEnv();
  const web = config.databaseUrl ? null : parseWebConfig(process.env);
  const ports = plannedPorts(config, composer, web);
  for (const p of ports) await assertPortFree(p);
  /**
   * The companions of the embedded default, in start order. With DATABASE_URL set (production) each runs
   * as its own process (`npm run worker`, the telemetry and composer entries) and none starts here.
   */
  const urls: Record<string, string> = {};
  const companionsToStart: Companion[] =
    composer && web
      ? [
          workerCompanion,
          telemetryCompanion,
          composerCompanion(composer),
          webCompanion(
            web,
            () => urls.core!,
            () => urls.Telemetry,
            () => urls.Composer,
          ),
        ]
      : [];
  const rt = await createRuntime(config);
  let address: string;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let control: { close(): Promise<void> } | null;
  const companions: Array<{ name: string; url?: string; banner?: string[]; close(): Promise<void> }> = [];
  try {
    app = await buildApp(rt);
    address = await app.listen({ host: config.host, port: config.port });
    urls.core = address;
    control = rt.lock ? await startControlServer(rt) : null;
    // A fresh embedded database gets the demo clinic, so the booking page printed below has slots.
    if (web && rt.devIssuer) await seedDemoClinic(app, rt);
    for (const c of companionsToStart) {
      const started = { name: c.name, ...(await c.start(rt)) };
      companions.push(started);
      if (started.url) urls[c.name] = started.url;
    }
  } catch (err) {
    // Give the data folder back (lock and database) before exiting, so the next start or CLI run
    // does not find it held by a process that is gone.
    for (const c of companions.reverse()) await c.close().catch(() => undefined);
    await rt.close().catch(() => undefined);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      // Taken between the check and the listen: name the port that was lost, with its own setting.
      const lost = ports.find((p) => p.port === (err as { port?: number }).port) ?? ports[0]!;
      throw new StartError(
        `port ${lost.port} on ${lost.host} is already in use: stop what listens there, or set ${lost.setting} to another port.`,
      );
    }
    throw err;
  }

  const url = config.publicUrl.startsWith('http') && config.port !== 0 ? config.publicUrl : address;
  const embedded = !config.databaseUrl;
  const lines = [
    '',
    `  Core API      ${url}`,
    `  API docs      ${url}/docs   (OpenAPI: ${url}/openapi.json)`,
    `  Database      ${embedded ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL (DATABASE_URL)'}; counters ${config.redisUrl ? 'in Redis' : 'in memory'}`,
    config.auth.mode === 'development'
      ? `  Get a token   TOKEN=$(npm run -s token -- you@example.com)   then   curl -H "Authorization: Bearer $TOKEN" ${url}/v1/me`
      : `  Tokens        issued by ${config.auth.issuer}`,
    `  Superadmin    npm run cli -- superadmin grant you@example.com`,
    ...companions.flatMap((c) => [
      `  ${c.name.padEnd(13)} ${c.url ? `${c.url}   (docs: ${c.url}/docs)` : 'running in this process'}`,
      ...(c.banner ?? []),
    ]),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    rt.logger.info({ signal }, 'shutting down');
    await control?.close();
    await app.close();
    for (const c of companions.reverse())
      await c.close().catch((err: Error) => rt.logger.warn({ err: err.message, companion: c.name }, 'companion did not stop cleanly'));
    await rt.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  if (
    err instanceof ConfigError ||
    err instanceof ComposerConfigError ||
    err instanceof WebConfigError ||
    err instanceof DataDirBusyError ||
    err instanceof StartError
  ) {
    process.stderr.write(`Cannot start: ${err.message}\n`);
  } else {
    process.stderr.write(`Cannot start: ${(err as Error).stack ?? String(err)}\n`);
  }
  process.exit(1);
});
