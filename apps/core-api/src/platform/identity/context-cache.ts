import { LRUCache } from 'lru-cache';
import type { ContextRow } from './queries.ts';

/**
 * Request contexts this instance has loaded, by subject, requested organization and gate setting.
 * An entry is only ever used after checking its versions against the database (one primary-key read),
 * so it can never be stale; the bound only limits memory.
 */
export type ContextCache = LRUCache<string, ContextRow>;

export function createContextCache(max = 10_000): ContextCache {
  return new LRUCache<string, ContextRow>({ max });
}

export function contextCacheKey(subject: string, requestedOrgId: string | null, gate: boolean): string {
  return `${subject}\u0000${requestedOrgId ?? ''}\u0000${gate ? 1 : 0}`;
}
