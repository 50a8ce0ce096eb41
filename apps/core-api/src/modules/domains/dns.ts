import { promises as dns } from 'node:dns';

/** What a TXT lookup found: the records (each one's character-strings joined), none, or a failure. */
export type TxtAnswer = { status: 'found'; records: string[] } | { status: 'none' } | { status: 'failed'; code: string };

export type TxtLookup = (name: string) => Promise<TxtAnswer>;

export interface TxtLookupOptions {
  /** `ip` or `ip:port` entries (config DNS_SERVERS); empty uses the system's resolvers. */
  servers: readonly string[];
  /** Per attempt; c-ares doubles it on each retry. */
  timeoutMs?: number;
  tries?: number;
}

/**
 * TXT lookups through a real resolver (c-ares, never /etc/hosts). One Resolver per app: it holds
 * no per-request state and answers concurrent queries. Bounded so a verify request cannot hang on
 * an unresponsive name server: about 1.5 s + 3 s with the defaults.
 */
export function createTxtLookup(opts: TxtLookupOptions): TxtLookup {
  const resolver = new dns.Resolver({ timeout: opts.timeoutMs ?? 1500, tries: opts.tries ?? 2 });
  if (opts.servers.length) {
    try {
      resolver.setServers([...opts.servers]);
    } catch (err) {
      throw new Error(
        `DNS_SERVERS must be IP addresses, optionally with :port (got "${opts.servers.join(',')}"): ${(err as Error).message}`,
      );
    }
  }
  return async (name) => {
    try {
      const records = await resolver.resolveTxt(name);
      // A record longer than 255 bytes arrives as several character-strings; they form one value (RFC 7208 3.3).
      return { status: 'found', records: records.map((chunks) => chunks.join('')) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
      // NXDOMAIN (ENOTFOUND) and a name without TXT records (ENODATA) both mean "not published (yet)".
      if (code === dns.NOTFOUND || code === dns.NODATA) return { status: 'none' };
      return { status: 'failed', code };
    }
  };
}
