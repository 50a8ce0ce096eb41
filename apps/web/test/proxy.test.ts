import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { uniqueSlug } from '../../core-api/test/helpers.ts';
import { Browser, startWebWorld, type WebWorld } from './support.ts';

/** The page context block of an app page, parsed as the UI parses it. */
function pageContext(html: string): any {
  const m = /<script id="page-context" type="application\/json">([^<]*)<\/script>/.exec(html);
  assert.ok(m, `no page context in ${html.slice(0, 300)}`);
  return JSON.parse(m[1]!);
}

const cookieLines = (res: { headers: Record<string, unknown> }) => {
  const v = res.headers['set-cookie'];
  return (v === undefined ? [] : Array.isArray(v) ? v : [v]) as string[];
};
const cookieLine = (res: { headers: Record<string, unknown> }, name: string) => cookieLines(res).find((l) => l.startsWith(`${name}=`));

describe('web proxy: hosts, cookies, headers, CSRF', () => {
  let w: WebWorld;
  let a: { id: string; slug: string; name: string };
  let b: { id: string; slug: string; name: string };
  let custom: { id: string; slug: string; name: string };
  const at = (host: string, path = '/') => `http://${host}:${w.port}${path}`;

  before(async () => {
    w = await startWebWorld({
      coreEnv: { RATELIMIT_PUBLIC_RESOLVE_LIMIT: '20' },
      webEnv: { WEB_TRUST_PROXY: 'loopback', WEB_HOST_CACHE_SECONDS: '60', WEB_BODY_LIMIT_BYTES: '2048' },
    });
    a = await w.t.createOrg({ slug: uniqueSlug('a'), name: 'Clinic A', language_code: 'ro' });
    b = await w.t.createOrg({ slug: uniqueSlug('b'), name: 'Clinic B & "Sons" </script>' });
    custom = await w.t.createOrg({ slug: uniqueSlug('c'), name: 'Custom Clinic' });
    await w.t.db.query(
      `insert into organization_domains (organization_id, domain, verification_token, verified_at) values ($1, 'book.custom-clinic.test', 'x', now())`,
      [custom.id],
    );
    // An unverified domain does not count.
    await w.t.db.query(
      `insert into organization_domains (organization_id, domain, verification_token) values ($1, 'pending.custom-clinic.test', 'y')`,
      [custom.id],
    );
  });
  after(() => w?.close());

  it('a subdomain of the platform domain is its clinic: the booking page with that clinic in the page context', async () => {
    const res = await new Browser().fetch(at(`${a.slug}.localhost`));
    assert.equal(res.status, 200);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.deepEqual(pageContext(res.body), {
      organization: { id: a.id, slug: a.slug, name: 'Clinic A', language_code: 'ro' },
      language: 'ro',
      signedIn: false,
      user: null,
      platformDomain: 'localhost',
    });
    const portal = await new Browser().fetch(at(`${a.slug}.localhost`, '/portal/appointments/x'));
    assert.equal(portal.status, 200);
    assert.match(portal.body, /<title>portal<\/title>/);
    assert.equal(pageContext(portal.body).organization.id, a.id);
  });

  it('the page context is HTML-safe JSON: a name with < > & " cannot end the script block', async () => {
    const res = await new Browser().fetch(at(`${b.slug}.localhost`));
    assert.doesNotMatch(res.body, /<\/script> /);
    assert.equal(pageContext(res.body).organization.name, 'Clinic B & "Sons" </script>');
  });

  it('a verified custom domain is its clinic; an unverified one and an unknown host get the 404 page', async () => {
    const res = await new Browser().fetch(at('book.custom-clinic.test'));
    assert.equal(res.status, 200);
    assert.equal(pageContext(res.body).organization.id, custom.id);
    for (const host of ['pending.custom-clinic.test', 'nobody-here.localhost', 'a.b.localhost', '127.0.0.1']) {
      const miss = await new Browser().fetch(at(host));
      assert.equal(miss.status, 404, host);
      assert.match(String(miss.headers['content-type']), /text\/html/);
      assert.match(miss.body, /<h1>Clinic not found<\/h1>/);
      assert.doesNotMatch(miss.body, /at \S+\.ts:\d+/);
    }
    // The API paths of an unknown host answer in the error envelope.
    const api = await new Browser().fetch(at('nobody-here.localhost', '/v1/public/services'));
    assert.equal(api.status, 404);
    assert.equal(api.json().error.code, 'organization_not_found');
  });

  it('the platform host itself is not a clinic: a landing page, no clinic cookies, no clinic forwarding', async () => {
    const res = await new Browser().fetch(at('localhost'));
    assert.equal(res.status, 200);
    assert.doesNotMatch(res.body, /page-context/);
    assert.equal(cookieLine(res, 'org-id'), undefined);
    assert.equal((await new Browser().fetch(at('localhost', '/portal'))).status, 404);
  });

  it('answers are cached per host: host A never answers with host B, and a rename shows after the cache lifetime only', async () => {
    const before = w.web.hosts.size();
    const first = pageContext((await new Browser().fetch(at(`${a.slug}.localhost`))).body);
    const other = pageContext((await new Browser().fetch(at(`${b.slug}.localhost`))).body);
    assert.equal(first.organization.id, a.id);
    assert.equal(other.organization.id, b.id);
    await w.t.db.query(`update organizations set name = 'Renamed A' where id = $1`, [a.id]);
    // Cached (60 s here): the next page still says Clinic A, and B is still B.
    assert.equal(pageContext((await new Browser().fetch(at(`${a.slug}.localhost`))).body).organization.name, 'Clinic A');
    assert.equal(pageContext((await new Browser().fetch(at(`${b.slug}.localhost`))).body).organization.id, b.id);
    assert.ok(w.web.hosts.size() >= before);
    await w.t.db.query(`update organizations set name = 'Clinic A' where id = $1`, [a.id]);
  });

  it('look-ups count against the visitor, not the proxy: one address over the resolve limit does not lock out another', async () => {
    const hit = (host: string, ip: string) => new Browser().fetch(at(host), { headers: { 'x-forwarded-for': ip } });
    // The API allows 20 look-ups per address here; each unknown host is a look-up of its own.
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) statuses.push((await hit(`${uniqueSlug('none')}.localhost`, '203.0.113.7')).status);
    assert.ok(statuses.includes(429), `one address goes over its limit: ${statuses}`);
    const limited = await hit(`${uniqueSlug('none')}.localhost`, '203.0.113.7');
    assert.equal(limited.status, 429);
    assert.ok(limited.headers['retry-after']);
    // Another visitor is not affected.
    assert.equal((await hit(`${uniqueSlug('none')}.localhost`, '198.51.100.9')).status, 404);
  });

  it('sets the rule-12 cookies: org-id, org-slug, org-name httpOnly, language readable; SameSite=Lax; Secure off loopback', async () => {
    const res = await new Browser().fetch(at(`${a.slug}.localhost`));
    for (const name of ['org-id', 'org-slug', 'org-name']) {
      const line = cookieLine(res, name);
      assert.ok(line, name);
      assert.match(line, /; HttpOnly/);
      assert.match(line, /SameSite=Lax/);
      assert.doesNotMatch(line, /Secure/);
      assert.doesNotMatch(line, /Domain=/i);
    }
    assert.match(cookieLine(res, 'org-id')!, new RegExp(`^org-id=${a.id};`));
    assert.match(cookieLine(res, 'org-name')!, /^org-name=Clinic%20A;/);
    const language = cookieLine(res, 'language')!;
    assert.match(language, /^language=ro;/);
    assert.doesNotMatch(language, /HttpOnly/);
    // A custom domain is served over https: every cookie is Secure there.
    const secure = await new Browser().fetch(at('book.custom-clinic.test'));
    for (const name of ['org-id', 'org-slug', 'org-name', 'language']) assert.match(cookieLine(secure, name)!, /; Secure/, name);
  });

  it("the visitor's own language choice (en or ro) wins over the clinic's; anything else falls back", async () => {
    const browser = new Browser();
    browser.cookies(`${a.slug}.localhost`).set('language', 'en');
    const res = await browser.fetch(at(`${a.slug}.localhost`));
    assert.equal(pageContext(res.body).language, 'en');
    assert.match(cookieLine(res, 'language')!, /^language=en;/);
    const odd = new Browser();
    odd.cookies(`${b.slug}.localhost`).set('language', 'fr');
    assert.equal(pageContext((await odd.fetch(at(`${b.slug}.localhost`))).body).language, 'en');
    await w.t.db.query(`update organizations set language_code = 'de' where id = $1`, [custom.id]);
  });

  it('a forged organization parameter or X-Organization-ID from the browser is replaced by the host’s clinic', async () => {
    const su = await w.t.superadmin();
    const loc = await w.t.call('POST', `/v1/organizations/${b.id}/locations`, {
      token: su,
      body: { name: 'Only at B', timezone: 'Europe/Bucharest' },
    });
    assert.equal(loc.statusCode, 201, loc.body);
    const names = async (host: string, query: string) => {
      const res = await new Browser().fetch(at(host, `/v1/public/locations${query}`), { headers: { 'x-organization-id': b.id } });
      assert.equal(res.status, 200, res.body);
      return res.json().data.map((l: { name: string }) => l.name);
    };
    assert.deepEqual(await names(`${b.slug}.localhost`, ''), ['Only at B']);
    // On A's host, asking for B by parameter and by header still answers with A's (none).
    assert.deepEqual(await names(`${a.slug}.localhost`, `?organization=${b.slug}`), []);
    assert.deepEqual(await names(`${a.slug}.localhost`, `?organization=${b.id}`), []);
    // The client's own Authorization is dropped too: without a session the call is anonymous.
    const token = await w.t.token('forger@example.com');
    const me = await new Browser().fetch(at(`${a.slug}.localhost`, '/v1/me'), { headers: { authorization: `Bearer ${token}` } });
    assert.equal(me.status, 401);
  });

  it('strict CSP and the other security headers on pages, API answers and error pages', async () => {
    for (const [host, path] of [
      [`${a.slug}.localhost`, '/'],
      [`${a.slug}.localhost`, '/v1/public/services'],
      ['nobody.localhost', '/'],
      ['localhost', '/'],
    ] as const) {
      const res = await new Browser().fetch(at(host, path));
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/, `${host}${path}`);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /style-src 'self'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /object-src 'none'/);
      assert.match(csp, new RegExp(`form-action 'self' ${w.provider.issuer.replace(/\./g, '\\.')}`));
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['referrer-policy'], 'strict-origin-when-cross-origin');
      assert.equal(res.headers['x-frame-options'], 'DENY');
    }
  });

  it('CSRF: a state-changing request from another origin, or without Origin, is refused 403 in the envelope', async () => {
    const url = at(`${a.slug}.localhost`, '/v1/public/holds');
    const body = JSON.stringify({ organization: a.id });
    const headers = { 'content-type': 'application/json' };
    const evil = await new Browser().fetch(url, { method: 'POST', headers, body, origin: 'http://evil.example' });
    assert.equal(evil.status, 403);
    assert.equal(evil.json().error.code, 'forbidden');
    // Another clinic's page is another origin too.
    const sibling = await new Browser().fetch(url, { method: 'POST', headers, body, origin: `http://${b.slug}.localhost:${w.port}` });
    assert.equal(sibling.status, 403);
    const none = await new Browser().fetch(url, { method: 'POST', headers, body, origin: null });
    assert.equal(none.status, 403);
    const logout = await new Browser().fetch(at(`${a.slug}.localhost`, '/auth/logout'), { method: 'POST', origin: 'http://evil.example' });
    assert.equal(logout.status, 403);
    // The page's own origin passes through to the API (which judges the body).
    const own = await new Browser().fetch(url, { method: 'POST', headers, body });
    assert.notEqual(own.status, 403);
    assert.ok(own.status < 500, own.body);
  });

  it('forwarded bodies are limited (413 in the envelope), and static assets are served immutable', async () => {
    const big = await new Browser().fetch(at(`${a.slug}.localhost`, '/v1/public/holds'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(4096) }),
    });
    assert.equal(big.status, 413);
    assert.ok(big.json().error.code);
    const asset = await new Browser().fetch(at(`${a.slug}.localhost`, '/assets/app.js'));
    assert.equal(asset.status, 200);
    assert.match(String(asset.headers['cache-control']), /immutable/);
    assert.match(String(asset.headers['content-type']), /javascript/);
    assert.equal((await new Browser().fetch(at(`${a.slug}.localhost`, '/assets/..%2f..%2fetc%2fpasswd'))).status, 404);
  });

  it('health and docs answer on any host', async () => {
    const health = await new Browser().fetch(at('127.0.0.1', '/health'));
    assert.equal(health.status, 200);
    assert.equal(health.json().status, 'healthy');
    const docs = await new Browser().fetch(at('127.0.0.1', '/openapi.json'));
    assert.equal(docs.status, 200);
    assert.ok(docs.json().paths['/auth/login']);
  });
});

describe('web proxy without a built front end', () => {
  let w: WebWorld;
  before(async () => {
    w = await startWebWorld({ distDir: null });
  });
  after(() => w?.close());

  it('says how to build it instead of failing', async () => {
    const org = await w.t.createOrg({ slug: uniqueSlug('nb') });
    const res = await new Browser().fetch(`http://${org.slug}.localhost:${w.port}/`);
    assert.equal(res.status, 503);
    assert.match(res.body, /npm run build -w @clinic\/web/);
  });
});
