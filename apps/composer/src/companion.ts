import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import { buildComposerService } from './app.ts';
import type { ComposerConfig } from './config.ts';

/**
 * The composer inside the single process of the embedded default (architecture section 1): the runtime's
 * database (each transaction switches to app_composer), the asset folder under DATA_DIR and local
 * HLS delivery, on COMPOSER_PORT (production: apps/composer/src/main.ts). The configuration is parsed by
 * the entry point that starts it (the core API's main.ts), as the composer's own main.ts does.
 */
export const composerCompanion = (config: ComposerConfig) => ({
  name: 'Composer',
  async start(rt: { db: Database; logger: Logger }): Promise<{ url?: string; close(): Promise<void> }> {
    const svc = await buildComposerService(config, { db: rt.db, logger: rt.logger });
    const url = await svc.app.listen({ host: config.host, port: config.port });
    return { url, close: () => svc.close() };
  },
});
