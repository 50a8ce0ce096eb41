import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODE, uniqueEmail, uniqueSlug } from '../../core-api/test/helpers.ts';
import { createDevIssuer } from '../../core-api/src/platform/auth/dev-issuer.ts';
import { assertDevelopmentOnly, DevOidcRefused, startDevOidcProvider } from '../../core-api/src/platform/auth/dev-oidc.ts';
import { buildWebServer, parseWebConfig, WebConfigError } from '../src/index.ts';
import { Browser, signIn, startWebWorld, type WebWorld } from './support.ts';

/**
 * The OpenID Connect code flow driven over HTTP against the development provider, as a browser does it:
 * the clinic's /auth/login, the provider's page, the callback on the platform host, the hand-off to the
 * clinic host, then API calls on the session, refresh, sign-out, expiry.
 */
describe('sign-in as a backend-for-frontend', () => {
  let w: WebWorld;
  let clinic: { id: string; slug: string };
  let other: { id: string; slug: string };
  const origin = (slug: string) => `http://${slug}.localhost:${w.port}`;

  before(async () => {
    // Access tokens live 30 s: under the proxy's 60 s refresh margin, so every call refreshes first.
    w = await startWebWorld({ accessTokenTtlSeconds: 30 });
    clinic = await w.t.createOrg({ slug: uniqueSlug('sign') });
    other = await w.t.createOrg({ slug: uniqueSlug('other') });
    // A clinic takes patients once its privacy notice is published (just-in-time links need it).
    await w.t.publishPrivacyNotice(clinic.id);
  });
  after(() => w?.close());

  it('the clinic app: signed out, /clinic/... goes to sign-in and back; an invited member signing in there is staff, not a patient', async () => {
    const b = new Browser();
    const out = await b.fetch(`${origin(clinic.slug)}/clinic/calendar?view=week`);
    assert.equal(out.status, 303);
    assert.equal(out.headers.location, `/auth/login?return_to=${encodeURIComponent('/clinic/calendar?view=week')}`);
    // A member invited by email, who has never signed in: the proxy's first API call carries X-Organization-ID.
    const admin = await w.t.addMember(clinic.id, uniqueEmail('admin'), 'admin');
    const email = uniqueEmail('desk');
    const added = await w.t.call('POST', `/v1/organizations/${clinic.id}/members`, {
      token: admin.token,
      body: { email, role_code: 'customer_support' },
    });
    assert.equal(added.statusCode, 201, added.body);
    const landed = await signIn(b, origin(clinic.slug), email, '/clinic/calendar');
    assert.equal(landed.status, 200);
    assert.match(landed.body, /<title>clinic<\/title>/);
    assert.match(landed.body, /"signedIn":true/);
    const me = (await b.fetch(`${origin(clinic.slug)}/v1/me`)).json().data;
    assert.equal(me.is_staff_at_current_org, true);
    assert.equal(me.is_patient_at_current_org, false);
    const { rows } = await w.t.db.query('select 1 from patients where organization_id = $1 and user_id = $2', [clinic.id, me.id]);
    assert.equal(rows.length, 0);
  });

  it('login -> provider page -> callback -> session -> /v1/me with the bearer and the host clinic -> logout -> old cookie refused', async () => {
    const b = new Browser();
    const email = uniqueEmail('patient');
    const landed = await signIn(b, origin(clinic.slug), email, '/portal/appointments');
    assert.equal(landed.status, 200);
    assert.match(landed.body, /<title>portal<\/title>/);
    assert.match(landed.body, /"signedIn":true/);
    const sessionId = b.cookies(`${clinic.slug}.localhost`).get('clinic_session');
    assert.ok(sessionId);
    // Nothing of the tokens reached the browser: only the opaque id and the page context's email.
    assert.doesNotMatch(landed.body, /eyJ/);

    const session = await b.fetch(`${origin(clinic.slug)}/auth/session`);
    assert.deepEqual(session.json(), { signedIn: true, user: { email } });

    // The first API call provisions the user and links them as this clinic's patient (spec 5 rule 4), with the
    // host's clinic even though the browser claims another one.
    const me = await b.fetch(`${origin(clinic.slug)}/v1/me`, { headers: { 'x-organization-id': other.id } });
    assert.equal(me.status, 200, me.body);
    assert.equal(me.json().data.email, email);
    assert.equal(me.json().data.current_organization_id, clinic.id);
    assert.equal(me.json().data.is_patient_at_current_org, true);

    const out = await b.fetch(`${origin(clinic.slug)}/auth/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'return_to=%2Fportal',
    });
    assert.equal(out.status, 303);
    // The provider supports end-session: the browser goes there, then back through the platform host.
    const end = new URL(String(out.headers.location));
    assert.equal(end.origin, w.provider.issuer);
    assert.equal(end.searchParams.get('post_logout_redirect_uri'), `http://localhost:${w.port}/auth/logged-out`);
    assert.ok(b.cookies(`${clinic.slug}.localhost`).get('clinic_session') === undefined, 'the cookie is cleared');

    // The old cookie, replayed, no longer works: the session is gone server-side.
    const thief = new Browser();
    thief.cookies(`${clinic.slug}.localhost`).set('clinic_session', sessionId);
    assert.deepEqual((await thief.fetch(`${origin(clinic.slug)}/auth/session`)).json(), { signedIn: false, user: null });
    assert.equal((await thief.fetch(`${origin(clinic.slug)}/v1/me`)).status, 401);

    // The end-session round trip (the provider's confirmation form, which its script submits in a browser)
    // comes back to the clinic's return_to.
    const confirm = await b.follow(end.href);
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(confirm.res.body);
    assert.ok(form, confirm.res.body.slice(0, 500));
    const fields = new URLSearchParams({ logout: 'yes' });
    for (const m of form[2]!.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) fields.set(m[1]!, m[2]!);
    const confirmed = await b.fetch(new URL(form[1]!, confirm.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    });
    const back = await b.follow(new URL(String(confirmed.headers.location), confirm.url).href);
    assert.equal(back.url, `${origin(clinic.slug)}/portal`);
  });

  it('the session cookie: opaque, httpOnly, SameSite=Lax, host-only, not Secure on *.localhost; refused on another host', async () => {
    const b = new Browser();
    await b.follow(`${origin(clinic.slug)}/auth/login`);
    const toProvider = await b.follow(`${origin(clinic.slug)}/auth/login?return_to=%2F`);
    const action = /action="([^"]+)"/.exec(toProvider.res.body)![1]!;
    const post = await b.fetch(new URL(action, toProvider.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `email=${encodeURIComponent(uniqueEmail('cookie'))}`,
    });
    const callback = await b.fetch(new URL(String(post.headers.location), toProvider.url).href);
    const toHandoff = await b.fetch(new URL(String(callback.headers.location), toProvider.url).href);
    assert.equal(toHandoff.status, 302);
    const handoffUrl = String(toHandoff.headers.location);
    assert.ok(handoffUrl.startsWith(`${origin(clinic.slug)}/auth/handoff?code=`), handoffUrl);
    const done = await b.fetch(handoffUrl);
    assert.equal(done.status, 303);
    assert.equal(done.headers.location, '/');
    const line = ([] as string[]).concat(done.headers['set-cookie'] as string[]).find((l) => l.startsWith('clinic_session='))!;
    assert.match(line, /^clinic_session=[A-Za-z0-9_-]{40,};/);
    assert.match(line, /; HttpOnly/);
    assert.match(line, /SameSite=Lax/);
    assert.match(line, /Path=\//);
    assert.doesNotMatch(line, /Secure|Domain=/);

    // The hand-off code is spent: a second use (or a link sent to someone else) does not sign anyone in.
    const replay = await new Browser().fetch(handoffUrl);
    assert.equal(replay.status, 400);

    // The same cookie presented on another clinic's host is not a session there.
    const id = b.cookies(`${clinic.slug}.localhost`).get('clinic_session')!;
    const elsewhere = new Browser();
    elsewhere.cookies(`${other.slug}.localhost`).set('clinic_session', id);
    assert.deepEqual((await elsewhere.fetch(`${origin(other.slug)}/auth/session`)).json(), { signedIn: false, user: null });
  });

  it('a hand-off code only works in the browser that started the sign-in (login CSRF)', async () => {
    const attacker = new Browser();
    const toProvider = await attacker.follow(`${origin(clinic.slug)}/auth/login`);
    const action = /action="([^"]+)"/.exec(toProvider.res.body)![1]!;
    const post = await attacker.fetch(new URL(action, toProvider.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `email=${encodeURIComponent(uniqueEmail('attacker'))}`,
    });
    const callback = await attacker.fetch(new URL(String(post.headers.location), toProvider.url).href);
    const toHandoff = await attacker.fetch(new URL(String(callback.headers.location), toProvider.url).href);
    // The victim opens the attacker's hand-off link: no login cookie of theirs matches, nobody is signed in.
    const victim = new Browser();
    const res = await victim.fetch(String(toHandoff.headers.location));
    assert.equal(res.status, 400);
    assert.equal(victim.cookies(`${clinic.slug}.localhost`).get('clinic_session'), undefined);
  });

  it('return_to stays on the site; the callback lives on the platform host only; a stale state is a clear page', async () => {
    const b = new Browser();
    const landed = await signIn(b, origin(clinic.slug), uniqueEmail('redirect'), 'https://evil.example/x');
    assert.match(landed.body, /<title>booking<\/title>/);
    assert.equal((await new Browser().fetch(`${origin(clinic.slug)}/auth/callback?state=x&code=y`)).status, 404);
    const stale = await new Browser().fetch(`http://localhost:${w.port}/auth/callback?state=nope&code=y`);
    assert.equal(stale.status, 400);
    assert.match(stale.body, /Sign-in expired/);
  });

  it('refreshes the access token before it expires, and signs out when the refresh token is refused', async () => {
    const b = new Browser();
    await signIn(b, origin(clinic.slug), uniqueEmail('refresh'));
    const id = b.cookies(`${clinic.slug}.localhost`).get('clinic_session')!;
    const stored = await w.web.store.get<any>('session', id);
    assert.ok(stored.tokens.refreshToken, 'the provider issued a refresh token');
    const first = await b.fetch(`${origin(clinic.slug)}/v1/me`);
    assert.equal(first.status, 200, first.body);
    const after1 = await w.web.store.get<any>('session', id);
    assert.notEqual(after1.tokens.accessToken, stored.tokens.accessToken, 'a token within the margin was refreshed');
    assert.ok(after1.tokens.expiresAt >= stored.tokens.expiresAt);

    // A refresh token the provider refuses ends the session: the next call is anonymous, the session gone.
    await w.web.store.set('session', id, { ...after1, tokens: { ...after1.tokens, refreshToken: 'revoked', expiresAt: 0 } }, 600);
    assert.equal((await b.fetch(`${origin(clinic.slug)}/v1/me`)).status, 401);
    assert.equal(await w.web.store.get('session', id), null);
  });

  it('signing in again in the same browser ends the session it had on that host', async () => {
    const b = new Browser();
    await signIn(b, origin(clinic.slug), uniqueEmail('twice'));
    const first = b.cookies(`${clinic.slug}.localhost`).get('clinic_session')!;
    await signIn(b, origin(clinic.slug), uniqueEmail('twice'));
    const second = b.cookies(`${clinic.slug}.localhost`).get('clinic_session')!;
    assert.notEqual(second, first);
    assert.equal(await w.web.store.get('session', first), null);
    assert.ok(await w.web.store.get('session', second));
  });

  it('a session past its lifetime is over', async () => {
    const b = new Browser();
    await signIn(b, origin(clinic.slug), uniqueEmail('expiry'));
    const id = b.cookies(`${clinic.slug}.localhost`).get('clinic_session')!;
    const stored = await w.web.store.get<any>('session', id);
    const longAgo = Math.floor(Date.now() / 1000) - 30 * 24 * 3600;
    await w.web.store.set('session', id, { ...stored, createdAt: longAgo }, 600);
    assert.deepEqual((await b.fetch(`${origin(clinic.slug)}/auth/session`)).json(), { signedIn: false, user: null });
    // Idle for longer than the idle limit (8 h by default) is over too.
    await signIn(b, origin(clinic.slug), uniqueEmail('idle'));
    const id2 = b.cookies(`${clinic.slug}.localhost`).get('clinic_session')!;
    assert.notEqual(id2, id, 'a new sign-in gets a new session id');
    const s2 = await w.web.store.get<any>('session', id2);
    await w.web.store.set('session', id2, { ...s2, touchedAt: Math.floor(Date.now() / 1000) - 9 * 3600 }, 600);
    assert.equal((await b.fetch(`${origin(clinic.slug)}/v1/me`)).status, 401);
  });

  it('a fetch to /auth/logout gets JSON (a script navigates itself); without a session it still clears the cookie', async () => {
    const b = new Browser();
    await signIn(b, origin(clinic.slug), uniqueEmail('fetch-out'));
    const res = await b.fetch(`${origin(clinic.slug)}/auth/logout`, { method: 'POST', headers: { 'sec-fetch-mode': 'cors' } });
    assert.equal(res.status, 200);
    assert.equal(res.json().signedIn, false);
    assert.ok(res.json().endSessionUrl.startsWith(w.provider.issuer));
    const again = await b.fetch(`${origin(clinic.slug)}/auth/logout`, { method: 'POST' });
    assert.equal(again.status, 303);
    assert.equal(again.headers.location, '/');
  });
});

