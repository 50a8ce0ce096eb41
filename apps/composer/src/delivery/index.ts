import type { Logger } from 'pino';
import type { ComposerConfig } from '../config.ts';
import { createLocalHlsProvider } from './local-hls.ts';
import { createStreamProvider } from './stream.ts';

/** The provider the configuration names: local HLS (embedded default) or a Stream-compatible API. */
export function createDelivery(config: ComposerConfig, logger: Logger) {
  const tools = { ffmpeg: config.ffmpeg, ffprobe: config.ffprobe };
  return config.delivery.kind === 'local'
    ? createLocalHlsProvider({ root: config.delivery.root, publicUrl: config.publicUrl, tools, logger })
    : createStreamProvider(config.delivery);
}
