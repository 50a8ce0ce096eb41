import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import { buildComposerService } from './app.ts';
import { composerConfigFromEnv } from './config.ts';

/**
 * The composer inside the single process of the embedded default (architecture section 1): the runtime's
 * database (each transaction switches to app_composer), the asset folder under DATA_DIR and local
 * HLS delivery, on COMPOSER_PORT (production: apps/composer/src/main.ts).
 */
export const composerCompanion = {
  name: 'Composer',
  async start(rt: { db: Database; logger: Logger }): Promise<{ url?: string; close(): Promise<void> }> {
    const config = composerConfigFromEnv();
    const svc = await buildComposerService(config, { db: rt.db, logger: rt.logger });
    const url = await svc.app.listen({ host: config.host, port: config.port });
    return { url, close: () => svc.close() };
  },
};
