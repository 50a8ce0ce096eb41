import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';

/** A setting that cannot be used: the message names it and says what to do. */
export class WebConfigError extends Error {}

/** The OpenID provider the proxy signs people in with (discovery URL and a confidential client). */
export interface OidcSettings {
  /** The issuer URL; its `/.well-known/openid-configuration` is read at the first sign-in. */
  issuerUrl: string;
  clientId: string;
  clientSecret: string;
  /** Scopes asked for; `offline_access` gets a refresh token from most providers. */
  scope: string;
  /** Extra authorization request parameters some providers need (Auth0's `audience`), as a query string. */
  extraAuthParams: Record<string, string>;
  /** Send the user to the provider's end-session endpoint on sign-out when it has one. */
  endSession: boolean;
}

/** Every setting of the web service, parsed once: nothing else in it reads the environment. */
export interface WebConfig {
  production: boolean;
  host: string;
  port: number;
  logLevel: string;
  /** Clinic hosts are `<slug>.<platformDomain>`; the platform's own host is `platformDomain` itself. */
  platformDomain: string;
  /** The origin of the platform host (OIDC callback, post-logout landing); null: derived from the port once listening. */
  platformOrigin: string | null;
  coreApiUrl: string;
  telemetryUrl: string;
  /** Origins the portal's exercise videos come from (WEB_MEDIA_ORIGINS), allowed by the CSP's media-src and connect-src. */
  mediaOrigins: string[];
  /** Fastify's trustProxy: who may set X-Forwarded-For/-Proto/-Host in front of this service. */
  trustProxy: boolean | string;
  /** Largest request body forwarded to the API (bytes); 413 above. */
  bodyLimitBytes: number;
  /** Derives the key that encrypts session records at rest. */
  sessionSecret: string;
  session: { idleSeconds: number; maxSeconds: number };
  redisUrl: string | null;
  redisKeyPrefix: string;
  /** Host -> organization cache: positive and negative lifetimes, and its size. */
  hostCache: { ttlSeconds: number; negativeTtlSeconds: number; max: number };
  /** Built front end (Vite output): dist/booking/index.html, dist/portal/index.html, dist/assets/. */
  distDir: string;
  /** `npm start` builds the front end first when it is missing or stale (WEB_BUILD_ON_START=off: never). */
  buildOnStart: boolean;
  /** null when no provider is configured: sign-in answers 503 with the settings to set. */
  oidc: OidcSettings | null;
}

const isLoopbackName = (host: string) => host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1' || host === '[::1]';

function int(env: Record<string, string | undefined>, key: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) throw new WebConfigError(`${key} must be an integer from ${min} to ${max} (got ${raw})`);
  return v;
}

function url(env: Record<string, string | undefined>, key: string, fallback: string): string {
  const raw = env[key] || fallback;
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new WebConfigError(`${key} must be an http(s) URL (got ${raw})`);
  }
  return raw.replace(/\/+$/, '');
}

/** WEB_MEDIA_ORIGINS: comma-separated http(s) origins (scheme, host and port; no path). */
function mediaOrigins(raw: string): string[] {
  return raw
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean)
    .map((o) => {
      let u: URL;
      try {
        u = new URL(o);
      } catch {
        throw new WebConfigError(`WEB_MEDIA_ORIGINS must list http(s) origins separated by commas (got ${o})`);
      }
      if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== o.replace(/\/+$/, '')) {
        throw new WebConfigError(`WEB_MEDIA_ORIGINS must list origins such as https://videos.example.com, without a path (got ${o})`);
      }
      return u.origin;
    });
}

function trustProxy(raw: string | undefined): boolean | string {
  if (!raw || raw === 'false') return false;
  if (raw === 'true') return true;
  return raw;
}

/**
 * Parses the web service's settings. `defaults` lets the embedded default (the companion inside
 * `npm start`) supply what production must set: the core API and telemetry addresses, the development
 * provider and a session secret derived from the development key.
 */
