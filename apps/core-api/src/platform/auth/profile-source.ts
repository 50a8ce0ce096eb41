import { request } from 'undici';
import { AppError, type VerifiedToken } from '@clinic/http-kit';
import type { Config } from '../../config.ts';

/** Where the primary email of a new user comes from at just-in-time provisioning (spec 5.4.2). */
export interface ProfileSource {
  primaryEmail(token: VerifiedToken, rawToken: string): Promise<string>;
}

const unavailable = (detail: string) =>
  new AppError(503, 'identity_provider_unavailable', `Could not read your profile from the identity provider (${detail}); retry in a moment.`);

const noEmail = () =>
  new AppError(401, 'unauthorized', 'The identity provider has no primary email for this account; add one and sign in again.');

async function getJson(url: string, bearer: string): Promise<unknown> {
  let res;
  try {
    res = await request(url, { headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' }, headersTimeout: 5000, bodyTimeout: 5000 });
  } catch (err) {
    throw unavailable((err as Error).message);
  }
  if (res.statusCode === 401 || res.statusCode === 403) {
    await res.body.dump();
    throw new AppError(401, 'unauthorized', 'The identity provider rejected the profile request for this token.');
  }
  if (res.statusCode >= 300) {
    await res.body.dump();
    throw unavailable(`status ${res.statusCode}`);
  }
  return res.body.json();
}

interface ClerkUser {
  primary_email_address_id?: string | null;
  email_addresses?: { id: string; email_address: string }[];
}

export function createProfileSource(auth: Config['auth']): ProfileSource {
  if (auth.mode === 'development' || auth.profile.source === 'token') {
    return {
      async primaryEmail(token) {
        if (!token.email) throw noEmail();
        return token.email;
      },
    };
  }
  const profile = auth.profile;
  if (profile.source === 'oidc_userinfo') {
    return {
      async primaryEmail(_token, rawToken) {
        const body = (await getJson(profile.userinfoUrl, rawToken)) as { email?: unknown };
        if (typeof body.email !== 'string' || !body.email) throw noEmail();
        return body.email;
      },
    };
  }
  return {
    async primaryEmail(token) {
      const url = new URL(`/v1/users/${encodeURIComponent(token.subject)}`, profile.apiUrl).toString();
      const user = (await getJson(url, profile.secretKey)) as ClerkUser;
      const primary = user.email_addresses?.find((e) => e.id === user.primary_email_address_id);
      if (!primary?.email_address) throw noEmail();
      return primary.email_address;
    },
  };
}
