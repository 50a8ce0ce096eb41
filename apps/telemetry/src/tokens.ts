import { createJwtVerifier, errors, type TokenVerifier, isUuid } from '@clinic/http-kit';
import type { JWTVerifyGetKey } from 'jose';

/*
 * Exercise-session tokens (docs/telemetry.md, docs/decisions.md "Telemetry"): EdDSA (Ed25519) JWTs signed by
 * the core API when a patient starts a session, verified here against the core's JWKS
 * (GET /v1/public/telemetry/jwks.json). Claims: iss, aud, sub (the patient's user id), sid (session),
 * org, exercise, iat, exp.
 */
export const SESSION_TOKEN_ISSUER = 'clinic-platform-core';
export const SESSION_TOKEN_AUDIENCE = 'clinic-telemetry';
export const SESSION_TOKEN_ALG = 'EdDSA';

export interface SessionClaims {
  userId: string;
  sessionId: string;
  orgId: string;
  exerciseId: string;
}

export interface SessionTokenVerifier {
  verify(token: string): Promise<SessionClaims>;
}

/** Verified tokens are cached by hash until they expire (http-kit), so a batch per second costs a hash. */
export function createSessionTokenVerifier(keys: JWTVerifyGetKey): SessionTokenVerifier {
  const inner: TokenVerifier = createJwtVerifier({
    keys,
    issuer: SESSION_TOKEN_ISSUER,
    audience: SESSION_TOKEN_AUDIENCE,
    algorithms: [SESSION_TOKEN_ALG],
  });
  return {
    async verify(token) {
      const v = await inner.verify(token);
      const { sid, org, exercise } = v.claims as Record<string, unknown>;
      if (![v.subject, sid, org, exercise].every((x) => isUuid(x))) {
        throw errors.unauthorized('This is not an exercise-session token (sid, org and exercise claims are required).');
      }
      return { userId: v.subject, sessionId: sid as string, orgId: org as string, exerciseId: exercise as string };
    },
  };
}
