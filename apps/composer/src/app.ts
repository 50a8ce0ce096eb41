import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createAssetStore, type AssetStore } from '@clinic/assets';
import type { Database } from '@clinic/db';
import {
  AppError,
  errors,
  edgeServerOptions,
  installApiDocs,
  installErrorHandling,
  installValidators,
  lazySerializerOptions,
} from '@clinic/http-kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ComposerConfig } from './config.ts';
import type { createLocalHlsProvider } from './delivery/local-hls.ts';
import { createDelivery } from './delivery/index.ts';
import type { DeliveryProvider } from './delivery/types.ts';
import { composerRoutes } from './routes.ts';
import { createComposer, type Composer } from './service.ts';

const VERSION: string = createRequire(import.meta.url)('../package.json').version;

export interface ComposerService {
  app: FastifyInstance;
  composer: Composer;
  delivery: DeliveryProvider;
  close(): Promise<void>;
}

/**
 * The composer service on a database it is given (its own pool in production, the core API's PGlite
 * on the embedded default). `store` and `delivery` default to what the config names.
 */
export async function buildComposerService(
  config: ComposerConfig,
  deps: { db: Database; logger: Logger; store?: AssetStore; delivery?: DeliveryProvider },
): Promise<ComposerService> {
  const tools = { ffmpeg: config.ffmpeg, ffprobe: config.ffprobe };
  const logger = deps.logger.child({ service: 'composer' });
  const delivery = deps.delivery ?? createDelivery(config, logger);
  const local = 'fileOf' in delivery ? (delivery as ReturnType<typeof createLocalHlsProvider>) : null;
  // A store built here (the config's folder or bucket) is closed with the service; a given one is the caller's.
  const ownStore = deps.store ? null : createAssetStore(config.assetStore, config.assetsDir);
  const composer = createComposer({
    db: deps.db,
    store: deps.store ?? ownStore!,
    delivery,
    tools,
    logger,
    cacheDir: config.cacheDir,
    workDir: config.workDir,
    inventoryTtlSeconds: config.inventoryTtlSeconds,
    renderTimeoutSeconds: config.renderTimeoutSeconds,
    maxSets: config.maxSets,
    pollIntervalMs: config.delivery.kind === 'stream' ? config.delivery.pollIntervalMs : 250,
  });

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // A compose request is a few hundred bytes; nothing larger is ever needed.
    bodyLimit: 16 * 1024,
    genReqId: () => randomUUID(),
    // Rendering is seconds; a render is still capped by COMPOSER_RENDER_TIMEOUT_SECONDS.
    requestTimeout: (config.renderTimeoutSeconds + 60) * 1000,
    ...edgeServerOptions,
    ...lazySerializerOptions,
    routerOptions: { ignoreTrailingSlash: true },
  });
  installValidators(app);
  installErrorHandling(app);
  await installApiDocs(app, {
    title: 'Clinic Platform exercise composer',
    version: VERSION,
    description:
      'Bakes an exercise video from stored primitives and serves its HLS (docs/composer.md). Calls are signed with a ' +
      'shared secret (Authorization: a timestamped HMAC of the body). Errors use the envelope { error: { code, message, fields? } }.',
    serverUrl: config.publicUrl,
    securitySchemes: {
      signature: {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description: 'A signature made with COMPOSER_AUTH_SECRETS (docs/composer.md).',
      },
    },
    extra: { security: [{ signature: [] }] },
  });
  // JSON only. The compose route has checked the request's signature before this runs (its preParsing
  // hook), so what is wrong with a body is answered at once, to a signed caller only (docs/composer.md).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    // No route, no body to judge: 404 (as Fastify's own parsers answer an unknown route).
    if (request.is404) return done(null, undefined);
    if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
      return done(new AppError(415, 'unsupported_media_type', 'Send the body as application/json.'), undefined);
    }
    try {
      done(null, body.length ? JSON.parse(body.toString('utf8')) : undefined);
    } catch {
      done(errors.invalidBody(), undefined);
    }
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  composerRoutes(app, {
    composer,
    authSecrets: config.authSecrets,
    authMaxSkewSeconds: config.authMaxSkewSeconds,
    ...(local ? { hlsFile: local.fileOf } : {}),
  });
  if (!config.authSecrets) logger.warn('COMPOSER_AUTH_SECRETS is not set: anonymous compose calls are accepted (development only)');

  return {
    app,
    composer,
    delivery,
    async close() {
      await app.close();
      await composer.close();
      await delivery.close();
      ownStore?.close?.();
    },
  };
}