describe('sessions shared by instances', { skip: MODE !== 'services' && 'Redis sessions: services mode only' }, () => {
  let w: WebWorld;
  before(async () => {
    w = await startWebWorld();
  });
  after(() => w?.close());

  it('a session made on one instance works on another (Redis), and sign-out on one ends it on both', async () => {
    const second = await buildWebServer({ config: { ...w.config, port: 0 }, logger: w.t.rt.logger as never });
    try {
      const port2 = Number(new URL(await second.listen()).port);
      const org = await w.t.createOrg({ slug: uniqueSlug('pair') });
      const b = new Browser();
      await signIn(b, `http://${org.slug}.localhost:${w.port}`, uniqueEmail('pair'));
      const id = b.cookies(`${org.slug}.localhost`).get('clinic_session')!;
      const other = new Browser();
      other.cookies(`${org.slug}.localhost`).set('clinic_session', id);
      const there = await other.fetch(`http://${org.slug}.localhost:${port2}/auth/session`);
      assert.equal(there.json().signedIn, true);
      await other.fetch(`http://${org.slug}.localhost:${port2}/auth/logout`, { method: 'POST' });
      assert.equal((await b.fetch(`http://${org.slug}.localhost:${w.port}/auth/session`)).json().signedIn, false);
    } finally {
      await second.close();
    }
  });
});

