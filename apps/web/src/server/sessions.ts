import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clearCookie, readCookies, SESSION_COOKIE, setCookie } from './cookies.ts';
import { type OidcClient, ProviderUnavailable, type TokenSet } from './oidc.ts';
import type { SealedStore } from './store.ts';

/** A signed-in browser on one host. The cookie holds only the random id; this record stays server-side. */
export interface Session {
  /** The host the session was created for: its cookie is refused on any other host. */
  host: string;
  subject: string;
  email: string | null;
  tokens: TokenSet;
  /** Epoch seconds. */
  createdAt: number;
  touchedAt: number;
}

export interface SessionRef {
  id: string;
  session: Session;
}

/** Refresh this long before the access token expires, so a forwarded call never carries a dying token. */
const REFRESH_MARGIN_SECONDS = 60;
/** Writing the idle deadline forward on every request would be a store write per call: once a minute is enough. */
const TOUCH_EVERY_SECONDS = 60;

export interface Sessions {
  create(reply: FastifyReply, hostname: string, data: Omit<Session, 'createdAt' | 'touchedAt' | 'host'>): Promise<string>;
  /** The session of this request on this host, or null (absent, expired, destroyed, or another host's). */
  load(request: FastifyRequest, hostname: string): Promise<SessionRef | null>;
  /** A valid access token for the session, refreshed when close to expiry; null when it cannot be had (signed out). */
  accessToken(ref: SessionRef): Promise<string | null>;
  destroy(reply: FastifyReply, hostname: string, ref: SessionRef | null): Promise<void>;
}

export function createSessions(opts: {
  store: SealedStore;
  oidc: () => OidcClient | null;
  idleSeconds: number;
  maxSeconds: number;
  log: { warn(obj: object, msg: string): void };
}): Sessions {
  const { store } = opts;
  const refreshing = new Map<string, Promise<TokenSet | null>>();
  const now = () => Math.floor(Date.now() / 1000);
  const ttlOf = (s: Session) => Math.max(1, Math.min(opts.idleSeconds, s.createdAt + opts.maxSeconds - now()));

  async function refresh(ref: SessionRef): Promise<TokenSet | null> {
    const oidc = opts.oidc();
    const refreshToken = ref.session.tokens.refreshToken;
    if (!oidc || !refreshToken) return null;
    try {
      const tokens = await oidc.refresh(refreshToken);
      const updated: Session = { ...ref.session, tokens, touchedAt: now() };
      await store.set('session', ref.id, updated, ttlOf(updated));
      ref.session = updated;
      return tokens;
    } catch (err) {
      // The provider down: keep the session, the current token serves while it lasts.
      if (err instanceof ProviderUnavailable) {
        opts.log.warn({ err: err.message }, 'session refresh failed; will retry');
        return null;
      }
      // A refused refresh token (revoked, expired) ends the session; the visitor signs in again.
      opts.log.warn({ err: (err as Error).message }, 'session refresh refused; signing out');
      await store.delete('session', ref.id);
      ref.session = { ...ref.session, tokens: { ...ref.session.tokens, expiresAt: 0 } };
      return null;
    }
  }

  return {
    async create(reply, hostname, data) {
      const id = randomBytes(32).toString('base64url');
      const t = now();
      const session: Session = { ...data, host: hostname, createdAt: t, touchedAt: t };
      await store.set('session', id, session, ttlOf(session));
      setCookie(reply, hostname, SESSION_COOKIE, id, { httpOnly: true });
      return id;
    },
    async load(request, hostname) {
      const id = readCookies(request)[SESSION_COOKIE];
      if (!id || id.length > 100) return null;
      const session = await store.get<Session>('session', id);
      if (!session || session.host !== hostname) return null;
      const t = now();
      if (session.createdAt + opts.maxSeconds <= t || session.touchedAt + opts.idleSeconds <= t) {
        await store.delete('session', id);
        return null;
      }
      if (t - session.touchedAt >= TOUCH_EVERY_SECONDS) {
        session.touchedAt = t;
        await store.set('session', id, session, ttlOf(session));
      }
      return { id, session };
    },
    async accessToken(ref) {
      if (ref.session.tokens.expiresAt - REFRESH_MARGIN_SECONDS > now()) return ref.session.tokens.accessToken;
      // Concurrent calls of one session share one refresh: a rotating provider would refuse the second.
      let pending = refreshing.get(ref.id);
      if (!pending) {
        pending = refresh(ref).finally(() => refreshing.delete(ref.id));
        refreshing.set(ref.id, pending);
      }
      const tokens = await pending;
      if (tokens) return tokens.accessToken;
      return ref.session.tokens.expiresAt > now() ? ref.session.tokens.accessToken : null;
    },
    async destroy(reply, hostname, ref) {
      if (ref) await store.delete('session', ref.id);
      clearCookie(reply, hostname, SESSION_COOKIE);
    },
  };
}
