import { randomUUID } from 'node:crypto';
import { edgeServerOptions, installApiDocs, installErrorHandling, installHealthRoute, installValidators } from '@clinic/http-kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { installAuthRoutes } from './auth.ts';
import type { WebConfig } from './config.ts';
import { installConsole } from './console.ts';
import { installForwarding } from './forward.ts';
import { createHostResolver, type HostResolver } from './hosts.ts';
import { createOidcClient, type OidcClient } from './oidc.ts';
import { installPages, notFound } from './pages.ts';
import { installSecurity } from './security.ts';
import { createSessions } from './sessions.ts';
import { installSiteResolution } from './site.ts';
import { createSealedStore, type SealedStore } from './store.ts';
import { createUpstreams } from './upstream.ts';

export interface WebDeps {
  config: WebConfig;
  logger: FastifyBaseLogger;
  /** A Redis client to share (the embedded runtime's); otherwise one is opened from config.redisUrl. */
  redis?: Redis | null;
}

export interface WebServer {
  app: FastifyInstance;
  hosts: HostResolver;
  store: SealedStore;
  /** Listens, then fixes the platform origin from the port when WEB_PUBLIC_URL did not set it. Returns the URL. */
  listen(): Promise<string>;
  /** The platform host's origin (OIDC redirect URI), known once listening. */
  platformOrigin(): string;
  close(): Promise<void>;
}

/** The front-end proxy (architecture section 8): host -> organization, sign-in, forwarding, the built apps. */
export async function buildWebServer(deps: WebDeps): Promise<WebServer> {
  const { config } = deps;
  const app = Fastify({
    loggerInstance: deps.logger.child({ service: 'web' }) as FastifyBaseLogger,
    trustProxy: config.trustProxy,
    bodyLimit: 65_536,
    genReqId: () => randomUUID(),
    requestTimeout: 60_000,
    ...edgeServerOptions,
    routerOptions: { ignoreTrailingSlash: true },
  });
  installValidators(app);
  installErrorHandling(app, { notFound });
  let ownRedis: Redis | null = null;
  let redis = deps.redis ?? null;
  if (!redis && config.redisUrl) {
    const { Redis } = await import('ioredis');
    ownRedis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2 });
    ownRedis.on('error', (err: Error) => deps.logger.warn({ err: err.message }, 'redis error'));
    redis = ownRedis;
  }
  const store = createSealedStore({
    secret: config.sessionSecret,
    redis: redis ? { client: redis, keyPrefix: config.redisKeyPrefix, owned: ownRedis !== null } : null,
  });
  const oidc: OidcClient | null = config.oidc ? createOidcClient(config.oidc) : null;
  const sessions = createSessions({
    store,
    oidc: () => oidc,
    idleSeconds: config.session.idleSeconds,
    maxSeconds: config.session.maxSeconds,
    log: deps.logger,
  });
  const upstreams = createUpstreams(config.coreApiUrl, config.telemetryUrl);
  const hosts = createHostResolver({
    platformDomain: config.platformDomain,
    core: upstreams.core,
    ttlSeconds: config.hostCache.ttlSeconds,
    negativeTtlSeconds: config.hostCache.negativeTtlSeconds,
    max: config.hostCache.max,
  });
  let origin = config.platformOrigin;
  const platformOrigin = () => origin ?? `http://${config.platformDomain}:${config.port}`;

  await installApiDocs(app, {
    title: 'Clinic Platform web proxy',
    version: '0.1.0',
    description:
      'The front-end proxy (docs/architecture.md): on a clinic host (`<slug>.PLATFORM_DOMAIN` or a verified custom domain) it serves ' +
      'the booking page `/` and the patient portal `/portal`, forwards same-origin `/v1/...` to the core API with the ' +
      "host's organization and the session's bearer token, and `/telemetry/v1/...` to the telemetry service. Sign-in is " +
      'OpenID Connect run by the proxy (`/auth/...`); the browser holds only an opaque httpOnly session cookie.',
  });
  installHealthRoute(app);
  const issuerOrigin = config.oidc ? new URL(config.oidc.issuerUrl).origin : null;
  installSecurity(app, { issuerOrigin: () => issuerOrigin, mediaOrigins: () => config.mediaOrigins });
  installSiteResolution(app, hosts);
  // Sign-out may be a plain HTML form: its fields arrive url-encoded.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_req, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  );
  installAuthRoutes(app, { store, sessions, oidc: () => oidc, platformOrigin });
  installForwarding(app, { upstreams, sessions, bodyLimitBytes: config.bodyLimitBytes });
  installPages(app, { distDir: config.distDir, platformDomain: config.platformDomain, sessions });
  installConsole(app, { distDir: config.distDir, platformDomain: config.platformDomain, sessions, upstreams });

  return {
    app,
    hosts,
    store,
    platformOrigin,
    async listen() {
      const url = await app.listen({ host: config.host, port: config.port });
      if (!origin) origin = `http://${config.platformDomain}:${new URL(url).port}`;
      return url;
    },
    async close() {
      await app.close();
      await upstreams.close();
      await store.close();
    },
  };
}
