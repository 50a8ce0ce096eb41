import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent as UndiciAgent } from 'undici';

/**
 * The one guard for every URL the platform calls out to (webhook deliveries, service provider
 * endpoints, anything later): it must not reach the platform's own network. Only global unicast
 * passes: IPv4 outside loopback, private, link-local (cloud metadata at 169.254.169.254), CGNAT,
 * benchmarking (198.18/15), documentation, multicast, reserved and broadcast; IPv6 inside 2000::/3
 * and outside its special ranges. Every IPv6 form that embeds an IPv4 address (mapped ::ffff:a.b.c.d,
 * compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4, Teredo) is refused outright: none is a legitimate
 * destination, and each can smuggle a private address past a check of the IPv6 form. The operator
 * may allow private networks explicitly (tests, an on-premises install).
 */
export function isForbiddenAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return ip.range() !== 'unicast';
  return !ip.match(GLOBAL_UNICAST_V6) || ip.range() !== 'unicast';
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

export class ForbiddenDestinationError extends Error {
  readonly code = 'forbidden_destination';
}

/** The host part of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * A dns.lookup replacement for the HTTP client's sockets: resolves, then refuses when any address is
 * forbidden. Checking at connect time (not before) closes the gap where a name resolves to a public
 * address when checked and to a private one when connected (DNS rebinding).
 */
export function guardedLookup(allowPrivate: boolean) {
  // biome-ignore lint/suspicious/noExplicitAny: dns.lookup's callback is overloaded (one address or all); callers pass either shape.
  return (hostname: string, options: { all?: boolean; family?: number }, callback: (...args: any[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      const bad = addresses.find((a) => isForbiddenAddress(a.address));
      if (bad && !allowPrivate) {
        return callback(new ForbiddenDestinationError(`${hostname} resolves to ${bad.address}, a non-public address`));
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new Error(`${hostname} has no address`));
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Checks a URL before it is stored or called: HTTPS, no credentials in it, and (when the host is an
 * IP literal, which skips DNS and so the connect-time check) a public address. Returns a reason or null.
 */
export function urlProblem(
  raw: string,
  allowPrivate: boolean,
  opts: { httpAllowed?: boolean; schemes?: readonly string[] } = {},
): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  // Other protocols where the caller names them (smtp: and smtps: for mail servers).
  if (opts.schemes) {
    if (!opts.schemes.includes(url.protocol)) return `must use ${opts.schemes.map((p) => p.replace(/:$/, '')).join(' or ')}`;
    if (!url.hostname) return 'must name a host';
  }
  // Plain http only where the caller allows it (providers' local wire-format servers in development).
  else if (url.protocol !== 'https:' && !(opts.httpAllowed && url.protocol === 'http:')) return 'must use https';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash) return 'must not have a fragment';
  const host = hostOf(url);
  if (isIP(host) && !allowPrivate && isForbiddenAddress(host))
    return 'must not point at a loopback, private, link-local or reserved address';
  if (!allowPrivate && /^(localhost|.*\.localhost|.*\.local|.*\.internal)$/i.test(host)) return 'must name a public host';
  return null;
}

/** Resolves the host now and refuses private answers: a clear 400 at create time, besides the connect-time guard. */
export async function resolvesPublicly(raw: string, allowPrivate: boolean): Promise<string | null> {
  if (allowPrivate) return null;
  const host = hostOf(new URL(raw));
  if (isIP(host)) return null;
  return new Promise((resolve) => {
    dnsLookup(host, { all: true }, (err, addresses) => {
      if (err) return resolve(`the host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      const bad = addresses.find((a) => isForbiddenAddress(a.address));
      resolve(bad ? `the host ${host} resolves to a non-public address` : null);
    });
  });
}

/**
 * HTTP agents whose sockets resolve names through guardedLookup: the connect-time half of the guard,
 * for undici (`dispatcher`) and for Node's http/https agents (the AWS SDK's request handler).
 */
export function guardedAgents(allowPrivate: boolean) {
  const lookup = guardedLookup(allowPrivate) as never;
  return { undici: new UndiciAgent({ connect: { lookup } }), http: new HttpAgent({ lookup }), https: new HttpsAgent({ lookup }) };
}

/**
 * One address for a host, through the same guard as the HTTP sockets: for clients that connect to an
 * address themselves (SMTP), so the name is resolved once, checked, and the connection pinned to it.
 */
export function resolveGuarded(host: string, allowPrivate: boolean): Promise<string> {
  if (isIP(host)) {
    if (!allowPrivate && isForbiddenAddress(host)) return Promise.reject(new ForbiddenDestinationError(`${host} is a non-public address`));
    return Promise.resolve(host);
  }
  return new Promise((resolve, reject) => {
    guardedLookup(allowPrivate)(host, {}, (err: Error | null, address?: string) => (err ? reject(err) : resolve(address!)));
  });
}
