import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type HostResolver, type HostTarget, HostLookupError, normalizeHost } from './hosts.ts';
import { errorPage } from './html.ts';

/** What the request's host stands for, resolved once per request before any route runs. */
export interface Site {
  hostname: string;
  /** scheme://host[:port] as the browser sees it: the page's own origin. */
  origin: string;
  target: HostTarget;
}

declare module 'fastify' {
  interface FastifyRequest {
    site: Site | null;
  }
}

/** Paths that answer the same on every host: the service's own health and description. */
const HOSTLESS = /^\/(health|docs|openapi\.json)(\/|$|\?)/;

export const isApiPath = (url: string) => url.startsWith('/v1/') || url.startsWith('/telemetry/') || url.startsWith('/auth/session');

function refuse(request: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string, title: string) {
  if (isApiPath(request.url)) return reply.status(status).type('application/json').send({ error: { code, message } });
  return reply.status(status).type('text/html; charset=utf-8').send(errorPage(title, message));
}

export function installSiteResolution(app: FastifyInstance, resolver: HostResolver): void {
  app.decorateRequest('site', null);
  app.addHook('onRequest', async (request, reply) => {
    if (HOSTLESS.test(request.url)) return;
    const hostname = normalizeHost(request.host);
    let target: HostTarget;
    try {
      target = await resolver.resolve(hostname, request.ip);
    } catch (err) {
      if (!(err instanceof HostLookupError)) throw err;
      request.log.warn({ err: err.message, host: hostname }, 'host look-up failed');
      if (err.retryAfter) reply.header('retry-after', err.retryAfter);
      return err.statusCode === 429
        ? refuse(request, reply, 429, 'rate_limited', 'Too many requests from your address; wait a minute and reload.', 'Too many requests')
        : refuse(request, reply, 503, 'service_unavailable', 'The clinic directory is not answering; reload in a moment.', 'Unavailable');
    }
    if (target.kind === 'unknown') {
      return refuse(
        request,
        reply,
        404,
        'organization_not_found',
        `No clinic is served at ${hostname || 'this address'}. Check the address, or ask the clinic for its booking link.`,
        'Clinic not found',
      );
    }
    request.site = { hostname, origin: `${request.protocol}://${request.host}`, target };
  });
}
