import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { clearCookie, LOGIN_COOKIE, readCookies, setCookie } from './cookies.ts';
import { errorPage } from './html.ts';
import { type OidcClient, ProviderUnavailable, type TokenSet } from './oidc.ts';
import type { Sessions } from './sessions.ts';
import type { SealedStore } from './store.ts';

/** A sign-in in progress, kept under its `state` until the provider sends the browser back. */
interface LoginTransaction {
  nonce: string;
  codeVerifier: string;
  /** The host the sign-in started on and where the browser returns. */
  hostname: string;
  origin: string;
  returnTo: string;
  /** Hash of the login cookie set on that host: only the browser that started can finish. */
  binding: string;
}

/** What the platform host's callback hands to the clinic host (once, within a minute). */
interface Handoff {
  hostname: string;
  returnTo: string;
  binding: string;
  subject: string;
  email: string | null;
  tokens: TokenSet;
}

const LOGIN_TTL_SECONDS = 600;
const HANDOFF_TTL_SECONDS = 60;
const hash = (s: string) => createHash('sha256').update(s).digest('base64url');

/** A same-site path to come back to; anything else (another host, a scheme, `//x`) becomes `/`. */
export function safeReturnPath(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length > 2000) return '/';
  if (!raw.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\') || /[\r\n\t]/.test(raw)) return '/';
  return raw;
}

export interface AuthDeps {
  store: SealedStore;
  sessions: Sessions;
  oidc: () => OidcClient | null;
  /** The platform host's origin: the one redirect URI registered at the provider. */
  platformOrigin: () => string;
}

const ReturnTo = Type.Object({ return_to: Type.Optional(Type.String()) });

/**
 * Sign-in as a backend-for-frontend. One redirect URI serves every clinic host (providers cannot
 * wildcard custom domains): the clinic host starts the flow, the platform host receives the code,
 * exchanges it, and hands the tokens to the clinic host through a one-time code, where the session
 * cookie is set (docs/decisions.md).
 */
