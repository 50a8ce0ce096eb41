import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { DevIssuer } from './dev-issuer.ts';
import { devSubject } from './dev-issuer.ts';

/**
 * The development OpenID provider of the embedded default (architecture section 8): a real provider
 * (oidc-provider) on its own port, so the browser's sign-in is production's code path. It signs with the
 * development issuer's key, and its access tokens are JWTs for the API's audience carrying the email,
 * so the API verifies them exactly like `npm run -s token` tokens (same key, same audience, the
 * provider's issuer URL added to the accepted ones). Its sign-in page asks only for an email: anyone
 * can be anyone, which is why it refuses to run with any production setting.
 */
export interface DevOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

/** The resource the web client's access tokens are for (a URI, as RFC 8707 requires), with the API's audience. */
const API_RESOURCE = 'urn:clinic-platform:api';
export const DEV_OIDC_CLIENT_ID = 'clinic-web';
export const DEV_OIDC_SCOPE = 'openid email offline_access api';

export class DevOidcRefused extends Error {}

/** Refuses when a production setting is present: the email-only page must never front real accounts. */
export function assertDevelopmentOnly(settings: { env: string; authMode: string; jwksUrlSet: boolean }): void {
  if (settings.env === 'production' || settings.authMode !== 'development' || settings.jwksUrlSet) {
    throw new DevOidcRefused(
      'the development OpenID provider runs only on the development issuer (NODE_ENV=production or AUTH_JWKS_URL is set)',
    );
  }
}

const html = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Confirms the provider's sign-out by itself (a file, not inline: pages here carry no inline script). It
 * clicks the button so `logout=yes` is sent: without it the provider ends only the client's grant and
 * keeps its own session, and the next sign-in would skip the Email page.
 */
const LOGOUT_SCRIPT = 'document.querySelector(\'button[name="logout"]\').click();\n';

