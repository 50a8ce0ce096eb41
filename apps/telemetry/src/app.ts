import { randomUUID } from 'node:crypto';
import { edgeServerOptions, installErrorHandling, installValidators } from '@clinic/http-kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { ingestRoutes, type IngestDeps } from './routes/ingest.ts';

export type TelemetryDeps = Omit<IngestDeps, 'poseBodyLimit' | 'poseRateLimit'> & {
  /** Compressed pose batch limit; a second of 30 fps frames is about 12 KiB gzipped. */
  poseBodyLimit?: number;
  /** Pose batches per session per window; default 300 a minute (five times the nominal one a second). */
  poseRateLimit?: IngestDeps['poseRateLimit'];
  /** JSON body limit (media event batches). */
  bodyLimit?: number;
};

/** The telemetry service (spec 4.11, architecture section 1) as a Fastify instance; listening is the caller's business. */
export async function buildTelemetryApp(deps: TelemetryDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger.child({ service: 'telemetry' }) as FastifyBaseLogger,
    bodyLimit: deps.bodyLimit ?? 262_144,
    genReqId: () => randomUUID(),
    requestTimeout: 30_000,
    ...edgeServerOptions,
  });
  installValidators(app);
  installErrorHandling(app);
  app.removeContentTypeParser('text/plain');
  // The core API's health shape (status, checks, uptime_seconds); the process serving is the check.
  app.get('/health', async () => ({ status: 'healthy', checks: {}, uptime_seconds: Math.floor(process.uptime()) }));
  ingestRoutes(app, {
    ...deps,
    poseBodyLimit: deps.poseBodyLimit ?? 262_144,
    poseRateLimit: deps.poseRateLimit ?? { limit: 300, windowSeconds: 60 },
  });
  return app;
}
