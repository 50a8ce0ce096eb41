import * as client from 'openid-client';
import type { OidcSettings } from './config.ts';

/** The tokens of a session as the provider issued them; never sent to the browser. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string | null;
  idToken: string | null;
  /** Epoch seconds when the access token expires. */
  expiresAt: number;
}

export interface SignInStart {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface SignInResult {
  tokens: TokenSet;
  subject: string;
  email: string | null;
}

/** The provider could not be reached or refused to talk: 503, the visitor can retry. */
export class ProviderUnavailable extends Error {}

/**
 * The OpenID Connect relying party of the backend-for-frontend: authorization code with PKCE, state
 * and nonce (openid-client), refresh, and the provider's end-session URL. Discovery happens at the
 * first use and is retried on the next one if it failed, so the proxy starts while the provider is down.
 */
export interface OidcClient {
  start(redirectUri: string): Promise<SignInStart>;
  finish(callbackUrl: URL, redirectUri: string, checks: { state: string; nonce: string; codeVerifier: string }): Promise<SignInResult>;
  refresh(refreshToken: string): Promise<TokenSet>;
  /** The end-session URL when the provider has one (and it is enabled), else null. */
  endSessionUrl(params: { idToken: string | null; postLogoutRedirectUri: string; state: string }): Promise<string | null>;
  issuer(): string;
}

const tokenSet = (r: client.TokenEndpointResponse, previous?: TokenSet): TokenSet => ({
  accessToken: r.access_token,
  // A provider that does not rotate refresh tokens answers without one: keep the one we have.
  refreshToken: r.refresh_token ?? previous?.refreshToken ?? null,
  idToken: r.id_token ?? previous?.idToken ?? null,
  expiresAt: Math.floor(Date.now() / 1000) + (typeof r.expires_in === 'number' ? r.expires_in : 300),
});

export function createOidcClient(settings: OidcSettings): OidcClient {
  let discovered: Promise<client.Configuration> | null = null;
  const insecure = new URL(settings.issuerUrl).protocol === 'http:';
  const configuration = () => {
    discovered ??= client
      .discovery(
        new URL(settings.issuerUrl),
        settings.clientId,
        settings.clientSecret,
        client.ClientSecretBasic(settings.clientSecret),
        // http issuers are accepted by the config only off production (the development provider on loopback).
        insecure ? { execute: [client.allowInsecureRequests] } : undefined,
      )
      .catch((err: unknown) => {
        discovered = null;
        throw Object.assign(new ProviderUnavailable('the identity provider could not be discovered'), { cause: err });
      });
    return discovered;
  };
  const network = (what: string) => (err: unknown) => {
    if (err instanceof client.ResponseBodyError || err instanceof client.AuthorizationResponseError) throw err;
    if (err instanceof TypeError || (err as { code?: string }).code === 'OAUTH_RESPONSE_IS_NOT_CONFORM') {
      throw Object.assign(new ProviderUnavailable(`the identity provider failed during ${what}`), { cause: err });
    }
    throw err;
  };

  return {
    issuer: () => settings.issuerUrl,
    async start(redirectUri) {
      const config = await configuration();
      const codeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        ...settings.extraAuthParams,
        redirect_uri: redirectUri,
        scope: settings.scope,
        response_type: 'code',
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { url: url.href, state, nonce, codeVerifier };
    },
    async finish(callbackUrl, redirectUri, checks) {
      const config = await configuration();
      const res = await client
        .authorizationCodeGrant(
          config,
          callbackUrl,
          { pkceCodeVerifier: checks.codeVerifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true },
          { redirect_uri: redirectUri },
        )
        .catch(network('the code exchange'));
      const claims = res.claims();
      if (!claims) throw new Error('the provider answered without an ID token');
      return {
        tokens: tokenSet(res),
        subject: claims.sub,
        email: typeof claims.email === 'string' ? claims.email : null,
      };
    },
    async refresh(refreshToken) {
      const config = await configuration();
      const res = await client.refreshTokenGrant(config, refreshToken).catch(network('a refresh'));
      return tokenSet(res, { accessToken: '', refreshToken, idToken: null, expiresAt: 0 });
    },
    async endSessionUrl({ idToken, postLogoutRedirectUri, state }) {
      if (!settings.endSession) return null;
      const config = await configuration().catch(() => null);
      if (!config?.serverMetadata().end_session_endpoint) return null;
      return client.buildEndSessionUrl(config, {
        ...(idToken ? { id_token_hint: idToken } : { client_id: settings.clientId }),
        post_logout_redirect_uri: postLogoutRedirectUri,
        state,
      }).href;
    },
  };
}
