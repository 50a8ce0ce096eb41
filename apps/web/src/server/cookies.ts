import type { FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost } from './config.ts';

/** The opaque session cookie: a random id, the tokens stay in the store (never in the browser). */
export const SESSION_COOKIE = 'clinic_session';
/** Binds a sign-in started on a clinic host to the browser that finishes it there (login CSRF). */
export const LOGIN_COOKIE = 'clinic_login';

export function readCookies(request: FastifyRequest): Record<string, string> {
  const header = request.headers.cookie;
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    if (name in out) continue;
    try {
      out[name] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // A value that is not valid percent-encoding is ignored rather than failing the request.
    }
  }
  return out;
}

export interface CookieOptions {
  httpOnly: boolean;
  maxAgeSeconds?: number;
  path?: string;
}

/**
 * Host-only cookies (no Domain attribute: a clinic's cookies never reach another clinic's host),
 * SameSite=Lax, and Secure everywhere but loopback development hosts, which browsers reach over http.
 */
export function setCookie(reply: FastifyReply, hostname: string, name: string, value: string, opts: CookieOptions): void {
  const parts = [`${name}=${encodeURIComponent(value)}`, `Path=${opts.path ?? '/'}`, 'SameSite=Lax'];
  if (opts.httpOnly) parts.push('HttpOnly');
  if (!isLoopbackHost(hostname)) parts.push('Secure');
  if (opts.maxAgeSeconds !== undefined) parts.push(`Max-Age=${opts.maxAgeSeconds}`);
  // Fastify appends set-cookie values rather than replacing them.
  reply.header('set-cookie', parts.join('; '));
}

export function clearCookie(reply: FastifyReply, hostname: string, name: string, path = '/'): void {
  setCookie(reply, hostname, name, '', { httpOnly: true, maxAgeSeconds: 0, path });
}