export function installAuthRoutes(app: FastifyInstance, deps: AuthDeps): void {
  const callbackUrl = () => `${deps.platformOrigin()}/auth/callback`;
  const htmlError = (reply: FastifyReply, status: number, title: string, message: string, link?: { href: string; text: string }) =>
    reply
      .status(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(errorPage(title, message, link));
  const noProvider = (reply: FastifyReply) =>
    htmlError(reply, 503, 'Sign-in is not configured', 'Set OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET for the web service.');
  const unavailable = (reply: FastifyReply, request: FastifyRequest, err: unknown) => {
    request.log.warn({ err: (err as Error).message, cause: (err as { cause?: Error }).cause?.message }, 'identity provider unavailable');
    return htmlError(reply, 503, 'Sign-in unavailable', 'The sign-in service is not answering; try again in a moment.', {
      href: '/',
      text: 'Back',
    });
  };

  app.get(
    '/auth/login',
    {
      schema: {
        summary: 'Start signing in (OpenID Connect code flow with PKCE); comes back to return_to on this host',
        tags: ['auth'],
        querystring: ReturnTo,
        response: { 302: { type: 'null', description: 'To the identity provider' } },
      },
    },
    async (request, reply) => {
      const site = request.site!;
      const oidc = deps.oidc();
      if (!oidc) return noProvider(reply);
      const returnTo = safeReturnPath((request.query as { return_to?: string }).return_to);
      const binding = randomBytes(24).toString('base64url');
      let start: Awaited<ReturnType<OidcClient['start']>>;
      try {
        start = await oidc.start(callbackUrl());
      } catch (err) {
        if (err instanceof ProviderUnavailable) return unavailable(reply, request, err);
        throw err;
      }
      const txn: LoginTransaction = {
        nonce: start.nonce,
        codeVerifier: start.codeVerifier,
        hostname: site.hostname,
        origin: site.origin,
        returnTo,
        binding: hash(binding),
      };
      await deps.store.set('login', start.state, txn, LOGIN_TTL_SECONDS);
      setCookie(reply, site.hostname, LOGIN_COOKIE, binding, { httpOnly: true, maxAgeSeconds: LOGIN_TTL_SECONDS, path: '/auth' });
      return reply.header('cache-control', 'no-store').redirect(start.url, 302);
    },
  );

  app.get(
    '/auth/callback',
    {
      schema: {
        summary: "The provider's redirect (platform host only): exchanges the code, then hands the session to the clinic host",
        tags: ['auth'],
        querystring: Type.Object(
          { state: Type.Optional(Type.String()), code: Type.Optional(Type.String()) },
          { additionalProperties: true },
        ),
        response: { 302: { type: 'null', description: 'To /auth/handoff on the clinic host' } },
      },
    },
    async (request, reply) => {
      if (request.site?.target.kind !== 'platform') return reply.callNotFound();
      const oidc = deps.oidc();
      if (!oidc) return noProvider(reply);
      const state = (request.query as { state?: string }).state;
      const txn = state && state.length <= 200 ? await deps.store.take<LoginTransaction>('login', state) : null;
      if (!txn) {
        return htmlError(
          reply,
          400,
          'Sign-in expired',
          'This sign-in link has expired or was already used. Start again from the clinic page.',
        );
      }
      let result: Awaited<ReturnType<OidcClient['finish']>>;
      try {
        result = await oidc.finish(new URL(request.url, deps.platformOrigin()), callbackUrl(), {
          state: state!,
          nonce: txn.nonce,
          codeVerifier: txn.codeVerifier,
        });
      } catch (err) {
        if (err instanceof ProviderUnavailable) return unavailable(reply, request, err);
        request.log.info({ err: (err as Error).message }, 'sign-in refused');
        return htmlError(reply, 400, 'Sign-in did not complete', 'The sign-in was cancelled or refused. You can try again.', {
          href: `${txn.origin}${txn.returnTo}`,
          text: 'Back to the clinic',
        });
      }
      const code = randomBytes(32).toString('base64url');
      const handoff: Handoff = {
        hostname: txn.hostname,
        returnTo: txn.returnTo,
        binding: txn.binding,
        subject: result.subject,
        email: result.email,
        tokens: result.tokens,
      };
      await deps.store.set('handoff', code, handoff, HANDOFF_TTL_SECONDS);
      return reply.header('cache-control', 'no-store').redirect(`${txn.origin}/auth/handoff?code=${encodeURIComponent(code)}`, 302);
    },
  );

  app.get(
    '/auth/handoff',
    {
      schema: {
        summary: 'Receives the one-time code from the callback and sets the session cookie on this host',
        tags: ['auth'],
        querystring: Type.Object({ code: Type.Optional(Type.String()) }),
        response: { 303: { type: 'null', description: 'To the return_to path of the sign-in' } },
      },
    },
    async (request, reply) => {
      const site = request.site!;
      const code = (request.query as { code?: string }).code;
      const handoff = code && code.length <= 200 ? await deps.store.take<Handoff>('handoff', code) : null;
      const binding = readCookies(request)[LOGIN_COOKIE];
      // Another host's code, or a browser that did not start this sign-in (a link sent to a victim): refused.
      if (!handoff || handoff.hostname !== site.hostname || !binding || hash(binding) !== handoff.binding) {
        return htmlError(reply, 400, 'Sign-in expired', 'This sign-in could not be completed in this browser. Start again.', {
          href: '/',
          text: 'Back to the clinic',
        });
      }
      clearCookie(reply, site.hostname, LOGIN_COOKIE, '/auth');
      // A session this browser already had here ends: one browser, one session per host.
      const previous = await deps.sessions.load(request, site.hostname);
      if (previous) await deps.store.delete('session', previous.id);
      await deps.sessions.create(reply, site.hostname, { subject: handoff.subject, email: handoff.email, tokens: handoff.tokens });
      return reply.header('cache-control', 'no-store').redirect(handoff.returnTo, 303);
    },
  );

  app.get(
    '/auth/session',
    {
      schema: {
        summary: 'Whether this browser is signed in on this host, and as whom',
        tags: ['auth'],
        response: {
          200: Type.Object({
            signedIn: Type.Boolean(),
            user: Type.Union([Type.Object({ email: Type.Union([Type.String(), Type.Null()]) }), Type.Null()]),
          }),
        },
      },
    },
    async (request, reply) => {
      const ref = await deps.sessions.load(request, request.site!.hostname);
      reply.header('cache-control', 'no-store');
      return { signedIn: ref !== null, user: ref ? { email: ref.session.email } : null };
    },
  );

  app.post(
    '/auth/logout',
    {
      schema: {
        summary: 'Sign out: the session is destroyed server-side, then the provider session is ended when it supports it',
        description:
          'A form post (navigation) is answered 303 to the provider end-session page or to return_to. A fetch gets 200 with ' +
          '{ signedIn: false, endSessionUrl } instead, so a script can navigate itself.',
        tags: ['auth'],
        querystring: ReturnTo,
      },
    },
    async (request, reply) => {
      const site = request.site!;
      const body = request.body as Record<string, unknown> | undefined;
      const returnTo = safeReturnPath(body?.return_to ?? (request.query as { return_to?: string }).return_to);
      const ref = await deps.sessions.load(request, site.hostname);
      await deps.sessions.destroy(reply, site.hostname, ref);
      reply.header('cache-control', 'no-store');
      let endSessionUrl: string | null = null;
      const oidc = deps.oidc();
      if (ref && oidc) {
        const state = randomBytes(24).toString('base64url');
        endSessionUrl = await oidc.endSessionUrl({
          idToken: ref.session.tokens.idToken,
          postLogoutRedirectUri: `${deps.platformOrigin()}/auth/logged-out`,
          state,
        });
        if (endSessionUrl) await deps.store.set('logout', state, { origin: site.origin, returnTo }, LOGIN_TTL_SECONDS);
      }
      if (request.headers['sec-fetch-mode'] && request.headers['sec-fetch-mode'] !== 'navigate') {
        return { signedIn: false, endSessionUrl };
      }
      return reply.redirect(endSessionUrl ?? returnTo, 303);
    },
  );

  app.get(
    '/auth/logged-out',
    {
      schema: {
        summary: "Where the provider's end-session sends the browser (platform host): back to the clinic page",
        tags: ['auth'],
        querystring: Type.Object({ state: Type.Optional(Type.String()) }),
        response: { 303: { type: 'null', description: 'To the clinic host' } },
      },
    },
    async (request, reply) => {
      if (request.site?.target.kind !== 'platform') return reply.callNotFound();
      const state = (request.query as { state?: string }).state;
      const back = state && state.length <= 200 ? await deps.store.take<{ origin: string; returnTo: string }>('logout', state) : null;
      return reply.header('cache-control', 'no-store').redirect(back ? `${back.origin}${back.returnTo}` : '/', 303);
    },
  );
}
