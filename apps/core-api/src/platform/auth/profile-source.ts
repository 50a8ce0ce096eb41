import { request } from 'undici';
import { AppError, type VerifiedToken } from '@clinic/http-kit';
import type { Config } from '../../config.ts';

/** Where the primary email of a new user comes from at just-in-time provisioning (spec 5.4.2). */
export interface ProfileSource {
  primaryEmail(token: VerifiedToken, rawToken: string): Promise<string>;
}

const unavailable = (detail: string) =>
  new AppError(
    503,
    'identity_provider_unavailable',
    `Could not read your profile from the identity provider (${detail}); retry in a moment.`,
  );

const noEmail = () =>
  new AppError(401, 'unauthorized', 'The identity provider has no primary email for this account; add one and sign in again.');

/**
 * A provider that says the address is not verified must not decide who the caller is: anyone can
 * register an unverified address, and provisioning links an existing row (an invited member, a
 * CLI superadmin grant) by email. Only an explicit "not verified" is refused, because some
 * providers omit the claim for addresses they verified themselves.
 */
const unverified = () =>
  new AppError(
    401,
    'unauthorized',
    'The identity provider has not verified the email address of this account; verify it and sign in again.',
  );

/**
 * GET a JSON object from the provider. `bearerIsCaller`: the credential is the caller's own token
 * (userinfo), so a 401/403 is the caller's; otherwise it is our server secret (Clerk), and a 401/403
 * is our misconfiguration, which the caller can do nothing about: 503, logged by the error handler.
 */
async function getJson(url: string, bearer: string, bearerIsCaller: boolean): Promise<Record<string, unknown>> {
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, {
      headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' },
      headersTimeout: 5000,
      bodyTimeout: 5000,
    });
  } catch (err) {
    // The network error names internal hosts and ports: keep it for the log (cause), not the client.
    throw Object.assign(unavailable('unreachable'), { cause: err });
  }
  if (res.statusCode === 401 || res.statusCode === 403 || (!bearerIsCaller && res.statusCode === 404)) {
    await res.body.dump();
    if (bearerIsCaller) throw new AppError(401, 'unauthorized', 'The identity provider rejected the profile request for this token.');
    if (res.statusCode === 404) throw new AppError(401, 'unauthorized', 'The identity provider has no account for this token.');
    throw unavailable(`status ${res.statusCode}`);
  }
  if (res.statusCode >= 300) {
    await res.body.dump();
    throw unavailable(`status ${res.statusCode}`);
  }
  // A body that is not a JSON object is the provider failing, not the caller: 503, never a 500.
  const body: unknown = await res.body.json().catch(() => null);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw unavailable('the response is not a JSON object');
  return body as Record<string, unknown>;
}

interface ClerkUser {
  primary_email_address_id?: string | null;
  email_addresses?: { id: string; email_address: string; verification?: { status?: string } | null }[];
}

export function createProfileSource(auth: Config['auth']): ProfileSource {
  if (auth.mode === 'development' || auth.profile.source === 'token') {
    return {
      async primaryEmail(token) {
        if (!token.email) throw noEmail();
        if (token.claims.email_verified === false) throw unverified();
        return token.email;
      },
    };
  }
  const profile = auth.profile;
  if (profile.source === 'oidc_userinfo') {
    return {
      async primaryEmail(token, rawToken) {
        const body = (await getJson(profile.userinfoUrl, rawToken, true)) as { email?: unknown; email_verified?: unknown; sub?: unknown };
        if (typeof body.email !== 'string' || !body.email) throw noEmail();
        if (body.email_verified === false) throw unverified();
        // OIDC Core 5.3.2: the UserInfo sub must match the token's, or the response must not be used.
        if (body.sub !== undefined && body.sub !== token.subject) {
          throw new AppError(401, 'unauthorized', 'The identity provider returned the profile of another account for this token.');
        }
        return body.email;
      },
    };
  }
  return clerkProfileSource(profile.apiUrl, profile.secretKey);
}

/** The primary email from a Clerk-style Backend API (AUTH_PROFILE_SOURCE=clerk, or the identity row). */
export function clerkProfileSource(apiUrl: string, secretKey: string): ProfileSource {
  return {
    async primaryEmail(token) {
      const url = new URL(`/v1/users/${encodeURIComponent(token.subject)}`, apiUrl).toString();
      const user = (await getJson(url, secretKey, false)) as ClerkUser;
      const primary = user.email_addresses?.find((e) => e.id === user.primary_email_address_id);
      if (!primary?.email_address) throw noEmail();
      const status = primary.verification?.status;
      if (status !== undefined && status !== 'verified') throw unverified();
      return primary.email_address;
    },
  };
}
