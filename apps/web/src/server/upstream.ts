import { Pool } from 'undici';

/**
 * Keep-alive connection pools to the core API and the telemetry service: a forwarded call reuses a
 * warm connection instead of paying a TCP handshake.
 */
export interface Upstreams {
  core: Pool;
  coreUrl: string;
  telemetry: Pool;
  telemetryUrl: string;
  close(): Promise<void>;
}

export function createUpstreams(coreUrl: string, telemetryUrl: string): Upstreams {
  const opts = { connections: 128, pipelining: 1, keepAliveTimeout: 30_000, headersTimeout: 60_000, bodyTimeout: 0 };
  const core = new Pool(new URL(coreUrl).origin, opts);
  const telemetry = new Pool(new URL(telemetryUrl).origin, opts);
  return {
    core,
    coreUrl,
    telemetry,
    telemetryUrl,
    async close() {
      await Promise.all([core.close(), telemetry.close()]);
    },
  };
}
