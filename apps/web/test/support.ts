import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startTestApp, type TestApp, REDIS_URL } from '../../core-api/test/helpers.ts';
import { DEV_OIDC_SCOPE, type DevOidcProvider, startDevOidcProvider } from '../../core-api/src/platform/auth/dev-oidc.ts';
import { buildWebServer, parseWebConfig, type WebConfig, type WebServer } from '../src/index.ts';

/** A built front end stand-in: the three pages with a `</head>` for the page context, and one asset. */
export async function fakeDist(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'web-dist-'));
  for (const app of ['booking', 'portal', 'clinic']) {
    await mkdir(join(dir, app), { recursive: true });
    await writeFile(
      join(dir, app, 'index.html'),
      `<!doctype html><html><head><title>${app}</title><script type="module" src="/assets/app.js"></script></head><body><div id="root"></div></body></html>`,
    );
  }
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'assets', 'app.js'), 'console.log("app");\n');
  return dir;
}

export interface WebWorld {
  t: TestApp;
  coreUrl: string;
  provider: DevOidcProvider;
  web: WebServer;
  config: WebConfig;
  /** Port of the proxy: reach any host through 127.0.0.1 with a Host header. */
  port: number;
  close(): Promise<void>;
}

/**
 * A core API listening on loopback (trusting the proxy's X-Forwarded-For, as the embedded default
 * does), the development OpenID provider, and the proxy in front of both. In services mode the proxy's
 * sessions are in Redis under the test's own key prefix.
 */
export async function startWebWorld(
  opts: { coreEnv?: Record<string, string>; webEnv?: Record<string, string>; accessTokenTtlSeconds?: number; distDir?: string | null } = {},
): Promise<WebWorld> {
  const t = await startTestApp({ env: { TRUST_PROXY: 'loopback', ...opts.coreEnv } });
  const coreUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const provider = await startDevOidcProvider({
    config: t.config,
    devIssuer: t.issuer,
    host: '127.0.0.1',
    port: 0,
    accessTokenTtlSeconds: opts.accessTokenTtlSeconds,
    logger: t.rt.logger,
  });
  const distDir = opts.distDir === undefined ? await fakeDist() : (opts.distDir ?? join(tmpdir(), 'web-dist-missing'));
  const config = parseWebConfig({
    NODE_ENV: 'test',
    WEB_PORT: '0',
    CORE_API_URL: coreUrl,
    TELEMETRY_URL: coreUrl,
    WEB_DIST_DIR: distDir,
    OIDC_ISSUER_URL: provider.issuer,
    OIDC_CLIENT_ID: provider.clientId,
    OIDC_CLIENT_SECRET: provider.clientSecret,
    OIDC_SCOPE: DEV_OIDC_SCOPE,
    ...(REDIS_URL ? { REDIS_URL, REDIS_KEY_PREFIX: t.config.redisKeyPrefix } : {}),
    ...opts.webEnv,
  });
  const web = await buildWebServer({ config, logger: t.rt.logger as never });
  const url = await web.listen();
  return {
    t,
    coreUrl,
    provider,
    web,
    config,
    port: Number(new URL(url).port),
    async close() {
      await web.close();
      await provider.close();
      await t.close();
    },
  };
}

export interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json(): any;
}

/**
 * A browser-like client over plain HTTP: a cookie jar per host name (cookies never cross hosts, as in a
 * browser), requests to `http://<host>:<port>/...` sent to loopback with that Host header, an Origin
 * header on non-GET like a browser's same-origin request (unless told otherwise).
 */
export class Browser {
  jar = new Map<string, Map<string, string>>();

  cookies(host: string): Map<string, string> {
    const m = this.jar.get(host) ?? new Map<string, string>();
    this.jar.set(host, m);
    return m;
  }

  async fetch(
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string; origin?: string | null; remoteAddress?: string } = {},
  ): Promise<Res> {
    const u = new URL(url);
    const method = init.method ?? 'GET';
    const headers: Record<string, string> = { host: u.host, ...init.headers };
    const jar = this.cookies(u.hostname);
    if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET' && method !== 'HEAD' && init.origin !== null) headers.origin = init.origin ?? u.origin;
    const target = new URL(u.pathname + u.search, `http://127.0.0.1:${u.port || 80}`);
    const res = await request(target, { method: method as 'GET', headers, body: init.body });
    const body = await res.body.text();
    const set = res.headers['set-cookie'];
    for (const line of set === undefined ? [] : Array.isArray(set) ? set : [set]) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return { status: res.statusCode, headers: res.headers as Res['headers'], body, json: () => JSON.parse(body) };
  }

  /** Follows redirects (relative or absolute) up to `max`, returning every hop's response. */
  async follow(url: string, max = 10): Promise<{ res: Res; url: string; hops: string[] }> {
    let current = url;
    const hops: string[] = [];
    for (let i = 0; i < max; i++) {
      const res = await this.fetch(current);
      const loc = res.headers.location;
      if (res.status < 300 || res.status >= 400 || typeof loc !== 'string') return { res, url: current, hops };
      current = new URL(loc, current).href;
      hops.push(current);
    }
    throw new Error(`too many redirects from ${url}`);
  }
}

/** Signs in on `clinicOrigin` through the development provider's page, as a browser does; returns the final page. */
export async function signIn(b: Browser, clinicOrigin: string, email: string, returnTo = '/portal'): Promise<Res> {
  const toProvider = await b.follow(`${clinicOrigin}/auth/login?return_to=${encodeURIComponent(returnTo)}`);
  // Still signed in at the provider (no sign-out there): it sends the browser straight back.
  if (toProvider.url.startsWith(clinicOrigin)) return toProvider.res;
  // The provider redirects to its interaction page: a form with one Email field and a Sign in button.
  const form = toProvider.res.body;
  const action = /<form method="post" action="([^"]+)"/.exec(form)?.[1];
  if (!action) throw new Error(`no sign-in form at ${toProvider.url}: ${toProvider.res.status} ${form.slice(0, 300)}`);
  const post = await b.fetch(new URL(action, toProvider.url).href, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email }).toString(),
  });
  if (post.status !== 303 && post.status !== 302) throw new Error(`sign-in form answered ${post.status}: ${post.body.slice(0, 300)}`);
  const done = await b.follow(new URL(String(post.headers.location), toProvider.url).href);
  return done.res;
}
