import { buildWebServer, deriveSecret, ensureFrontEndBuilt, type WebConfig } from '@clinic/web';
import { DEV_OIDC_SCOPE, startDevOidcProvider } from './auth/dev-oidc.ts';
import { DEMO_ADMIN, DEMO_SLUG } from './demo-clinic.ts';
import type { Runtime } from './runtime.ts';

/**
 * The web proxy inside `npm start` (embedded default), with the development OpenID provider beside it
 * unless OIDC_ISSUER_URL names another provider. The front end is built first when dist/ is missing or
 * older than its sources.
 */
export function webCompanion(
  web: WebConfig,
  coreUrl: () => string,
  telemetryUrl: () => string | undefined,
  composerUrl: () => string | undefined,
) {
  return {
    name: 'Web',
    async start(rt: Runtime): Promise<{ url?: string; banner?: string[]; close(): Promise<void> }> {
      if (!rt.devIssuer) throw new Error('the web companion runs with the development issuer only');
      const provider = web.oidc
        ? null
        : await startDevOidcProvider({
            config: rt.config,
            devIssuer: rt.devIssuer,
            host: rt.config.host,
            port: rt.config.devOidcPort,
            logger: rt.logger,
          });
      if (provider) {
        web.oidc = {
          issuerUrl: provider.issuer,
          clientId: provider.clientId,
          clientSecret: provider.clientSecret,
          scope: DEV_OIDC_SCOPE,
          extraAuthParams: {},
          endSession: true,
        };
        // Stable across restarts (sessions in Redis survive one); derived from the development key.
        web.sessionSecret = process.env.WEB_SESSION_SECRET || deriveSecret(JSON.stringify(rt.devIssuer.privateJwk.d));
      }
      if (!process.env.CORE_API_URL) web.coreApiUrl = coreUrl();
      const telemetry = telemetryUrl();
      if (!process.env.TELEMETRY_URL && telemetry) web.telemetryUrl = telemetry;
      // The portal plays the composer's HLS (its playback_hls_url) from the composer's own origin.
      const composer = composerUrl();
      if (!process.env.WEB_MEDIA_ORIGINS && composer) web.mediaOrigins = [new URL(composer).origin];
      if (web.buildOnStart) {
        await ensureFrontEndBuilt(web.distDir, (line) => process.stderr.write(`${line}\n`)).catch((err: Error) =>
          process.stderr.write(`Front-end build failed (the pages will say so): ${err.message}\n`),
        );
      }
      const server = await buildWebServer({ config: web, logger: rt.logger as never, redis: rt.redis });
      let url: string;
      try {
        url = await server.listen();
      } catch (err) {
        await provider?.close();
        throw err;
      }
      const port = new URL(url).port;
      const clinic = `http://${DEMO_SLUG}.${web.platformDomain}:${port}`;
      return {
        url,
        banner: [
          `  ${'Booking page'.padEnd(14)} ${clinic}/`,
          `  ${'Patient portal'.padEnd(14)} ${clinic}/portal`,
          `  ${'Clinic app'.padEnd(14)} ${clinic}/clinic   (staff: sign in as ${DEMO_ADMIN})`,
          `  ${'Console'.padEnd(14)} http://${web.platformDomain}:${port}/console   (superadmins only)`,
          ...(provider ? [`  ${'Sign-in'.padEnd(14)} ${provider.issuer}   (development OpenID provider: any email signs in)`] : []),
        ],
        async close() {
          await server.close();
          await provider?.close();
        },
      };
    },
  };
}
