import type { IncomingMessage } from 'node:http';
import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * Query parameters that carry a credential somewhere in the platform or in what it talks to (signed
 * download URLs, OAuth callbacks, pre-signed S3 URLs). Their values never reach a log line.
 */
const SECRET_QUERY_PARAM =
  /^(token|access_token|id_token|refresh_token|code|signature|sig|x-amz-signature|x-amz-credential|x-amz-security-token|key|api_key|apikey|secret|password)$/i;

/**
 * Path segments that are themselves the credential (a secret URL that a calendar app subscribes to
 * cannot carry a header): the segment after `calendar-feeds/` (however the path is spelt), the
 * signature of a document download path (`public/documents/<id>/<expires>/<signature>/<name>`), and
 * anything shaped like a feed token wherever it stands. Replaced by [redacted].
 */
const SECRET_PATH_SEGMENT: [RegExp, string][] = [
  [/((?:^|\/)calendar(?:-|%2d)feeds\/+)[^/?#]+/gi, '$1[redacted]'],
  [/((?:^|\/)public\/+documents\/+[^/?#]+\/+[^/?#]+\/+)[^/?#]+/gi, '$1[redacted]'],
  [/calfeed_[A-Za-z0-9_%.-]*/g, '[redacted]'],
];

/** The URL with path credentials and the values of credential-like query parameters replaced; the rest as it came. */
export function redactUrl(raw: string): string {
  let url = raw;
  for (const [re, by] of SECRET_PATH_SEGMENT) url = url.replace(re, by);
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A badly encoded name is logged as it came; it cannot match a secret's name anyway.
      }
      return eq >= 0 && SECRET_QUERY_PARAM.test(decoded) ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

/** Log paths that hold credentials in any service: request headers and secrets inside logged objects. */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-control-secret"]',
  'headers.authorization',
  '*.secret',
  '*.secretKey',
  '*.secretAccessKey',
  '*.password',
];

/** Fastify's request serializer, with the URL's credential-like query parameters redacted. */
function requestSerializer(req: IncomingMessage & { ip?: string; host?: string; socket?: { remotePort?: number } }) {
  return {
    method: req.method,
    url: redactUrl(req.url ?? ''),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * The pino logger of every service: one place that decides what never reaches a log (credentials in
 * headers, bodies and query strings). `destination` is for tests that read the lines.
 */
export function createServiceLogger(opts: { level: string }, destination?: DestinationStream): Logger {
  const options = {
    level: opts.level,
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    serializers: { req: requestSerializer },
  };
  return destination ? pino(options, destination) : pino(options);
}
