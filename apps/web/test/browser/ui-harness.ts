/**
 * The UI's own browser-test stack, for what needs no sign-in: the platform (`main.ts` on free ports, a
 * temporary data folder, short holds), a bookable clinic (dev-clinic.ts) and the Vite development server
 * of apps/web/ui in front of it, which forwards /v1 with the clinic's X-Organization-ID and injects its page
 * context, as the proxy does. Screens behind sign-in use the proxy's harness (harness.ts).
 *
 * Chromium: Debian's /usr/bin/chromium; without it the tests skip, unless REQUIRE_CHROMIUM=1.
 */
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { freePort, ROOT, servicePorts, spawnTracked, stopChild, waitForOutput } from '../../../core-api/test/support/processes.ts';
import { createDevClinic, type DevClinic } from './dev-clinic.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, SCREENSHOT_DIR } from './harness.ts';

export interface UiStack {
  browser: Browser;
  clinic: DevClinic;
  apiUrl: string;
  /** The booking page and the portal on the Vite server. */
  bookingUrl: string;
  portalUrl: string;
  screenshot(page: Page, name: string): Promise<void>;
  /** Another Vite server signed in with this bearer token (as the proxy would be after sign-in); its portal URL. */
  signedInPortal(token: string, email: string): Promise<string>;
  close(): Promise<void>;
}

export async function startUiStack(opts: { holdMinutes?: number } = {}): Promise<UiStack> {
  const dataDir = await mkdtemp(join(tmpdir(), 'clinic-ui-test-'));
  const ports = { ...(await servicePorts()), WEB_PORT: String(await freePort()), DEV_OIDC_PORT: String(await freePort()) };
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    ...ports,
    SCHEDULING_HOLD_MINUTES: String(opts.holdMinutes ?? 10),
    RATELIMIT_HOLDS_PER_IP: '100000',
    RATELIMIT_PUBLIC_LIMIT: '100000',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const platform = spawnTracked(process.execPath, ['--import', 'tsx', 'apps/core-api/src/main.ts'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { match } = await waitForOutput(platform, /Core API\s+(http:\/\/\S+)/);
  const apiUrl = match[1]!;
  const clinic = await createDevClinic(apiUrl, { slug: `ui${Date.now().toString(36)}`, env });

  // The Vite config reads these when it loads.
  Object.assign(process.env, {
    DEV_API_URL: apiUrl,
    DEV_TELEMETRY_URL: `http://127.0.0.1:${ports.TELEMETRY_PORT}`,
    DEV_ORG_ID: clinic.id,
    DEV_ORG_SLUG: clinic.slug,
    DEV_ORG_NAME: clinic.name,
  });
  const { createServer } = await import('vite');
  const servers: { close(): Promise<void> }[] = [];
  const startVite = async (extra: Record<string, string | undefined>) => {
    const saved = { DEV_TOKEN: process.env.DEV_TOKEN, DEV_EMAIL: process.env.DEV_EMAIL };
    Object.assign(process.env, extra);
    const port = await freePort();
    const server = await createServer({
      configFile: join(ROOT, 'apps/web/ui/vite.config.ts'),
      server: { port, strictPort: true, host: '127.0.0.1' },
      logLevel: 'warn',
    });
    await server.listen();
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    servers.push(server);
    return `http://127.0.0.1:${port}`;
  };
  const base = await startVite({});

  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    browser,
    clinic,
    apiUrl,
    bookingUrl: `${base}/booking/`,
    portalUrl: `${base}/portal/`,
    async screenshot(page, name) {
      await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
    },
    async signedInPortal(token, email) {
      return `${await startVite({ DEV_TOKEN: token, DEV_EMAIL: email })}/portal/`;
    },
    async close() {
      await browser.close().catch(() => undefined);
      for (const v of servers) await v.close().catch(() => undefined);
      await stopChild(platform);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Serious or critical axe violations of the page as it is now (rule id: the first target), for an assertion. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const { AxeBuilder } = await import('@axe-core/playwright');
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
