import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readCookies, setCookie } from './cookies.ts';
import type { Organization } from './hosts.ts';
import { errorPage, escapeHtml, page } from './html.ts';
import type { Sessions } from './sessions.ts';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/** Front ends render en and ro only (spec 2.5); any other language falls back to en. */
export const SUPPORTED_LANGUAGES = ['en', 'ro'] as const;
export const supportedLanguage = (code: string | undefined | null): 'en' | 'ro' =>
  (SUPPORTED_LANGUAGES as readonly string[]).includes((code ?? '').toLowerCase()) ? ((code ?? '').toLowerCase() as 'en' | 'ro') : 'en';

/** The data block every app page gets (the web contract); JSON made safe inside HTML. */
export function pageContextScript(ctx: unknown): string {
  const json = JSON.stringify(ctx).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
  return `<script id="page-context" type="application/json">${json}</script>`;
}

export const NOT_BUILT_MESSAGE = 'The front end is not built: run npm run build -w @clinic/web, then reload.';

/**
 * Spec 5 rule 12: org-id, org-slug, org-name httpOnly; language readable by scripts, the visitor's own
 * choice when it is a supported one, else the organization's language_code.
 */
function setOrganizationCookies(request: FastifyRequest, reply: FastifyReply, hostname: string, org: Organization): 'en' | 'ro' {
  const chosen = readCookies(request).language;
  const language =
    chosen && (SUPPORTED_LANGUAGES as readonly string[]).includes(chosen) ? (chosen as 'en' | 'ro') : supportedLanguage(org.language_code);
  setCookie(reply, hostname, 'org-id', org.id, { httpOnly: true });
  setCookie(reply, hostname, 'org-slug', org.slug, { httpOnly: true });
  setCookie(reply, hostname, 'org-name', org.name, { httpOnly: true });
  setCookie(reply, hostname, 'language', language, { httpOnly: false, maxAgeSeconds: 365 * 24 * 3600 });
  return language;
}

export function installPages(app: FastifyInstance, opts: { distDir: string; platformDomain: string; sessions: Sessions }): void {
  const dist = resolve(opts.distDir);
  const assetsRoot = join(dist, 'assets');

  async function html(request: FastifyRequest, reply: FastifyReply, app: 'booking' | 'portal' | 'clinic') {
    const site = request.site!;
    if (site.target.kind !== 'clinic') return reply.callNotFound();
    const org = site.target.organization;
    const language = setOrganizationCookies(request, reply, site.hostname, org);
    reply.header('cache-control', 'no-store');
    // The clinic app is staff-only: signed out, it goes straight to sign-in and comes back to the same path.
    if (app === 'clinic' && !(await opts.sessions.load(request, site.hostname))) {
      return reply.redirect(`/auth/login?return_to=${encodeURIComponent(request.url)}`, 303);
    }
    let source: string;
    try {
      source = await readFile(join(dist, app, 'index.html'), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      return reply.status(503).type('text/html; charset=utf-8').send(errorPage('Front end not built', NOT_BUILT_MESSAGE));
    }
    const ref = await opts.sessions.load(request, site.hostname);
    const ctx = {
      organization: { id: org.id, slug: org.slug, name: org.name, language_code: org.language_code },
      language,
      signedIn: ref !== null,
      user: ref ? { email: ref.session.email } : null,
      platformDomain: opts.platformDomain,
    };
    const block = pageContextScript(ctx);
    const at = source.search(/<\/head>/i);
    const out = at === -1 ? `${block}${source}` : `${source.slice(0, at)}${block}\n${source.slice(at)}`;
    return reply.type('text/html; charset=utf-8').send(out);
  }

  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    if (request.site?.target.kind === 'platform') {
      reply.header('cache-control', 'no-store');
      return reply
        .type('text/html; charset=utf-8')
        .send(
          page(
            'Clinic Platform',
            `<h1>Clinic Platform</h1>\n<p>Each clinic has its own address: <code>https://&lt;clinic&gt;.${escapeHtml(opts.platformDomain)}/</code> for booking and <code>/portal</code> for patients, <code>/clinic</code> for the clinic's staff.</p>\n<p>Platform operators: <a href="/console">the console</a>.</p>`,
          ),
        );
    }
    return html(request, reply, 'booking');
  });
  app.get('/portal', { schema: { hide: true } }, (request, reply) => html(request, reply, 'portal'));
  app.get('/portal/*', { schema: { hide: true } }, (request, reply) => html(request, reply, 'portal'));
  // The clinic app's screens are client-side routes under /clinic: every one of them is the same page.
  app.get('/clinic', { schema: { hide: true } }, (request, reply) => html(request, reply, 'clinic'));
  app.get('/clinic/*', { schema: { hide: true } }, (request, reply) => html(request, reply, 'clinic'));

  app.get('/assets/*', { schema: { hide: true } }, async (request, reply) => {
    const rel = (request.params as { '*': string })['*'];
    const file = resolve(assetsRoot, rel);
    if (!file.startsWith(assetsRoot + sep)) return reply.callNotFound();
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return reply.callNotFound();
    // Vite names every asset by its content hash: a name never changes meaning.
    reply.header('cache-control', 'public, max-age=31536000, immutable');
    reply.header('content-length', info.size);
    return reply.type(TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream').send(createReadStream(file));
  });
}

/** Unknown paths: the error envelope under the API and auth prefixes, a small HTML page elsewhere. */
export function notFound(request: FastifyRequest, reply: FastifyReply) {
  {
    if (request.url.startsWith('/v1/') || request.url.startsWith('/auth/') || request.url.startsWith('/telemetry/')) {
      return reply.status(404).send({ error: { code: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}.` } });
    }
    return reply
      .status(404)
      .type('text/html; charset=utf-8')
      .send(errorPage('Page not found', 'There is no page at this address.', { href: '/', text: 'Go to the start page' }));
  }
}
