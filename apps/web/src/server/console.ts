import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readCookies } from './cookies.ts';
import { errorPage } from './html.ts';
import { NOT_BUILT_MESSAGE, pageContextScript, supportedLanguage } from './pages.ts';
import type { Sessions } from './sessions.ts';
import type { Upstreams } from './upstream.ts';

/** Who the signed-in person is, as the core API says (GET /v1/me without an organization). */
interface Me {
  email: string;
  is_superadmin: boolean;
}

type Access = 'granted' | 'refused';

/**
 * The console (spec 1: superadmin only) at /console on the platform's own host. Signed out: to sign-in and
 * back. Signed in: GET /v1/me decides; a person who is not a superadmin gets the console page in its
 * refusal state with status 403 (the app draws a clear refusal, in their language, with sign-out) and no
 * console data, which the API would refuse anyway. Clinic hosts have no console: 404.
 */
export function installConsole(
  app: FastifyInstance,
  opts: { distDir: string; sessions: Sessions; upstreams: Upstreams; platformDomain: string },
) {
  const dist = resolve(opts.distDir);

  async function whoAmI(token: string): Promise<Me | 'signed_out' | 'unavailable'> {
    try {
      const res = await opts.upstreams.core.request({
        method: 'GET',
        path: '/v1/me',
        headers: { accept: 'application/json', authorization: `Bearer ${token}` },
        headersTimeout: 5000,
        bodyTimeout: 5000,
      });
      if (res.statusCode === 401) {
        await res.body.dump();
        return 'signed_out';
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        return 'unavailable';
      }
      const body = (await res.body.json()) as { data?: Partial<Me> };
      return { email: String(body.data?.email ?? ''), is_superadmin: body.data?.is_superadmin === true };
    } catch {
      return 'unavailable';
    }
  }

  async function serve(request: FastifyRequest, reply: FastifyReply) {
    const site = request.site!;
    if (site.target.kind !== 'platform') return reply.callNotFound();
    reply.header('cache-control', 'no-store');
    const signIn = () => reply.redirect(`/auth/login?return_to=${encodeURIComponent(request.url.split('#')[0]!)}`, 302);
    const ref = await opts.sessions.load(request, site.hostname);
    if (!ref) return signIn();
    const token = await opts.sessions.accessToken(ref);
    if (!token) return signIn();
    const me = await whoAmI(token);
    if (me === 'signed_out') return signIn();
    if (me === 'unavailable')
      return reply
        .status(503)
        .type('text/html; charset=utf-8')
        .send(errorPage('Console unavailable', 'The platform API is not answering; reload in a moment.'));
    const access: Access = me.is_superadmin ? 'granted' : 'refused';
    let source: string;
    try {
      source = await readFile(join(dist, 'console', 'index.html'), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      return reply.status(503).type('text/html; charset=utf-8').send(errorPage('Front end not built', NOT_BUILT_MESSAGE));
    }
    const ctx = {
      organization: null,
      language: supportedLanguage(readCookies(request).language),
      signedIn: true,
      user: { email: me.email || ref.session.email },
      platformDomain: opts.platformDomain,
      console: { access },
    };
    const block = pageContextScript(ctx);
    const at = source.search(/<\/head>/i);
    const out = at === -1 ? `${block}${source}` : `${source.slice(0, at)}${block}\n${source.slice(at)}`;
    return reply
      .status(access === 'granted' ? 200 : 403)
      .type('text/html; charset=utf-8')
      .send(out);
  }

  app.get('/console', { schema: { hide: true } }, serve);
  app.get('/console/*', { schema: { hide: true } }, serve);
}
