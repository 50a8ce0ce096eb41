import { createHash } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { LRUCache } from 'lru-cache';
import { AppError, errors } from './errors.ts';
import { findUnstorableText } from './text-guard.ts';

export interface VerifiedToken {
  subject: string;
  email: string | null;
  expiresAt: number;
  claims: JWTPayload;
}

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
}

export interface JwtVerifierOptions {
  /** A local key set (development issuer) or jose's cached remote JWKS. */
  keys: JWTVerifyGetKey;
  /** One issuer, or a list read at each verification (a list may grow: the development provider joins once it listens). */
  issuer: string | string[];
  audience: string | null;
  /** Asymmetric algorithms only: `none` and HMAC are never accepted. */
  algorithms?: string[];
  cacheSize?: number;
  clockToleranceSeconds?: number;
}

const DEFAULT_ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'];

/** Thrown by the key look-up when the key set itself cannot be had: the provider, not the token, failed. */
class KeySetUnavailable extends Error {}

/**
 * Failures of fetching the remote JWKS (network error, time-out, non-200, not JSON, not a key set)
 * say nothing about the token: answering 401 would tell clients to sign the user out, and letting
 * the raw error through would be a 500. They become 503 identity_provider_unavailable instead.
 * A key set that was fetched but has no key for the token (JWKSNoMatchingKey) stays a 401.
 */
function isKeySetFailure(err: unknown): boolean {
  if (!(err instanceof joseErrors.JOSEError)) return true;
  return err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid || err.code === 'ERR_JOSE_GENERIC';
}

function guardKeys(keys: JWTVerifyGetKey): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await keys(header, token);
    } catch (err) {
      if (isKeySetFailure(err)) throw new KeySetUnavailable('key set unavailable', { cause: err });
      throw err;
    }
  };
}

/**
 * Verifies bearer tokens with jose. Verified tokens are cached by hash until they expire, so a repeat
 * request costs a hash and a map look-up; the remote JWKS is fetched by jose only on an unknown kid.
 */
export function createJwtVerifier(opts: JwtVerifierOptions): TokenVerifier {
  const cache = new LRUCache<string, VerifiedToken>({ max: opts.cacheSize ?? 10_000 });
  const keys = guardKeys(opts.keys);
  return {
    async verify(token) {
      const key = createHash('sha256').update(token).digest('base64url');
      const hit = cache.get(key);
      const now = Date.now() / 1000;
      if (hit && hit.expiresAt > now) return hit;
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: opts.issuer,
          ...(opts.audience ? { audience: opts.audience } : {}),
          algorithms: opts.algorithms ?? DEFAULT_ALGS,
          clockTolerance: opts.clockToleranceSeconds ?? 5,
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (err) {
        if (err instanceof joseErrors.JOSEError) throw errors.unauthorized(`The bearer token is not valid (${err.code}).`);
        if (err instanceof KeySetUnavailable) {
          // The cause (which host failed, how) goes to the log with the 5xx, never to the client.
          const unavailable = new AppError(
            503,
            'identity_provider_unavailable',
            'Could not load the signing keys of the identity provider; retry in a moment.',
            {
              headers: { 'retry-after': '5' },
            },
          );
          throw Object.assign(unavailable, { cause: err.cause });
        }
        throw err;
      }
      // A signed token is still input: a claim no column can store (NUL, unpaired surrogates) makes it unusable.
      if (findUnstorableText(payload))
        throw errors.unauthorized('The bearer token carries a claim with NUL characters or unpaired surrogates.');
      const verified: VerifiedToken = {
        subject: String(payload.sub),
        email: typeof payload.email === 'string' ? payload.email : null,
        expiresAt: payload.exp ?? now,
        claims: payload,
      };
      cache.set(key, verified, { ttl: Math.max(1, (verified.expiresAt - now) * 1000) });
      return verified;
    },
  };
}

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+([A-Za-z0-9\-_.~+/]+=*)\s*$/i.exec(header);
  return m?.[1] ?? null;
}