export function parseWebConfig(
  env: Record<string, string | undefined>,
  defaults: { oidc?: OidcSettings; sessionSecret?: string; coreApiUrl?: string; telemetryUrl?: string; mediaOrigins?: string[] } = {},
): WebConfig {
  const production = env.NODE_ENV === 'production';
  const platformDomain = (env.PLATFORM_DOMAIN || 'localhost').trim().toLowerCase().replace(/\.$/, '');
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(platformDomain)) {
    throw new WebConfigError(`PLATFORM_DOMAIN must be a host name such as clinics.example.com (got ${env.PLATFORM_DOMAIN})`);
  }
  const port = int(env, 'WEB_PORT', 3003, 0, 65535);
  const secret = env.WEB_SESSION_SECRET || defaults.sessionSecret;
  if (production && !env.WEB_SESSION_SECRET) {
    throw new WebConfigError('WEB_SESSION_SECRET is required when NODE_ENV=production (at least 32 random characters)');
  }
  if (env.WEB_SESSION_SECRET && env.WEB_SESSION_SECRET.length < 32) {
    throw new WebConfigError('WEB_SESSION_SECRET must be at least 32 characters');
  }
  let oidc: OidcSettings | null = defaults.oidc ?? null;
  if (env.OIDC_ISSUER_URL) {
    const issuerUrl = url(env, 'OIDC_ISSUER_URL', '');
    if (!env.OIDC_CLIENT_ID || !env.OIDC_CLIENT_SECRET) {
      throw new WebConfigError('OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are required with OIDC_ISSUER_URL');
    }
    if (production && new URL(issuerUrl).protocol !== 'https:')
      throw new WebConfigError('OIDC_ISSUER_URL must be https when NODE_ENV=production');
    oidc = {
      issuerUrl,
      clientId: env.OIDC_CLIENT_ID,
      clientSecret: env.OIDC_CLIENT_SECRET,
      scope: env.OIDC_SCOPE || 'openid email offline_access',
      extraAuthParams: Object.fromEntries(new URLSearchParams(env.OIDC_AUTH_PARAMS ?? '')),
      endSession: env.OIDC_END_SESSION !== 'off',
    };
  } else if (production) {
    throw new WebConfigError('OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are required when NODE_ENV=production');
  }
  const origin = env.WEB_PUBLIC_URL ? url(env, 'WEB_PUBLIC_URL', '') : null;
  if (origin && new URL(origin).hostname !== platformDomain) {
    throw new WebConfigError(`WEB_PUBLIC_URL must be on the platform host ${platformDomain} (got ${origin})`);
  }
  const idleSeconds = int(env, 'WEB_SESSION_IDLE_SECONDS', 8 * 3600, 60);
  return {
    production,
    host: env.HOST || '127.0.0.1',
    port,
    logLevel: env.LOG_LEVEL || 'info',
    platformDomain,
    platformOrigin: origin ? new URL(origin).origin : null,
    coreApiUrl: url(env, 'CORE_API_URL', defaults.coreApiUrl ?? 'http://127.0.0.1:3000'),
    telemetryUrl: url(env, 'TELEMETRY_URL', defaults.telemetryUrl ?? 'http://127.0.0.1:3001'),
    mediaOrigins: env.WEB_MEDIA_ORIGINS ? mediaOrigins(env.WEB_MEDIA_ORIGINS) : (defaults.mediaOrigins ?? []),
    trustProxy: trustProxy(env.WEB_TRUST_PROXY),
    bodyLimitBytes: int(env, 'WEB_BODY_LIMIT_BYTES', 12 * 1024 * 1024, 1024),
    // Development without a setting: a per-process secret (sessions in memory die with the process anyway).
    sessionSecret: secret ?? randomBytes(32).toString('hex'),
    session: { idleSeconds, maxSeconds: Math.max(idleSeconds, int(env, 'WEB_SESSION_MAX_SECONDS', 7 * 24 * 3600, 60)) },
    redisUrl: env.REDIS_URL || null,
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? '',
    hostCache: {
      ttlSeconds: int(env, 'WEB_HOST_CACHE_SECONDS', 30, 0, 3600),
      negativeTtlSeconds: int(env, 'WEB_HOST_NEGATIVE_CACHE_SECONDS', 5, 0, 3600),
      max: int(env, 'WEB_HOST_CACHE_SIZE', 10_000, 1),
    },
    distDir: resolve(env.WEB_DIST_DIR || resolve(import.meta.dirname, '../../dist')),
    buildOnStart: env.WEB_BUILD_ON_START !== 'off',
    oidc,
  };
}

/** Loopback hosts (and `*.localhost`) are served over http in development: no `Secure` cookies there. */
export function isLoopbackHost(hostname: string): boolean {
  return isLoopbackName(hostname.toLowerCase());
}

/** A stable secret from key material (the embedded default derives it from the development key). */
export function deriveSecret(material: string): string {
  return createHash('sha256').update(`clinic-web-session:${material}`).digest('hex');
}
