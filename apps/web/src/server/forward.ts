import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher, Pool } from 'undici';
import type { Sessions } from './sessions.ts';
import type { Upstreams } from './upstream.ts';

/** Hop-by-hop headers (RFC 9110 7.6.1) and what the proxy decides itself: never copied from the client. */
const DROPPED_REQUEST = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'cookie',
  'authorization',
  'x-organization-id',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'forwarded',
  'x-real-ip',
  'origin',
  'referer',
]);
const DROPPED_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'trailer', 'upgrade', 'set-cookie', 'content-length']);

/** Public routes whose `organization` query parameter chooses the clinic. */
const ORGANIZATION_QUERY_PATHS = /^\/v1\/public\/(services|specialists|locations|availability)(\/|$)/;

/** Telemetry paths authenticated by the exercise-session token the page got from the API, not by the user's token. */
const SESSION_TOKEN_PATHS = /^\/v1\/(pose\/|sessions\/)/;

function upstreamHeaders(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers as IncomingHttpHeaders)) {
    if (value === undefined || DROPPED_REQUEST.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // The API's per-address limits (resolve, holds, public routes) count the visitor; the API trusts this
  // header only from the proxy's addresses (its TRUST_PROXY).
  out['x-forwarded-for'] = request.ip;
  out['x-forwarded-proto'] = request.protocol;
  return out;
}

/**
 * Same-origin `/v1/...` to the core API and `/telemetry/v1/...` to the telemetry service. The client's
 * credentials and organization are never trusted: the organization comes from the host, the bearer
 * token from the server-side session. Bodies are buffered up to the limit (413 above); answers are
 * streamed, so the hold's event stream (SSE) flows through as it is written.
 */
export function installForwarding(app: FastifyInstance, opts: { upstreams: Upstreams; sessions: Sessions; bodyLimitBytes: number }): void {
  async function forward(request: FastifyRequest, reply: FastifyReply, pool: Pool, path: string, telemetry: boolean) {
    const site = request.site!;
    const headers = upstreamHeaders(request);
    const url = new URL(path, 'http://upstream');
    if (site.target.kind === 'clinic') {
      const org = site.target.organization;
      headers['x-organization-id'] = org.id;
      // The public directory and availability name their organization in the query: on a clinic host it is
      // always this host's. (Holds and bookings are reached by their own ids and secrets.)
      if (ORGANIZATION_QUERY_PATHS.test(url.pathname)) url.searchParams.set('organization', org.id);
    }
    const ref = await opts.sessions.load(request, site.hostname);
    const clientAuth = request.headers.authorization;
    if (telemetry && SESSION_TOKEN_PATHS.test(url.pathname) && clientAuth) {
      headers.authorization = clientAuth;
    } else if (ref) {
      const token = await opts.sessions.accessToken(ref);
      if (token) headers.authorization = `Bearer ${token}`;
    }
    const body = request.body as Buffer | undefined;
    const abort = new AbortController();
    // The visitor went away (closed the tab, the hold stream): stop the upstream request too.
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    let res: Dispatcher.ResponseData;
    try {
      res = await pool.request({
        method: request.method as Dispatcher.HttpMethod,
        path: `${url.pathname}${url.search}`,
        headers,
        body: body && body.length ? body : null,
        signal: abort.signal,
      });
    } catch (err) {
      if (abort.signal.aborted) return reply;
      request.log.warn({ err: (err as Error).message, upstream: telemetry ? 'telemetry' : 'core' }, 'upstream unreachable');
      return reply
        .status(502)
        .send({ error: { code: 'upstream_unavailable', message: 'The service behind this page is not answering; retry in a moment.' } });
    }
    const answer: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !DROPPED_RESPONSE.has(name)) answer[name] = value;
    }
    // Small answers of known length are sent in one piece (cheaper than piping a stream).
    const length = Number(res.headers['content-length']);
    if (Number.isFinite(length) && length <= 262_144) {
      const bytes = Buffer.from(await res.body.arrayBuffer());
      return reply.status(res.statusCode).headers(answer).send(bytes);
    }
    // The rest (the hold's event stream above all) is relayed as it comes, written past Fastify's reply: a
    // visitor who closes the tab ends the relay and the upstream request quietly, not as a logged error.
    reply.hijack();
    reply.raw.writeHead(res.statusCode, { ...(reply.getHeaders() as Record<string, string>), ...answer });
    pipeline(res.body, reply.raw).catch(() => {
      abort.abort();
    });
    return reply;
  }

  app.register(async (scope) => {
    // Bodies pass through as bytes, whatever their type (JSON, multipart uploads): the API parses them.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.bodyLimitBytes }, (_req, payload, done) => done(null, payload));
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
    scope.route({
      method: [...methods],
      url: '/v1/*',
      schema: { hide: true },
      handler: (request, reply) => forward(request, reply, opts.upstreams.core, request.url, false),
    });
    scope.route({
      method: [...methods],
      url: '/telemetry/v1/*',
      schema: { hide: true },
      handler: (request, reply) => forward(request, reply, opts.upstreams.telemetry, request.url.slice('/telemetry'.length), true),
    });
  });
}
