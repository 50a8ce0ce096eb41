import { buildTelemetryApp } from '@clinic/telemetry';
import { createSessionTokenVerifier } from '@clinic/telemetry';
import type { Runtime } from '../../platform/runtime.ts';
import { sessionSigner } from './token.ts';

/**
 * The telemetry service inside the single process of the embedded default (architecture section 1): the runtime's
 * database (its own role per transaction), identity verifier and asset store, and the session keys in
 * memory instead of the JWKS URL (production: apps/telemetry/src/main.ts).
 */
export const telemetryCompanion = {
  name: 'Telemetry',
  async start(rt: Runtime): Promise<{ url?: string; close(): Promise<void> }> {
    const signer = await sessionSigner(rt.config);
    const app = await buildTelemetryApp({
      db: rt.db,
      assets: rt.assets,
      logger: rt.logger,
      sessionTokens: createSessionTokenVerifier(signer.keys),
      userTokens: rt.verifier,
      redis: rt.redis,
      redisKeyPrefix: rt.config.redisKeyPrefix,
    });
    const url = await app.listen({ host: rt.config.host, port: rt.config.telemetry.port });
    return { url, close: () => app.close() };
  },
};
