import { createJwtVerifier, type TokenVerifier, type VerifiedToken } from '@clinic/http-kit';
import { createRemoteJWKSet } from 'jose';
import type { Logger } from 'pino';
import type { ProviderResolver, ResolvedProvider } from '../../modules/providers/resolver.ts';
import { clerkProfileSource, type ProfileSource } from './profile-source.ts';

/*
 * Token verification and profile look-ups through the identity row of the platform providers (spec 2.11,
 * 3.3, 5 "credential rotation"), resolved like email and storage: per instance, cached for
 * PROVIDER_CACHE_TTL_SECONDS (5 minutes), so a PATCH of the row reaches every instance within that bound.
 * While no identity row is active the environment's settings (AUTH_* or the development issuer) apply:
 * they are the bootstrap of a new deployment, not a second provider.
 */

const DEFAULT_API = 'https://api.clerk.com';

/** The frontend API host a Clerk publishable key names: `pk_<env>_` + base64("<host>$"). Null if it names none. */
export function frontendApiOf(publishableKey: string): string | null {
  const m = /^pk_(test|live)_(.+)$/.exec(publishableKey);
  if (!m) return null;
  const decoded = Buffer.from(m[2]!, 'base64').toString('utf8');
  if (!decoded.endsWith('$')) return null;
  const host = decoded.slice(0, -1);
  return /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:\d{1,5})?$/i.test(host) ? host : null;
}

/** What a row's provider gives a request: a verifier and where the profile of its tokens comes from. */
interface IdentityParts {
  verifier: TokenVerifier;
  profile: ProfileSource;
}

/**
 * The identity row (provider `clerk`): tokens are session tokens of the instance its publishable key names
 * (issuer `https://<frontend API>`), signed by the keys its Backend API lists at `/v1/jwks` for the secret key;
 * the profile (primary email) comes from `/v1/users/<sub>` with the same key. No audience: Clerk puts none in
 * its session tokens.
 */
function partsOfRow(p: ResolvedProvider, jwksCooldownSeconds: number): IdentityParts {
  const creds = p.credentials ?? {};
  const config = p.row?.config ?? {};
  const api = (typeof config.endpoint_url === 'string' && config.endpoint_url) || DEFAULT_API;
  const host = frontendApiOf(creds.publishable_key ?? '');
  const secret = creds.secret_key ?? '';
  const keys = createRemoteJWKSet(new URL('/v1/jwks', api), {
    headers: { authorization: `Bearer ${secret}` },
    cooldownDuration: jwksCooldownSeconds * 1000,
    timeoutDuration: 5000,
  });
  return {
    // A key that names no instance (stored before the check existed) accepts no token: issuer never matches.
    verifier: createJwtVerifier({ keys, issuer: host ? `https://${host}` : 'urn:clinic:unusable-publishable-key', audience: null }),
    profile: clerkProfileSource(api, secret),
  };
}

export interface RotatingIdentity {
  verifier: TokenVerifier;
  profile: ProfileSource;
}

export interface RotatingIdentityDeps {
  resolver: ProviderResolver;
  /** The environment's verifier and profile source: used while no identity row is active. */
  bootstrap: IdentityParts;
  /** After this instance sees a new provider, tokens of the one before still verify for this long (0: never). */
  graceMs: number;
  jwksCooldownSeconds: number;
  logger: Logger;
  now?: () => number;
}

interface Current {
  version: string;
  parts: IdentityParts;
}

/**
 * The verifier and profile source of the running service. Each verification asks the resolver (a map
 * look-up while its entry is fresh) which provider is current; a new row version gets a new verifier. The
 * provider it replaces keeps verifying for `graceMs` counted from when this instance saw the change, and
 * only for tokens the current one refuses or cannot check, so sessions in flight survive the switch
 * (docs/decisions.md).
 */
export function createRotatingIdentity(deps: RotatingIdentityDeps): RotatingIdentity {
  const now = deps.now ?? Date.now;
  let current: Current | null = null;
  let previous: (Current & { until: number }) | null = null;
  // Which provider verified a token: its profile is looked up at the same provider.
  const verifiedBy = new WeakMap<VerifiedToken, ProfileSource>();

  async function currentParts(): Promise<{ current: Current; previous: Current | null }> {
    const resolved = await deps.resolver.resolve('auth', null, { acceptFailing: true });
    const version = resolved.row ? `${resolved.row.id}@${new Date(resolved.row.updated_at).toISOString()}` : 'environment';
    if (!current || current.version !== version) {
      const parts = resolved.row ? partsOfRow(resolved, deps.jwksCooldownSeconds) : deps.bootstrap;
      if (current && deps.graceMs > 0) previous = { ...current, until: now() + deps.graceMs };
      else previous = null;
      deps.logger.info(
        {
          identity: resolved.row ? { provider: resolved.row.provider, id: resolved.row.id } : 'environment',
          graceMs: previous ? deps.graceMs : 0,
        },
        'identity provider in use',
      );
      current = { version, parts };
    }
    if (previous && now() >= previous.until) previous = null;
    return { current, previous };
  }

  return {
    verifier: {
      async verify(token) {
        const { current: cur, previous: prev } = await currentParts();
        try {
          const v = await cur.parts.verifier.verify(token);
          verifiedBy.set(v, cur.parts.profile);
          return v;
        } catch (err) {
          // A refusal (401) or the new provider being unreachable (503): within the grace, the replaced one may
          // still vouch for the token. When it cannot either, the current provider's answer is the one given.
          if (!prev) throw err;
          const v = await prev.parts.verifier.verify(token).catch(() => {
            throw err;
          });
          verifiedBy.set(v, prev.parts.profile);
          return v;
        }
      },
    },
    profile: {
      async primaryEmail(token, rawToken) {
        const source = verifiedBy.get(token) ?? (await currentParts()).current.parts.profile;
        return source.primaryEmail(token, rawToken);
      },
    },
  };
}
