// The production authentication path: AUTH_JWKS_URL/AUTH_ISSUER/AUTH_AUDIENCE against a real JWKS
// server on loopback (keys made with jose, RS256 and ES256), and the profile sources (OIDC userinfo,
// Clerk) used at just-in-time provisioning. All apps of this file share one database.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { TestDatabase } from '@clinic/db';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { ConfigError, parseConfig } from '../src/config.ts';
import { freshDatabase, startTestApp, uniqueEmail, type TestApp, assertError } from './helpers.ts';

const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'clinic-api';
const CLERK_SECRET = 'sk_test_clinic_platform';

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function signingKey(alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomUUID();
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

function sign(key: SigningKey, claims: JWTPayload = {}, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: `user_${randomUUID()}`, iat: now, exp: now + 600, ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .sign(key.privateKey);
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A loopback HTTP server whose handler the test can swap; closed in after(). */
async function loopback(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

describe('production authentication against a remote JWKS', () => {
  let database: TestDatabase;
  let rsa: SigningKey;
  let ec: SigningKey;
  const jwks = { keys: [] as JWK[], fetches: 0, status: 200 };
  let jwksUrl: string;
  const servers: Server[] = [];
  const apps: TestApp[] = [];

  const userinfo = { calls: 0, status: 200, profiles: new Map<string, Record<string, unknown>>() };
  let userinfoUrl: string;
  const clerk = { calls: 0, status: 200, secret: CLERK_SECRET, users: new Map<string, Record<string, unknown>>() };
  let clerkUrl: string;

  const usersWithSubject = async (sub: string) =>
    (await database.db.query<{ id: string; email: string }>('select id, email from users where external_subject = $1', [sub])).rows;

  /** An app in JWKS mode on the shared database; the first one migrates it. */
  async function jwksApp(env: Record<string, string> = {}): Promise<TestApp> {
    const app = await startTestApp({
      database,
      migrate: apps.length === 0,
      env: {
        AUTH_JWKS_URL: `${jwksUrl}/.well-known/jwks.json`,
        AUTH_ISSUER: ISSUER,
        AUTH_AUDIENCE: AUDIENCE,
        AUTH_JWKS_COOLDOWN_SECONDS: '0',
        ...env,
      },
    });
    apps.push(app);
    return app;
  }

  before(async () => {
    database = await freshDatabase();
    [rsa, ec] = await Promise.all([signingKey('RS256'), signingKey('ES256')]);
    jwks.keys = [rsa.publicJwk, ec.publicJwk];
    const k = await loopback((req, res) => {
      if (req.method !== 'GET' || req.url !== '/.well-known/jwks.json') return sendJson(res, 404, {});
      jwks.fetches++;
      if (jwks.status !== 200) return sendJson(res, jwks.status, { error: 'down' });
      sendJson(res, 200, { keys: jwks.keys });
    });
    servers.push(k.server);
    jwksUrl = k.url;

    const u = await loopback((req, res) => {
      userinfo.calls++;
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const profile = token ? userinfo.profiles.get(token) : undefined;
      if (userinfo.status !== 200) return sendJson(res, userinfo.status, { error: 'down' });
      if (req.url !== '/userinfo' || !profile) return sendJson(res, 401, { error: 'invalid_token' });
      sendJson(res, 200, profile);
    });
    servers.push(u.server);
    userinfoUrl = `${u.url}/userinfo`;

    const c = await loopback((req, res) => {
      clerk.calls++;
      if (clerk.status !== 200) return sendJson(res, clerk.status, { errors: [{ code: 'internal' }] });
      if (req.headers.authorization !== `Bearer ${clerk.secret}`)
        return sendJson(res, 401, { errors: [{ code: 'authentication_invalid' }] });
      const m = /^\/v1\/users\/([^/?]+)$/.exec(req.url ?? '');
      const user = m ? clerk.users.get(decodeURIComponent(m[1]!)) : undefined;
      if (req.method !== 'GET' || !user) return sendJson(res, 404, { errors: [{ code: 'resource_not_found' }] });
      sendJson(res, 200, user);
    });
    servers.push(c.server);
    clerkUrl = c.url;
  });

  after(async () => {
    for (const app of apps) await app.close();
    await Promise.all(servers.map(close));
    await database?.drop();
  });

  describe('token verification (AUTH_PROFILE_SOURCE=token)', () => {
    let t: TestApp;
    before(async () => {
      t = await jwksApp();
    });

    it('the development issuer is not used: its tokens are refused', async () => {
      assert.equal(t.rt.config.auth.mode, 'jwks');
      assert.equal(t.rt.devIssuer, null);
      assertError(await t.call('GET', '/v1/me', { token: await t.issuer.sign(uniqueEmail()) }), 401, 'unauthorized');
    });

    it('a valid RS256 token is accepted and provisions the user with the email of the token', async () => {
      const email = uniqueEmail('rsa');
      const sub = `user_${randomUUID()}`;
      const res = await t.call('GET', '/v1/me', { token: await sign(rsa, { sub, email }) });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.email, email);
      const users = await usersWithSubject(sub);
      assert.equal(users.length, 1);
      assert.equal(users[0]!.email, email);
    });

    it('a valid ES256 token is accepted', async () => {
      const email = uniqueEmail('ec');
      const res = await t.call('GET', '/v1/me', { token: await sign(ec, { email }) });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.email, email);
    });

    it('a token with an unknown kid returns 401', async () => {
      const stranger = await signingKey('RS256');
      const email = uniqueEmail();
      assertError(await t.call('GET', '/v1/me', { token: await sign(stranger, { email }) }), 401, 'unauthorized');
      // The kid of a served key but the signature of another: still 401.
      assertError(await t.call('GET', '/v1/me', { token: await sign({ ...stranger, kid: rsa.kid }, { email }) }), 401, 'unauthorized');
      // No kid at all: the one served RSA key is tried, and the signature does not match it.
      assertError(await t.call('GET', '/v1/me', { token: await sign(stranger, { email }, { kid: undefined }) }), 401, 'unauthorized');
    });

    it('a wrong issuer, a wrong audience, no audience or an expired token returns 401', async () => {
      const email = uniqueEmail();
      const now = Math.floor(Date.now() / 1000);
      const cases: JWTPayload[] = [
        { iss: 'https://evil.example.test/' },
        { iss: ISSUER.replace(/\/$/, '') },
        { aud: 'another-api' },
        { aud: undefined },
        { exp: now - 120, iat: now - 720 },
      ];
      for (const claims of cases) {
        assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { email, ...claims }) }), 401, 'unauthorized');
      }
      // The same key and claims without the defect are accepted: the refusals are the claim checks.
      assert.equal((await t.call('GET', '/v1/me', { token: await sign(rsa, { email }) })).statusCode, 200);
    });

    it('an unsigned token (alg none) returns 401 without fetching the key set', async () => {
      const now = Math.floor(Date.now() / 1000);
      const claims = { iss: ISSUER, aud: AUDIENCE, sub: `user_${randomUUID()}`, email: uniqueEmail(), iat: now, exp: now + 600 };
      const before = jwks.fetches;
      for (const header of [{ alg: 'none' }, { alg: 'none', kid: rsa.kid, typ: 'JWT' }]) {
        assertError(await t.call('GET', '/v1/me', { token: `${b64url(header)}.${b64url(claims)}.` }), 401, 'unauthorized');
      }
      assert.equal(jwks.fetches, before);
      assert.equal((await usersWithSubject(claims.sub)).length, 0);
    });

    it('the key set is not fetched per request, with the same token or with different valid tokens', async () => {
      const token = await sign(rsa, { email: uniqueEmail('same') });
      assert.equal((await t.call('GET', '/v1/me', { token })).statusCode, 200);
      const before = jwks.fetches;
      for (let i = 0; i < 25; i++) assert.equal((await t.call('GET', '/v1/me', { token })).statusCode, 200);
      const others = await Promise.all(Array.from({ length: 12 }, (_, i) => sign(i % 2 ? ec : rsa, { email: uniqueEmail('other') })));
      for (const other of others) assert.equal((await t.call('GET', '/v1/me', { token: other })).statusCode, 200);
      assert.equal(jwks.fetches, before, 'valid tokens with known kids caused key-set fetches');
    });

    it('key rotation: a token of a newly published key is accepted after one refetch; a retired key is refused', async () => {
      const next = await signingKey('RS256');
      const email = uniqueEmail('rotated');
      // Not yet published: unknown kid.
      assertError(await t.call('GET', '/v1/me', { token: await sign(next, { email }) }), 401, 'unauthorized');
      jwks.keys = [next.publicJwk, ec.publicJwk];
      const before = jwks.fetches;
      const res = await t.call('GET', '/v1/me', { token: await sign(next, { email }) });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.email, email);
      assert.equal(jwks.fetches, before + 1);
      // Later tokens of the new key need no further fetch.
      assert.equal((await t.call('GET', '/v1/me', { token: await sign(next, { email: uniqueEmail() }) })).statusCode, 200);
      assert.equal(jwks.fetches, before + 1);
      // The retired key is gone from the set: a new token signed with it is refused.
      assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { email: uniqueEmail() }) }), 401, 'unauthorized');
      rsa = next;
    });

    it('a key set that cannot be fetched returns 503 identity_provider_unavailable, not 401 or 500', async () => {
      const unpublished = await signingKey('ES256');
      const sub = `user_${randomUUID()}`;
      jwks.status = 500;
      try {
        const res = await t.call('GET', '/v1/me', { token: await sign(unpublished, { sub, email: uniqueEmail() }) });
        assertError(res, 503, 'identity_provider_unavailable');
        assert.ok(Number(res.headers['retry-after']) > 0, 'a 503 says when to retry');
        assert.doesNotMatch(res.body, /127\.0\.0\.1|jwks\.json/, 'the provider address stays in the log');
      } finally {
        jwks.status = 200;
      }
      assert.equal((await usersWithSubject(sub)).length, 0);
      // Tokens of keys already held keep working while the provider is down.
      jwks.status = 500;
      try {
        assert.equal((await t.call('GET', '/v1/me', { token: await sign(ec, { email: uniqueEmail() }) })).statusCode, 200);
      } finally {
        jwks.status = 200;
      }
    });

    it('a token with email_verified false is refused and provisions nothing', async () => {
      const sub = `user_${randomUUID()}`;
      const res = await t.call('GET', '/v1/me', { token: await sign(rsa, { sub, email: uniqueEmail(), email_verified: false }) });
      assertError(res, 401, 'unauthorized');
      assert.equal((await usersWithSubject(sub)).length, 0);
    });
  });

  describe('key-set fetching at start-up', () => {
    it('concurrent first requests of a fresh instance share one key-set fetch', async () => {
      const t = await jwksApp({ AUTH_JWKS_COOLDOWN_SECONDS: '30' });
      const before = jwks.fetches;
      const tokens = await Promise.all(Array.from({ length: 20 }, () => sign(ec, { email: uniqueEmail('boot') })));
      const responses = await Promise.all(tokens.map((token) => t.call('GET', '/v1/me', { token })));
      assert.deepEqual(
        responses.map((r) => r.statusCode),
        Array(20).fill(200),
      );
      assert.equal(jwks.fetches, before + 1);
      // With the default cool-down, unknown kids cannot make the instance refetch on every request.
      const stranger = await signingKey('RS256');
      for (let i = 0; i < 5; i++) {
        assertError(await t.call('GET', '/v1/me', { token: await sign(stranger, { email: uniqueEmail() }) }), 401, 'unauthorized');
      }
      assert.equal(jwks.fetches, before + 1);
    });

    it('an unreachable key-set URL returns 503 identity_provider_unavailable', async () => {
      const gone = await loopback(() => undefined);
      await close(gone.server);
      const t = await jwksApp({ AUTH_JWKS_URL: `${gone.url}/.well-known/jwks.json` });
      assertError(await t.call('GET', '/v1/me', { token: await sign(ec, { email: uniqueEmail() }) }), 503, 'identity_provider_unavailable');
    });
  });

  describe('AUTH_PROFILE_SOURCE=oidc_userinfo', () => {
    let t: TestApp;
    before(async () => {
      t = await jwksApp({ AUTH_PROFILE_SOURCE: 'oidc_userinfo', AUTH_USERINFO_URL: userinfoUrl });
    });

    it('the user is provisioned with the userinfo email, fetched only on the first request', async () => {
      const sub = `user_${randomUUID()}`;
      const email = uniqueEmail('userinfo');
      // The token's own email claim is not what counts: the provider profile is.
      const token = await sign(rsa, { sub, email: uniqueEmail('claim') });
      userinfo.profiles.set(token, { sub, email, email_verified: true });
      const before = userinfo.calls;
      const res = await t.call('GET', '/v1/me', { token });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.email, email);
      assert.deepEqual(
        (await usersWithSubject(sub)).map((u) => u.email),
        [email],
      );
      assert.equal(userinfo.calls, before + 1);
      // Later requests, with this token or a new one of the same subject, do not call the provider.
      const later = await sign(ec, { sub });
      for (const tok of [token, token, later]) assert.equal((await t.call('GET', '/v1/me', { token: tok })).statusCode, 200);
      assert.equal(userinfo.calls, before + 1);
    });

    it('a userinfo endpoint answering 500 returns 503 identity_provider_unavailable and creates no user', async () => {
      const sub = `user_${randomUUID()}`;
      const token = await sign(rsa, { sub });
      userinfo.profiles.set(token, { sub, email: uniqueEmail() });
      userinfo.status = 500;
      try {
        assertError(await t.call('GET', '/v1/me', { token }), 503, 'identity_provider_unavailable');
      } finally {
        userinfo.status = 200;
      }
      assert.equal((await usersWithSubject(sub)).length, 0);
      // Once the provider is back, the same token provisions.
      assert.equal((await t.call('GET', '/v1/me', { token })).statusCode, 200);
      assert.equal((await usersWithSubject(sub)).length, 1);
    });

    it('a token the userinfo endpoint rejects returns 401 and creates no user', async () => {
      const sub = `user_${randomUUID()}`;
      assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { sub }) }), 401, 'unauthorized');
      assert.equal((await usersWithSubject(sub)).length, 0);
    });

    it('an unverified email or the profile of another subject is refused', async () => {
      const sub = `user_${randomUUID()}`;
      const unverified = await sign(rsa, { sub });
      userinfo.profiles.set(unverified, { sub, email: uniqueEmail(), email_verified: false });
      assertError(await t.call('GET', '/v1/me', { token: unverified }), 401, 'unauthorized');
      const mixedUp = await sign(rsa, { sub });
      userinfo.profiles.set(mixedUp, { sub: `user_${randomUUID()}`, email: uniqueEmail() });
      assertError(await t.call('GET', '/v1/me', { token: mixedUp }), 401, 'unauthorized');
      assert.equal((await usersWithSubject(sub)).length, 0);
    });
  });

  describe('AUTH_PROFILE_SOURCE=clerk', () => {
    let t: TestApp;
    before(async () => {
      t = await jwksApp({ AUTH_PROFILE_SOURCE: 'clerk', AUTH_CLERK_API_URL: clerkUrl, AUTH_CLERK_SECRET_KEY: CLERK_SECRET });
    });

    const clerkUser = (sub: string, primary: string, status = 'verified') => {
      clerk.users.set(sub, {
        id: sub,
        primary_email_address_id: 'idn_primary',
        email_addresses: [
          { id: 'idn_secondary', email_address: uniqueEmail('secondary'), verification: { status: 'verified' } },
          { id: 'idn_primary', email_address: primary, verification: { status } },
        ],
      });
    };

    it('the user is provisioned with the primary email from the Clerk API, called only on the first request', async () => {
      const sub = `user_${randomUUID()}`;
      const email = uniqueEmail('clerk');
      clerkUser(sub, email);
      const before = clerk.calls;
      const token = await sign(rsa, { sub });
      const res = await t.call('GET', '/v1/me', { token });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.email, email);
      assert.deepEqual(
        (await usersWithSubject(sub)).map((u) => u.email),
        [email],
      );
      assert.equal(clerk.calls, before + 1);
      for (const tok of [token, await sign(ec, { sub }), await sign(rsa, { sub })]) {
        assert.equal((await t.call('GET', '/v1/me', { token: tok })).statusCode, 200);
      }
      assert.equal(clerk.calls, before + 1);
    });

    it('a Clerk API answering 500 returns 503 identity_provider_unavailable and creates no user', async () => {
      const sub = `user_${randomUUID()}`;
      clerkUser(sub, uniqueEmail());
      clerk.status = 500;
      try {
        assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { sub }) }), 503, 'identity_provider_unavailable');
      } finally {
        clerk.status = 200;
      }
      assert.equal((await usersWithSubject(sub)).length, 0);
    });

    it('a rejected secret key is our misconfiguration: 503, not a 401 that would sign the user out', async () => {
      const sub = `user_${randomUUID()}`;
      clerkUser(sub, uniqueEmail());
      clerk.secret = 'sk_test_rotated';
      try {
        assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { sub }) }), 503, 'identity_provider_unavailable');
      } finally {
        clerk.secret = CLERK_SECRET;
      }
      assert.equal((await usersWithSubject(sub)).length, 0);
    });

    it('a subject unknown to Clerk or an unverified primary email returns 401 and creates no user', async () => {
      const unknown = `user_${randomUUID()}`;
      assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { sub: unknown }) }), 401, 'unauthorized');
      const sub = `user_${randomUUID()}`;
      clerkUser(sub, uniqueEmail(), 'unverified');
      assertError(await t.call('GET', '/v1/me', { token: await sign(rsa, { sub }) }), 401, 'unauthorized');
      assert.equal((await usersWithSubject(unknown)).length + (await usersWithSubject(sub)).length, 0);
    });
  });
});

