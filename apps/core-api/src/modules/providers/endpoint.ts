import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/**
 * SSRF guard for a row's endpoint_url. Empty means the provider's public default. Otherwise an http(s)
 * URL without credentials; unless private endpoints are allowed (development and tests: local
 * wire-format servers), it must be https and resolve only to public addresses.
 */
export function endpointProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http(s) URL, or empty';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  if (url.username || url.password) return 'must not carry credentials';
  if (allowPrivate) return null;
  if (url.protocol !== 'https:') return 'must be https';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) && isPrivateAddress(host)))
    return 'must not name a private or loopback address';
  return null;
}

export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 6) {
    const v = ip.toLowerCase();
    if (v.startsWith('::ffff:')) return isPrivateAddress(v.slice(7));
    return v === '::1' || v === '::' || v.startsWith('fc') || v.startsWith('fd') || v.startsWith('fe80');
  }
  const [a, b] = ip.split('.').map(Number) as [number, number];
  return (
    a === 10 ||
    a === 127 ||
    a === 0 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}

/** At call time: the name must still resolve to public addresses only (a DNS answer can change after validation). */
export async function assertPublicEndpoint(raw: string, allowPrivate: boolean): Promise<void> {
  const problem = endpointProblem(raw, allowPrivate);
  if (problem) throw new Error(`endpoint_url ${problem}`);
  if (raw === '' || allowPrivate) return;
  const addresses = await lookup(new URL(raw).hostname, { all: true });
  if (addresses.some((a) => isPrivateAddress(a.address))) throw new Error('endpoint_url resolves to a private address');
}