function signInPage(uid: string, problem: string | null): string {
  return html(
    'Sign in (development)',
    `<h1>Sign in</h1>
<p>Development sign-in: enter any email address. Production uses the clinic's identity provider.</p>
<form method="post" action="/interaction/${escapeHtml(uid)}/login" novalidate>
<p><label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required${problem ? ' aria-invalid="true" aria-describedby="email-error"' : ''}></p>
${problem ? `<p id="email-error" role="alert">${escapeHtml(problem)}</p>` : ''}
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 4096) break;
  }
  return new URLSearchParams(body);
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(body);
}

export async function startDevOidcProvider(opts: {
  /** The core API's settings: a production one refuses the start (assertDevelopmentOnly). */
  config: { env: string; auth: { mode: string } };
  devIssuer: DevIssuer;
  host: string;
  port: number;
  /** Access token lifetime (tests shorten it to exercise refresh). */
  accessTokenTtlSeconds?: number;
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}): Promise<DevOidcProvider> {
  assertDevelopmentOnly({ env: opts.config.env, authMode: opts.config.auth.mode, jwksUrlSet: opts.config.auth.mode === 'jwks' });
  const server: Server = createServer();
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen({ host: opts.host, port: opts.port }, () => ok());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  // 127.0.0.1, not localhost: the provider's cookies must not share a host with the platform host `localhost`.
  const issuer = `http://${opts.host === '0.0.0.0' || opts.host === 'localhost' ? '127.0.0.1' : opts.host}:${port}`;
  const secret = createHash('sha256')
    .update(`dev-oidc-client:${JSON.stringify(opts.devIssuer.privateJwk.d)}`)
    .digest('base64url');
  /** Emails by subject: the sign-in page's answers, for the claims (in memory: a restart asks again). */
  const emails = new Map<string, string>();

  const configuration: Configuration = {
    clients: [
      {
        client_id: DEV_OIDC_CLIENT_ID,
        client_secret: secret,
        // Any loopback web host's callback is accepted (below); these are placeholders of the form.
        redirect_uris: ['http://localhost/auth/callback'],
        post_logout_redirect_uris: ['http://localhost/auth/logged-out'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [opts.devIssuer.privateJwk as never] },
    cookies: { keys: [secret] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    scopes: ['openid', 'email', 'offline_access', 'api'],
    // The ID token carries the email itself: the proxy shows who is signed in without a userinfo call.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    ttl: {
      AccessToken: opts.accessTokenTtlSeconds ?? 3600,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 14 * 24 * 3600,
      Interaction: 600,
      Session: 14 * 24 * 3600,
      Grant: 14 * 24 * 3600,
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    async findAccount(_ctx, id) {
      const email = emails.get(id);
      if (!email) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, email, email_verified: true }) };
    },
    // The API reads the email from the access token (AUTH_PROFILE_SOURCE=token, as for CLI tokens).
    extraTokenClaims: async (_ctx, token) => {
      const accountId = (token as { accountId?: string }).accountId;
      const email = accountId ? emails.get(accountId) : undefined;
      return email ? { email } : undefined;
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => API_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== API_RESOURCE) throw new Error('unknown resource');
          return {
            scope: 'api',
            audience: opts.devIssuer.audience,
            accessTokenFormat: 'jwt',
            accessTokenTTL: opts.accessTokenTtlSeconds ?? 3600,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: async (ctx: KoaContextWithOIDC, form: string) => {
          ctx.body = html(
            'Sign out (development)',
            `<h1>Sign out</h1>\n${form}\n<p><button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button></p>\n<script src="/dev-assets/logout.js"></script>`,
          );
        },
        postLogoutSuccessSource: async (ctx: KoaContextWithOIDC) => {
          ctx.body = html('Signed out', '<h1>Signed out</h1>\n<p>You are signed out of the development provider.</p>');
        },
      },
    },
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = html(
        'Sign-in error',
        `<h1>Sign-in error</h1>\n<p>${escapeHtml(String(out.error_description ?? out.error ?? 'error'))}</p>`,
      );
    },
  };
  const provider = new Provider(issuer, configuration);
  provider.proxy = false;
  // Every loopback web host may be a callback (any port, `*.localhost`): development only, where the
  // proxy's own single callback is on the platform host `localhost` (or 127.0.0.1 in tests).
  const loopbackUri = (value: string, path: string) => {
    try {
      const u = new URL(value);
      const host = u.hostname;
      const loopback = host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1';
      return u.protocol === 'http:' && loopback && u.pathname === path && !u.hash;
    } catch {
      return false;
    }
  };
  provider.Client.prototype.redirectUriAllowed = (value: string) => loopbackUri(value, '/auth/callback');
  provider.Client.prototype.postLogoutRedirectUriAllowed = (value: string) => loopbackUri(value, '/auth/logged-out');

  /** No consent screen: the development client is first-party; the grant covers what it asked for. */
  async function grantAll(accountId: string, params: Record<string, unknown>): Promise<string> {
    const grant = new provider.Grant({ accountId, clientId: String(params.client_id) });
    grant.addOIDCScope(
      String(params.scope ?? 'openid')
        .split(' ')
        .filter((s) => ['openid', 'email', 'offline_access', 'api'].includes(s)),
    );
    grant.addOIDCClaims(['email', 'email_verified']);
    grant.addResourceScope(API_RESOURCE, 'api');
    return grant.save();
  }

  const callback = provider.callback();
  async function interaction(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const m = /^\/interaction\/([A-Za-z0-9_-]+)(\/login)?$/.exec(path);
    if (!m) return send(res, 404, 'text/plain; charset=utf-8', 'not found');
    const uid = m[1]!;
    let details: Awaited<ReturnType<Provider['interactionDetails']>>;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      return send(
        res,
        400,
        'text/html; charset=utf-8',
        html('Sign-in expired', '<h1>Sign-in expired</h1>\n<p>Start again from the clinic page.</p>'),
      );
    }
    if (details.uid !== uid) return send(res, 400, 'text/plain; charset=utf-8', 'interaction mismatch');
    if (!m[2]) {
      if (req.method !== 'GET') return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
      // Signed in at the provider already, only the grant is missing: give it without a screen.
      if (details.prompt.name === 'consent' && details.session?.accountId) {
        const grantId = await grantAll(details.session.accountId, details.params);
        return void (await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true }));
      }
      return send(res, 200, 'text/html; charset=utf-8', signInPage(uid, null));
    }
    if (req.method !== 'POST') return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
    const email = (await readForm(req)).get('email')?.trim().toLowerCase() ?? '';
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email) || email.length > 254) {
      return send(res, 400, 'text/html; charset=utf-8', signInPage(uid, 'Enter an email address such as you@example.com.'));
    }
    const accountId = devSubject(email);
    emails.set(accountId, email);
    const grantId = await grantAll(accountId, details.params);
    await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/dev-assets/logout.js') return send(res, 200, 'text/javascript; charset=utf-8', LOGOUT_SCRIPT);
    if (path.startsWith('/interaction/')) {
      interaction(req, res, path).catch((err: Error) => {
        opts.logger.warn({ err: err.message }, 'development sign-in failed');
        if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'sign-in failed');
      });
      return;
    }
    callback(req, res);
  });
  opts.devIssuer.acceptedIssuers.push(issuer);
  opts.logger.info({ issuer }, 'development OpenID provider listening');
  return {
    issuer,
    clientId: DEV_OIDC_CLIENT_ID,
    clientSecret: secret,
    async close() {
      const at = opts.devIssuer.acceptedIssuers.indexOf(issuer);
      if (at !== -1) opts.devIssuer.acceptedIssuers.splice(at, 1);
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
