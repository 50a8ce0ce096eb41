import {
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
} from 'jose';
import { createHash } from 'node:crypto';
import { SESSION_TOKEN_ALG, SESSION_TOKEN_AUDIENCE, SESSION_TOKEN_ISSUER } from '@clinic/telemetry';
import type { Config } from '../../config.ts';

/*
 * The core API's signer of exercise-session tokens (docs/telemetry.md "Session token"): Ed25519, the
 * private key from TELEMETRY_SIGNING_KEY (every instance the same) or generated at start outside
 * production. The public half is served at GET /v1/public/telemetry/jwks.json. The same key signs
 * replay download URLs (audience clinic-replay), so no second secret is needed.
 */
export interface SessionSigner {
  jwks: JSONWebKeySet;
  keys: JWTVerifyGetKey;
  sign(c: { userId: string; sessionId: string; orgId: string; exerciseId: string }): Promise<{ token: string; expiresAt: Date }>;
  signReplay(sessionId: string): Promise<{ token: string; expiresAt: Date }>;
  /** The session id of a valid replay token, or null. */
  verifyReplay(token: string): Promise<string | null>;
}

const REPLAY_AUDIENCE = 'clinic-replay';
const signers = new WeakMap<Config, Promise<SessionSigner>>();

async function build(config: Config): Promise<SessionSigner> {
  let privateJwk: JWK;
  if (config.telemetry.signingKey) {
    privateJwk = JSON.parse(config.telemetry.signingKey) as JWK;
  } else {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    privateJwk = await exportJWK(privateKey);
  }
  const key = await importJWK({ ...privateJwk, alg: SESSION_TOKEN_ALG }, SESSION_TOKEN_ALG);
  const { d: _d, ...pub } = privateJwk;
  const kid = createHash('sha256')
    .update(JSON.stringify({ crv: pub.crv, kty: pub.kty, x: pub.x }))
    .digest('base64url')
    .slice(0, 16);
  const jwks: JSONWebKeySet = { keys: [{ ...pub, kid, alg: SESSION_TOKEN_ALG, use: 'sig' }] };
  const keys = createLocalJWKSet(jwks);
  const ttl = config.telemetry.sessionTokenTtlSeconds;
  return {
    jwks,
    keys,
    async sign(c) {
      const exp = Math.floor(Date.now() / 1000) + ttl;
      const token = await new SignJWT({ sid: c.sessionId, org: c.orgId, exercise: c.exerciseId })
        .setProtectedHeader({ alg: SESSION_TOKEN_ALG, kid, typ: 'JWT' })
        .setIssuer(SESSION_TOKEN_ISSUER)
        .setAudience(SESSION_TOKEN_AUDIENCE)
        .setSubject(c.userId)
        .setIssuedAt()
        .setExpirationTime(exp)
        .sign(key);
      return { token, expiresAt: new Date(exp * 1000) };
    },
    async signReplay(sessionId) {
      const exp = Math.floor(Date.now() / 1000) + config.telemetry.replayUrlTtlSeconds;
      const token = await new SignJWT({ sid: sessionId })
        .setProtectedHeader({ alg: SESSION_TOKEN_ALG, kid })
        .setIssuer(SESSION_TOKEN_ISSUER)
        .setAudience(REPLAY_AUDIENCE)
        .setExpirationTime(exp)
        .sign(key);
      return { token, expiresAt: new Date(exp * 1000) };
    },
    async verifyReplay(token) {
      try {
        const { payload } = await jwtVerify(token, keys, {
          issuer: SESSION_TOKEN_ISSUER,
          audience: REPLAY_AUDIENCE,
          algorithms: [SESSION_TOKEN_ALG],
        });
        return typeof payload.sid === 'string' ? payload.sid : null;
      } catch {
        return null;
      }
    },
  };
}

/** One signer per configuration (runtime): the embedded telemetry companion verifies with the same keys. */
export function sessionSigner(config: Config): Promise<SessionSigner> {
  let s = signers.get(config);
  if (!s) {
    s = build(config);
    signers.set(config, s);
  }
  return s;
}