describe('settings of sign-in', () => {
  it('the development provider refuses to run with a production setting', async () => {
    const issuer = await createDevIssuer({ dataDir: null, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
    const logger = { info() {}, warn() {} };
    await assert.rejects(
      startDevOidcProvider({
        config: { env: 'production', auth: { mode: 'development' } },
        devIssuer: issuer,
        host: '127.0.0.1',
        port: 0,
        logger,
      }),
      DevOidcRefused,
    );
    await assert.rejects(
      startDevOidcProvider({
        config: { env: 'development', auth: { mode: 'jwks' } },
        devIssuer: issuer,
        host: '127.0.0.1',
        port: 0,
        logger,
      }),
      DevOidcRefused,
    );
    assert.throws(() => assertDevelopmentOnly({ env: 'production', authMode: 'development', jwksUrlSet: false }), DevOidcRefused);
    assert.throws(() => assertDevelopmentOnly({ env: 'development', authMode: 'jwks', jwksUrlSet: true }), DevOidcRefused);
    assertDevelopmentOnly({ env: 'development', authMode: 'development', jwksUrlSet: false });
  });

  it('production needs a provider by discovery URL with a client, and a session secret', () => {
    assert.throws(() => parseWebConfig({ NODE_ENV: 'production' }), WebConfigError);
    const base = {
      NODE_ENV: 'production',
      OIDC_ISSUER_URL: 'https://id.example.com/',
      OIDC_CLIENT_ID: 'web',
      OIDC_CLIENT_SECRET: 's',
    };
    assert.throws(() => parseWebConfig(base), /WEB_SESSION_SECRET/);
    assert.throws(() => parseWebConfig({ ...base, WEB_SESSION_SECRET: 'x'.repeat(32), OIDC_ISSUER_URL: 'http://id.example.com' }), /https/);
    assert.throws(() => parseWebConfig({ ...base, WEB_SESSION_SECRET: 'x'.repeat(32), OIDC_CLIENT_SECRET: '' }), /OIDC_CLIENT_ID/);
    const ok = parseWebConfig({ ...base, WEB_SESSION_SECRET: 'x'.repeat(32), OIDC_AUTH_PARAMS: 'audience=https://api.example.com' });
    assert.equal(ok.oidc?.issuerUrl, 'https://id.example.com');
    assert.deepEqual(ok.oidc?.extraAuthParams, { audience: 'https://api.example.com' });
    assert.equal(ok.port, 3003);
    assert.equal(ok.platformDomain, 'localhost');
  });
});