describe('configuration of authentication', () => {
  // Production also needs its shared keys (config.ts); parseConfig checks only that they are given.
  const KEYS = { MASTER_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`, TELEMETRY_SIGNING_KEY: '{"kty":"OKP","crv":"Ed25519"}' };

  it('production names every missing shared key at once', () => {
    const prod = { NODE_ENV: 'production', AUTH_JWKS_URL: 'https://idp.example.test/jwks.json', AUTH_ISSUER: ISSUER };
    assert.throws(
      () => parseConfig(prod),
      (err: unknown) => err instanceof ConfigError && /MASTER_KEYS/.test(err.message) && /TELEMETRY_SIGNING_KEY/.test(err.message),
    );
    assert.throws(
      () => parseConfig({ ...prod, MASTER_KEYS: KEYS.MASTER_KEYS }),
      (err: unknown) => err instanceof ConfigError && !/MASTER_KEYS/.test(err.message),
    );
    assert.equal(parseConfig({ ...prod, ...KEYS }).masterKeys, KEYS.MASTER_KEYS);
  });

  it('production without AUTH_JWKS_URL throws: the development issuer refuses production', () => {
    assert.throws(
      () => parseConfig({ NODE_ENV: 'production' }),
      (err: unknown) => err instanceof ConfigError && /AUTH_JWKS_URL/.test(err.message),
    );
    assert.throws(() => parseConfig({ NODE_ENV: 'production', AUTH_ISSUER: ISSUER }), ConfigError);
  });

  it('CONSENT_GATE=off, a benchmark switch, is refused in production and allowed elsewhere', () => {
    const prod = { NODE_ENV: 'production', AUTH_JWKS_URL: 'https://idp.example.test/jwks.json', AUTH_ISSUER: ISSUER, ...KEYS };
    assert.throws(
      () => parseConfig({ ...prod, CONSENT_GATE: 'off' }),
      (err: unknown) => err instanceof ConfigError && /CONSENT_GATE/.test(err.message),
    );
    assert.equal(parseConfig(prod).consentGate, true);
    assert.equal(parseConfig({ NODE_ENV: 'test', CONSENT_GATE: 'off' }).consentGate, false);
  });

  it('the development issuer is the default outside production', () => {
    assert.equal(parseConfig({ NODE_ENV: 'development' }).auth.mode, 'development');
    assert.equal(parseConfig({ NODE_ENV: 'test' }).auth.mode, 'development');
  });

  it('AUTH_JWKS_URL needs AUTH_ISSUER, and each profile source needs its settings', () => {
    const base = { NODE_ENV: 'production', AUTH_JWKS_URL: 'https://idp.example.test/jwks.json', ...KEYS };
    assert.throws(
      () => parseConfig(base),
      (err: unknown) => err instanceof ConfigError && /AUTH_ISSUER/.test(err.message),
    );
    assert.throws(() => parseConfig({ ...base, AUTH_ISSUER: ISSUER, AUTH_PROFILE_SOURCE: 'oidc_userinfo' }), /AUTH_USERINFO_URL/);
    assert.throws(() => parseConfig({ ...base, AUTH_ISSUER: ISSUER, AUTH_PROFILE_SOURCE: 'clerk' }), /AUTH_CLERK_SECRET_KEY/);
    assert.throws(() => parseConfig({ ...base, AUTH_ISSUER: ISSUER, AUTH_PROFILE_SOURCE: 'magic' }), ConfigError);
    const config = parseConfig({ ...base, AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE });
    assert.deepEqual(config.auth, {
      mode: 'jwks',
      issuer: ISSUER,
      audience: AUDIENCE,
      jwksUrl: base.AUTH_JWKS_URL,
      jwksCooldownSeconds: 30,
      profile: { source: 'token' },
    });
  });
});
