import { LRUCache } from 'lru-cache';
import type { Pool } from 'undici';

/** What a clinic host stands for: the public fields of GET /v1/public/organizations/resolve. */
export interface Organization {
  id: string;
  slug: string;
  name: string;
  language_code: string;
}

export type HostTarget = { kind: 'platform' } | { kind: 'clinic'; organization: Organization } | { kind: 'unknown' };

/** The API could not say (down, or this client is over its resolve budget): not cached, shown as such. */
export class HostLookupError extends Error {
  constructor(
    message: string,
    readonly statusCode: 429 | 503,
    readonly retryAfter: string | null,
  ) {
    super(message);
  }
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The host name of a request, lower case, without port or trailing dot. */
export function normalizeHost(raw: string | undefined): string {
  if (!raw) return '';
  let host = raw.trim().toLowerCase();
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  host = host.replace(/:\d*$/, '').replace(/\.$/, '');
  return host;
}

export interface HostResolver {
  /** `clientIp` is forwarded to the API so its per-address resolve limit counts the visitor, not the proxy. */
  resolve(hostname: string, clientIp: string): Promise<HostTarget>;
  /** Entries in the cache (tests). */
  size(): number;
}

type Lookup = { by: 'slug'; value: string } | { by: 'domain'; value: string } | { target: HostTarget };

/**
 * Host -> organization. The platform's own host is not a clinic; `<slug>.<platform domain>` is looked
 * up by slug, any other name as a verified custom domain. Answers are cached per host name (so host A's
 * organization can never answer for host B) in a bounded LRU: found for `ttlSeconds`, not found for
 * `negativeTtlSeconds`; failures are not cached.
 */
export function createHostResolver(opts: {
  platformDomain: string;
  core: Pool;
  ttlSeconds: number;
  negativeTtlSeconds: number;
  max: number;
}): HostResolver {
  const cache = new LRUCache<string, HostTarget>({ max: opts.max });
  const inflight = new Map<string, Promise<HostTarget>>();
  const suffix = `.${opts.platformDomain}`;

  const classify = (host: string): Lookup => {
    if (host === opts.platformDomain) return { target: { kind: 'platform' } };
    if (!host || host.startsWith('[') || /^\d+(\.\d+){3}$/.test(host)) return { target: { kind: 'unknown' } };
    if (host.endsWith(suffix)) {
      const label = host.slice(0, -suffix.length);
      return LABEL.test(label) ? { by: 'slug', value: label } : { target: { kind: 'unknown' } };
    }
    return { by: 'domain', value: host };
  };

  async function lookup(lookup: { by: 'slug' | 'domain'; value: string }, clientIp: string): Promise<HostTarget> {
    let res: Awaited<ReturnType<Pool['request']>>;
    try {
      res = await opts.core.request({
        method: 'GET',
        path: `/v1/public/organizations/resolve?${lookup.by}=${encodeURIComponent(lookup.value)}`,
        headers: { accept: 'application/json', 'x-forwarded-for': clientIp },
        headersTimeout: 5000,
        bodyTimeout: 5000,
      });
    } catch (err) {
      throw Object.assign(new HostLookupError('the core API is unreachable', 503, '5'), { cause: err });
    }
    if (res.statusCode === 404) {
      await res.body.dump();
      return { kind: 'unknown' };
    }
    if (res.statusCode === 429) {
      await res.body.dump();
      const retry = res.headers['retry-after'];
      throw new HostLookupError('too many look-ups from this address', 429, typeof retry === 'string' ? retry : '60');
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new HostLookupError(`the core API answered ${res.statusCode}`, 503, '5');
    }
    const body = (await res.body.json()) as { data?: Partial<Organization> };
    const d = body.data;
    if (!d?.id || !d.slug || typeof d.name !== 'string')
      throw new HostLookupError('the core API answered without an organization', 503, '5');
    return { kind: 'clinic', organization: { id: d.id, slug: d.slug, name: d.name, language_code: d.language_code ?? 'en' } };
  }

  return {
    size: () => cache.size,
    async resolve(hostname, clientIp) {
      const host = normalizeHost(hostname);
      const c = classify(host);
      if ('target' in c) return c.target;
      const hit = cache.get(host);
      if (hit) return hit;
      // Concurrent first requests for one host share one look-up.
      let pending = inflight.get(host);
      if (!pending) {
        pending = lookup(c, clientIp)
          .then((target) => {
            const ttl = (target.kind === 'clinic' ? opts.ttlSeconds : opts.negativeTtlSeconds) * 1000;
            if (ttl > 0) cache.set(host, target, { ttl });
            return target;
          })
          .finally(() => inflight.delete(host));
        inflight.set(host, pending);
      }
      return pending;
    },
  };
}
