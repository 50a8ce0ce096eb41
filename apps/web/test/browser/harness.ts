import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { createDevIssuer } from '../../../core-api/src/platform/auth/dev-issuer.ts';
import { ensureFrontEndBuilt } from '../../src/build.ts';

/**
 * The browser-test harness (web contract): the whole embedded platform started as `npm start` does
 * (every service, free ports, a temporary DATA_DIR, the demo clinic seeded, the front end built when
 * missing or stale), and Debian's Chromium driven by playwright-core.
 *
 *   import { startPlatform, skipWithoutChromium } from './harness.ts';
 *   describe('booking', { skip: skipWithoutChromium() }, () => {
 *     let p: Platform;
 *     before(async () => { p = await startPlatform(); });
 *     after(() => p?.close());
 *     it('books', async () => {
 *       const page = await p.newPage();            // a fresh context (own cookies) per call
 *       await page.goto(p.urls.booking);           // http://demo.localhost:<port>/
 *       await page.getByRole('button', { name: 'Book' }).click();
 *       await p.screenshot(page, 'booking-start'); // test-artifacts/screenshots/booking-start.png
 *     });
 *   });
 *
 * Services mode (TEST_MODE=services): the same processes with REDIS_URL set (counters, idempotency and
 * the proxy's sessions in Redis under a fresh key prefix); the database stays embedded, because `npm start`
 * runs every service in one process only on PGlite.
 */

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** The contract's flags: no sandbox (root in CI), no GPU, no background traffic. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const REPO_ROOT = resolve(import.meta.dirname, '../../../..');
export const SCREENSHOT_DIR = join(REPO_ROOT, 'test-artifacts', 'screenshots');

/**
 * For `describe(..., { skip })`: a message when Chromium is absent, else false. With REQUIRE_CHROMIUM=1
 * (CI) an absent Chromium is a failure, never a silent skip.
 */
export function skipWithoutChromium(): string | false {
  if (existsSync(CHROMIUM_PATH)) return false;
  if (process.env.REQUIRE_CHROMIUM === '1') throw new Error(`REQUIRE_CHROMIUM=1 but ${CHROMIUM_PATH} is missing: apt-get install chromium`);
  return `browser tests skipped: ${CHROMIUM_PATH} is missing (apt-get install chromium; REQUIRE_CHROMIUM=1 makes this a failure)`;
}

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

export interface Platform {
  browser: Browser;
  urls: {
    core: string;
    telemetry: string;
    web: string;
    /** The platform's own host (not a clinic): http://localhost:<web port>. */
    platform: string;
    /** The demo clinic: http://demo.localhost:<web port>/ and /portal. */
    booking: string;
    portal: string;
    /** The development OpenID provider. */
    issuer: string;
  };
  ports: { core: number; telemetry: number; composer: number; web: number; oidc: number };
  dataDir: string;
  /** http://<slug>.localhost:<web port> */
  clinicUrl(slug: string): string;
  /** A page in a fresh browser context (its own cookies), closed with the platform. */
  newPage(opts?: { viewport?: { width: number; height: number }; locale?: string; timezoneId?: string }): Promise<Page>;
  newContext(opts?: Parameters<Browser['newContext']>[0]): Promise<BrowserContext>;
  /** Saves a full-page PNG under test-artifacts/screenshots/<name>.png (kept by the run, not committed). */
  screenshot(page: Page, name: string): Promise<string>;
  /** A bearer token of the platform's development issuer (as `npm run -s token -- <email>`), for API set-up calls. */
  token(email: string): Promise<string>;
  /** Everything the server wrote so far (stdout and stderr), for failure messages. */
  output(): string;
  close(): Promise<void>;
}

/** Starts the platform (about 20-60 s on a loaded machine: migrations, demo seed, maybe the front-end build). */
export async function startPlatform(opts: { env?: Record<string, string>; startTimeoutMs?: number } = {}): Promise<Platform> {
  const dataDir = await mkdtemp(join(tmpdir(), 'clinic-browser-'));
  const ports = {
    core: await freePort(),
    telemetry: await freePort(),
    composer: await freePort(),
    web: await freePort(),
    oidc: await freePort(),
  };
  const services = process.env.TEST_MODE === 'services';
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    NODE_ENV: 'development',
    LOG_LEVEL: process.env.PLATFORM_LOG_LEVEL ?? 'warn',
    DATA_DIR: dataDir,
    PORT: String(ports.core),
    TELEMETRY_PORT: String(ports.telemetry),
    COMPOSER_PORT: String(ports.composer),
    WEB_PORT: String(ports.web),
    DEV_OIDC_PORT: String(ports.oidc),
    // Browser tests click fast and often from one address: lift the per-address limits.
    RATELIMIT_API_LIMIT: '100000',
    RATELIMIT_PUBLIC_LIMIT: '100000',
    RATELIMIT_PUBLIC_RESOLVE_LIMIT: '100000',
    RATELIMIT_HOLDS_PER_IP: '100000',
    ...(services
      ? {
          REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
          REDIS_KEY_PREFIX: `browser:${randomBytes(6).toString('hex')}:`,
        }
      : {}),
    ...opts.env,
  };
  delete env.DATABASE_URL;
  delete env.TEST_DB_TEMPLATE;
  // Built once here, under a lock shared by every browser test file, rather than by each server.
  await ensureFrontEndBuilt(join(REPO_ROOT, 'apps', 'web', 'dist'), (line) => process.stderr.write(`${line}\n`));
  env.WEB_BUILD_ON_START = 'off';
  const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
  const child: ChildProcess = spawn(tsx, ['apps/core-api/src/main.ts'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const stopChild = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((ok) => child.once('exit', ok));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(killer);
  };
  try {
    await new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`the platform did not start in time:\n${output}`)), opts.startTimeoutMs ?? 240_000);
      const check = () => {
        if (/Patient portal/.test(output)) {
          clearTimeout(timer);
          ok();
        }
      };
      child.stdout!.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`the platform exited (${code}) before it started:\n${output}`));
      });
    });
  } catch (err) {
    await stopChild();
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const browser = await chromium
    .launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true })
    .catch(async (err: Error) => {
      await stopChild();
      throw err;
    });
  const issuer = await createDevIssuer({ dataDir, issuer: 'clinic-platform-dev-issuer', audience: 'clinic-platform' });
  const contexts: BrowserContext[] = [];
  const web = `http://127.0.0.1:${ports.web}`;
  const platform: Platform = {
    browser,
    ports,
    dataDir,
    urls: {
      core: `http://127.0.0.1:${ports.core}`,
      telemetry: `http://127.0.0.1:${ports.telemetry}`,
      web,
      platform: `http://localhost:${ports.web}`,
      booking: `http://demo.localhost:${ports.web}/`,
      portal: `http://demo.localhost:${ports.web}/portal`,
      issuer: `http://127.0.0.1:${ports.oidc}`,
    },
    clinicUrl: (slug) => `http://${slug}.localhost:${ports.web}`,
    async newContext(o) {
      const ctx = await browser.newContext(o);
      contexts.push(ctx);
      return ctx;
    },
    async newPage(o = {}) {
      const ctx = await platform.newContext(o);
      return ctx.newPage();
    },
    async screenshot(page, name) {
      await mkdir(SCREENSHOT_DIR, { recursive: true });
      const path = join(SCREENSHOT_DIR, `${name.replace(/[^A-Za-z0-9_.-]/g, '-')}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    token: (email) => issuer.sign(email),
    output: () => output,
    async close() {
      for (const ctx of contexts) await ctx.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
      await stopChild();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return platform;
}
