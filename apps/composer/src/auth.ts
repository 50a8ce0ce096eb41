import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { errors } from '@clinic/http-kit';

/**
 * Service-to-service authentication of the composer (the spec shows none; docs/composer.md).
 *
 *   Authorization: Composer-HMAC t=<unix seconds>, sig=<hex>
 *   sig = HMAC-SHA256(secret, "<t>\n<METHOD>\n<path>\n<hex SHA-256 of the raw body>")
 *
 * A signature, not the secret itself, travels: a logged header cannot be replayed after the skew
 * window or against another path or body, and the secret never leaves the caller. Several secrets
 * verify at once, so a rotation adds the new one everywhere, moves the callers, then drops the old.
 */
export const AUTH_SCHEME = 'Composer-HMAC';

function payload(t: number, method: string, path: string, bodyHash: string): string {
  return `${t}\n${method.toUpperCase()}\n${path}\n${bodyHash}`;
}

/** The hex SHA-256 of a body, as the signature covers it (also computed piece by piece as a body arrives). */
export function bodyHash(body: Buffer | string): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The Authorization header value for a request (used by the core API, the CLI, tests and benches). */
export function signRequest(secret: string, method: string, path: string, body: Buffer | string, now = Date.now()): string {
  const t = Math.floor(now / 1000);
  const sig = createHmac('sha256', secret)
    .update(payload(t, method, path, bodyHash(body)))
    .digest('hex');
  return `${AUTH_SCHEME} t=${t}, sig=${sig}`;
}

const HEADER = /^Composer-HMAC t=(\d{1,12}), ?sig=([0-9a-f]{64})$/;

/** A well-formed, fresh Authorization header, not yet checked against a secret. */
export interface SignatureClaim {
  t: number;
  sig: Buffer;
}

/**
 * The first half of the check, which needs no body: throws 401 unless the header has the scheme's
 * shape and a timestamp within the skew window. A caller without one is refused before its body is read.
 */
export function readSignatureHeader(header: string | undefined, maxSkewSeconds: number, now = Date.now()): SignatureClaim {
  const m = header ? HEADER.exec(header) : null;
  if (!m) throw errors.unauthorized(`Sign the request: Authorization: ${AUTH_SCHEME} t=<unix seconds>, sig=<hex HMAC-SHA256>.`);
  const t = Number(m[1]);
  if (Math.abs(now / 1000 - t) > maxSkewSeconds) throw errors.unauthorized('The request signature has expired or its clock is off.');
  return { t, sig: Buffer.from(m[2]!, 'hex') };
}

/**
 * The second half: throws 401 unless one of the secrets signed this method, path and body hash.
 * Every secret is compared (constant time each), so the timing does not tell which one matched or
 * how far it got.
 */
export function verifySignature(
  secrets: readonly string[],
  claim: SignatureClaim,
  req: { method: string; path: string; bodyHash: string },
): void {
  const text = payload(claim.t, req.method, req.path, req.bodyHash);
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(text).digest();
    if (timingSafeEqual(expected, claim.sig)) ok = true;
  }
  if (!ok) throw errors.unauthorized('The request signature does not verify.');
}
