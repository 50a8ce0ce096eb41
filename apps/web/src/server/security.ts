import type { FastifyInstance } from 'fastify';

/**
 * The strict policy of the apps (the web contract): no inline script or style, nothing from elsewhere but
 * the origins that serve the exercise videos (`mediaOrigins`: the composer's HLS in development, the video
 * delivery provider in production), which hls.js fetches and the video element plays.
 */
export function contentSecurityPolicy(issuerOrigin: string | null, mediaOrigins: readonly string[] = []): string {
  const media = mediaOrigins.map((o) => ` ${o}`).join('');
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    `media-src 'self' blob:${media}`,
    `connect-src 'self'${media}`,
    "worker-src 'self' blob:",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
    // Sign-out ends with a redirect to the provider's end-session page: the form's target must allow it.
    `form-action 'self'${issuerOrigin ? ` ${issuerOrigin}` : ''}`,
  ].join('; ');
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every answer carries the security headers; every state-changing request must come from a page of
 * this very origin (CSRF): browsers send Origin on every cross-site and same-origin non-GET request, so a
 * missing or different Origin is refused (403 forbidden), whatever cookie rides along.
 */
export function installSecurity(
  app: FastifyInstance,
  opts: { issuerOrigin: () => string | null; mediaOrigins: () => readonly string[] },
): void {
  let cached: { issuer: string | null; policy: string } | null = null;
  const policy = () => {
    const issuer = opts.issuerOrigin();
    if (cached?.issuer !== issuer) cached = { issuer, policy: contentSecurityPolicy(issuer, opts.mediaOrigins()) };
    return cached.policy;
  };
  // Set as the request arrives, so every answer has them: errors, and streams written past Fastify's reply.
  app.addHook('onRequest', async (request, reply) => {
    // The API description page (swagger-ui) is the service's own tool, not an app page; it brings its own policy.
    if (!request.url.startsWith('/docs')) reply.header('content-security-policy', policy());
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'strict-origin-when-cross-origin');
    reply.header('x-frame-options', 'DENY');
    reply.header('cross-origin-opener-policy', 'same-origin');
  });
  app.addHook('onRequest', async (request, reply) => {
    if (SAFE_METHODS.has(request.method)) return;
    const origin = request.headers.origin;
    const own = `${request.protocol}://${request.host}`;
    if (origin !== own) {
      return reply
        .status(403)
        .type('application/json')
        .send({
          error: {
            code: 'forbidden',
            message: origin
              ? `Requests that change data must come from a page of ${own}, not ${origin}.`
              : 'Requests that change data must come from a page of this site (the Origin header is missing).',
          },
        });
    }
  });
}
