import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Outgoing URLs (webhook deliveries) must not reach the platform's own network: loopback, private,
 * link-local (cloud metadata at 169.254.169.254 included), carrier-grade NAT, multicast, reserved and
 * IPv6 unique-local addresses are refused after DNS resolution, unless the operator allows private
 * networks explicitly (tests, an on-premises install). Only global unicast passes.
 */
export function isForbiddenAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let ip = ipaddr.parse(address);
  // ::ffff:10.0.0.1 is 10.0.0.1.
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() !== 'unicast';
}

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
export function urlProblem(raw: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:') return 'must use https';
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
