import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
import { ForbiddenDestinationError, guardedLookup, urlProblem } from '../../platform/outgoing-url.ts';
import type { SignedDelivery } from './signing.ts';

/** What one attempt gave: the delivery log stores it (truncated body, error text, latency). */
export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

export interface WebhookSender {
  send(url: string, delivery: SignedDelivery): Promise<SendResult>;
  close(): Promise<void>;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Extra trusted CAs (PEM file), added to Node's bundle: a private CA, or the tests' self-signed receiver. */
  caFile: string | null;
  /** Response bytes kept for the log. */
  maxResponseBytes?: number;
}

/**
 * POSTs signed deliveries with undici over one keep-alive agent. Redirects are never followed (a 3xx is a
 * failed attempt), the whole exchange has one time-out (10 s by spec 8), and sockets connect only to
 * public addresses (platform/outgoing-url.ts) unless private networks are explicitly allowed.
 */
export function createWebhookSender(opts: SenderOptions): WebhookSender {
  const ca = opts.caFile ? [...rootCertificates, readFileSync(opts.caFile, 'utf8')] : undefined;
  const agent = new Agent({
    connect: { lookup: guardedLookup(opts.allowPrivateNetworks) as never, timeout: opts.timeoutMs, ...(ca ? { ca } : {}) },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connections: 64,
  });
  const max = opts.maxResponseBytes ?? 1024;

  return {
    async send(url, delivery) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const problem = urlProblem(url, opts.allowPrivateNetworks);
      if (problem) return { ok: false, statusCode: null, latencyMs: 0, error: `refused: the URL ${problem}`, responseBody: null };
      try {
        const res = await request(url, {
          method: 'POST',
          headers: delivery.headers,
          body: delivery.body,
          dispatcher: agent,
          signal: AbortSignal.timeout(opts.timeoutMs),
        });
        // Keep the head of the body for the log and drop the rest unread.
        let kept = Buffer.alloc(0);
        for await (const chunk of res.body) {
          kept = Buffer.concat([kept, chunk as Buffer]);
          if (kept.length >= max) break;
        }
        res.body.destroy();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        return {
          ok,
          statusCode: res.statusCode,
          latencyMs: elapsed(),
          error: ok ? null : `the endpoint answered ${res.statusCode}`,
          responseBody: kept.length ? kept.subarray(0, max).toString('utf8').replaceAll('\u0000', '') : null,
        };
      } catch (err) {
        const e = err as Error & { code?: string; cause?: Error };
        const cause = e.cause instanceof ForbiddenDestinationError ? e.cause : e;
        const timedOut =
          e.name === 'TimeoutError' ||
          e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
          e.code === 'UND_ERR_BODY_TIMEOUT' ||
          e.code === 'UND_ERR_CONNECT_TIMEOUT';
        const message = timedOut
          ? `no response within ${opts.timeoutMs} ms`
          : cause instanceof ForbiddenDestinationError
            ? `refused: ${cause.message}`
            : `${e.code ?? e.name}: ${cause.message}`;
        return { ok: false, statusCode: null, latencyMs: elapsed(), error: message.slice(0, 500), responseBody: null };
      }
    },
    close: () => agent.close(),
  };
}
