// The web proxy's overhead on an API call: GET /v1/me through the proxy (session cookie -> bearer token,
// host -> X-Organization-ID, answer streamed back) beside the same call straight to the core API (bearer
// and X-Organization-ID sent by the client), measured side by side in one run on PostgreSQL and Redis as in
// production, the proxy in its own process as `npm run web` runs it. Prints requests per second, p50/p99 and
// the ratio proxied/direct (target >= 0.8).
// Run: npx tsx bench/web-proxy.ts (PostgreSQL at BENCH_DATABASE_URL, Redis at BENCH_REDIS_URL). About 60 s.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { NO_RATE_LIMITS, load, row } from './support.ts';

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

process.env.TEST_MODE = 'services';
process.env.TEST_DATABASE_URL ??= process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
process.env.TEST_REDIS_URL ??= process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
process.env.LOG_LEVEL ??= 'warn';
// The test world reads the mode when it is imported: after the settings above.
const { Browser, fakeDist, signIn, startWebWorld } = await import('../apps/web/test/support.ts');

const w = await startWebWorld({ coreEnv: { ...NO_RATE_LIMITS } });
const port = await freePort();
const secret = randomBytes(32).toString('hex');
const proxy = spawn(join(import.meta.dirname, '..', 'node_modules', '.bin', 'tsx'), ['apps/web/src/main.ts'], {
  cwd: join(import.meta.dirname, '..'),
  stdio: ['ignore', 'ignore', 'inherit'],
  env: {
    ...process.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'error',
    WEB_PORT: String(port),
    CORE_API_URL: w.coreUrl,
    TELEMETRY_URL: w.coreUrl,
    WEB_DIST_DIR: await fakeDist(),
    OIDC_ISSUER_URL: w.provider.issuer,
    OIDC_CLIENT_ID: w.provider.clientId,
    OIDC_CLIENT_SECRET: w.provider.clientSecret,
    OIDC_SCOPE: w.config.oidc!.scope,
    REDIS_URL: process.env.TEST_REDIS_URL,
    REDIS_KEY_PREFIX: w.t.config.redisKeyPrefix,
    WEB_SESSION_SECRET: secret,
  },
});
try {
  for (let i = 0; ; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
    if (up?.ok) break;
    if (i > 120) throw new Error('the proxy did not start');
    await new Promise((r) => setTimeout(r, 500));
  }
  const org = await w.t.createOrg({ slug: `bench-${Date.now()}` });
  await w.t.publishPrivacyNotice(org.id);
  const browser = new Browser();
  const host = `${org.slug}.localhost:${port}`;
  const email = 'bench-patient@example.com';
  await signIn(browser, `http://${host}`, email);
  const cookie = `clinic_session=${browser.cookies(`${org.slug}.localhost`).get('clinic_session')}`;
  // The first call provisions the user and links the patient; both paths then read the same rows as the
  // same person (the development issuer's token for the same email has the same subject).
  const first = await browser.fetch(`http://${host}/v1/me`);
  if (first.status !== 200) throw new Error(`proxied /v1/me answered ${first.status}: ${first.body}`);
  const direct = { authorization: `Bearer ${await w.t.token(email)}`, 'x-organization-id': org.id };
  const proxied = { host, cookie };

  // Warm both paths (connection pools, caches, JIT), then alternate the measurements.
  await load(`${w.coreUrl}/v1/me`, direct, 2);
  await load(`http://127.0.0.1:${port}/v1/me`, proxied, 2);
  if (process.env.BENCH_PARTS) {
    console.log(row('proxy /health', await load(`http://127.0.0.1:${port}/health`, {}, 4)));
    console.log(row('proxy /auth/session (host + session)', await load(`http://127.0.0.1:${port}/auth/session`, proxied, 4)));
    console.log(
      row('proxy /v1/public/system-info (no session)', await load(`http://127.0.0.1:${port}/v1/public/system-info`, { host }, 4)),
    );
    console.log(row('direct /v1/public/system-info', await load(`${w.coreUrl}/v1/public/system-info`, {}, 4)));
    const { createSealedStore } = await import('../apps/web/src/server/store.ts');
    const { Redis } = await import('ioredis');
    const r = new Redis(process.env.TEST_REDIS_URL!);
    const st = createSealedStore({ secret, redis: { client: r, keyPrefix: w.t.config.redisKeyPrefix, owned: true } });
    const sess = await st.get<any>('session', cookie.split('=')[1]!);
    console.log(
      row(
        'direct /v1/me provider token',
        await load(`${w.coreUrl}/v1/me`, { ...direct, authorization: `Bearer ${sess.tokens.accessToken}` }, 4),
      ),
    );
    console.log(row('direct /v1/me cli token', await load(`${w.coreUrl}/v1/me`, direct, 4)));
    await st.close();
  }
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const results: Array<{ d: Awaited<ReturnType<typeof load>>; p: Awaited<ReturnType<typeof load>> }> = [];
  for (let i = 0; i < rounds; i++) {
    const d = await load(`${w.coreUrl}/v1/me`, direct);
    const p = await load(`http://127.0.0.1:${port}/v1/me`, proxied);
    results.push({ d, p });
    console.log(row(`direct  GET /v1/me (round ${i + 1})`, d));
    console.log(row(`proxied GET /v1/me (round ${i + 1})`, p));
  }
  const sum = (k: 'd' | 'p') => results.reduce((n, r) => n + r[k].rps, 0);
  const ratio = sum('p') / sum('d');
  const errors = results.reduce((n, r) => n + r.d.errors + r.d.non2xx + r.p.errors + r.p.non2xx, 0);
  console.log(`\nproxied / direct: ${ratio.toFixed(2)} (target >= 0.8)${errors ? `   ERRORS: ${errors}` : ''}`);
} finally {
  proxy.kill('SIGTERM');
  await w.close();
}
