import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import {
  edgeServerOptions,
  installApiDocs,
  installErrorHandling,
  installHealthRoute,
  installValidators,
  lazySerializerOptions,
} from '@clinic/http-kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { ingestRoutes, type IngestDeps } from './routes/ingest.ts';

const VERSION: string = createRequire(import.meta.url)('../package.json').version;

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
    ...lazySerializerOptions,
  });
  installValidators(app);
  installErrorHandling(app);
  app.removeContentTypeParser('text/plain');
  await installApiDocs(app, {
    title: 'Clinic Platform telemetry service',
    version: VERSION,
    description:
      'Video engagement events, pose landmarks and form scores (docs/telemetry.md). Callers present the session or ' +
      'media token the core API issued. Errors use the envelope { error: { code, message, fields? } }.',
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    extra: { security: [{ bearerAuth: [] }] },
  });
  installHealthRoute(app);
  ingestRoutes(app, {
    ...deps,
    poseBodyLimit: deps.poseBodyLimit ?? 262_144,
    poseRateLimit: deps.poseRateLimit ?? { limit: 300, windowSeconds: 60 },
  });
  return app;
}
