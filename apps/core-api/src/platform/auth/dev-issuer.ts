import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
} from 'jose';

/**
 * The development issuer of the embedded default: an RS256 key generated into the data folder on
 * first use, so `npm run -s token -- <email>` and the server agree without any network. Never used when
 * NODE_ENV=production (config refuses it).
 */
export interface DevIssuer {
  issuer: string;
  /**
   * Every issuer the API accepts tokens of: `issuer` (the CLI's tokens) and, once it listens, the
   * development OpenID provider's URL. Both sign with this one key.
   */
  acceptedIssuers: string[];
  audience: string;
  /** The private key, for the development OpenID provider (never leaves the process). */
  privateJwk: JWK;
  jwks: JSONWebKeySet;
  keys: JWTVerifyGetKey;
  sign(email: string, opts?: { expiresInSeconds?: number; subject?: string }): Promise<string>;
}

interface StoredKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

async function newKey(): Promise<StoredKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  return {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  };
}

/** Reads the key of `dataDir`, creating it once (two processes racing both end up with the winner's key). */
async function loadOrCreateKey(dataDir: string): Promise<StoredKey> {
  const file = join(dataDir, 'dev-issuer-key.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as StoredKey;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dataDir, { recursive: true });
  const key = await newKey();
  try {
    await writeFile(file, JSON.stringify(key), { flag: 'wx', mode: 0o600 });
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return JSON.parse(await readFile(file, 'utf8')) as StoredKey;
  }
}

/** A stable subject per email, so the same email always signs in as the same identity. */
export function devSubject(email: string): string {
  return `dev_${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 24)}`;
}

export async function createDevIssuer(opts: { dataDir: string | null; issuer: string; audience: string }): Promise<DevIssuer> {
  const stored = opts.dataDir ? await loadOrCreateKey(opts.dataDir) : await newKey();
  const privateKey = await importJWK(stored.privateJwk, 'RS256');
  const jwks: JSONWebKeySet = { keys: [stored.publicJwk] };
  return {
    issuer: opts.issuer,
    acceptedIssuers: [opts.issuer],
    audience: opts.audience,
    privateJwk: stored.privateJwk,
    jwks,
    keys: createLocalJWKSet(jwks),
    async sign(email, signOpts = {}) {
      const normalized = email.trim().toLowerCase();
      return new SignJWT({ email: normalized })
        .setProtectedHeader({ alg: 'RS256', kid: stored.kid, typ: 'JWT' })
        .setIssuer(opts.issuer)
        .setAudience(opts.audience)
        .setSubject(signOpts.subject ?? devSubject(normalized))
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + (signOpts.expiresInSeconds ?? 12 * 3600))
        .sign(privateKey);
    },
  };
}
