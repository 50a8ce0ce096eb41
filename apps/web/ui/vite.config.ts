import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

/*
 * The browser apps (booking page, patient portal, clinic app): one multi-page build into apps/web/dist, served by the
 * web proxy under a strict CSP, so nothing inline: no module-preload polyfill, CSS in files.
 *
 * Development (`npm run dev -w @clinic/web`): this server forwards /v1 and /telemetry to a running
 * platform (DEV_API_URL, default http://127.0.0.1:3000) adding X-Organization-ID (DEV_ORG_ID) as the
 * proxy would, and injects a page context for that clinic (DEV_ORG_SLUG, DEV_ORG_NAME). With DEV_TOKEN (a bearer
 * token, e.g. from `npm run -s token -- <email>`) it also adds Authorization and the page is signed in as
 * DEV_EMAIL: the portal's screens without the proxy's sign-in. Development only: the build has none of it.
 */
const root = import.meta.dirname;

function devPageContext(): Plugin {
  // Read once, when the config loads: a test may start several servers with different settings.
  const env = { ...process.env };
  return {
    name: 'clinic-dev-page-context',
    apply: 'serve',
    transformIndexHtml(html) {
      const ctx = {
        organization: env.DEV_ORG_ID
          ? {
              id: env.DEV_ORG_ID,
              slug: env.DEV_ORG_SLUG ?? 'demo',
              name: env.DEV_ORG_NAME ?? 'Demo Clinic',
              language_code: 'en',
            }
          : null,
        language: env.DEV_LANGUAGE ?? 'en',
        signedIn: !!env.DEV_TOKEN,
        user: env.DEV_TOKEN ? { email: env.DEV_EMAIL ?? 'patient@example.com' } : null,
        platformDomain: 'localhost',
      };
      const json = JSON.stringify(ctx).replace(/</g, '\\u003c');
      return html.replace('</head>', `<script id="page-context" type="application/json">${json}</script></head>`);
    },
  };
}

const api = process.env.DEV_API_URL ?? 'http://127.0.0.1:3000';
const devHeaders: Record<string, string> = {
  ...(process.env.DEV_ORG_ID ? { 'x-organization-id': process.env.DEV_ORG_ID } : {}),
  ...(process.env.DEV_TOKEN ? { authorization: `Bearer ${process.env.DEV_TOKEN}` } : {}),
};

export default defineConfig(({ command }) => {
  // The build is production's whatever NODE_ENV the caller runs in (`npm start` builds under development):
  // React's development build would double the first load. Vite reads NODE_ENV after loading this file.
  if (command === 'build') process.env.NODE_ENV = 'production';
  return {
    root,
    base: '/',
    plugins: [react(), devPageContext()],
    build: {
      outDir: resolve(root, '../dist'),
      emptyOutDir: true,
      modulePreload: { polyfill: false },
      // Data URIs for small assets are allowed by img-src, but fonts and scripts must be files.
      assetsInlineLimit: 0,
      rollupOptions: {
        input: {
          booking: resolve(root, 'booking/index.html'),
          portal: resolve(root, 'portal/index.html'),
          console: resolve(root, 'console/index.html'),
          clinic: resolve(root, 'clinic/index.html'),
        },
      },
    },
    server: {
      proxy: {
        '/v1': { target: api, changeOrigin: true, headers: devHeaders },
        '/telemetry': {
          target: process.env.DEV_TELEMETRY_URL ?? 'http://127.0.0.1:3001',
          changeOrigin: true,
          rewrite: (p) => p.replace(/^\/telemetry/, ''),
        },
      },
    },
  };
});
