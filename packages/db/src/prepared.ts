import { createHash } from 'node:crypto';
import type { QueryOptions } from './types.ts';

const names = new Map<string, QueryOptions>();

/**
 * QueryOptions naming a prepared statement after its text, for hot statements whose text is built from a
 * bounded set of pieces (a list's sorts and filters): each distinct text is parsed, rewritten with its
 * row-level security policies and planned once per connection instead of on every request. Only for
 * texts that do not embed values (bind them), or the number of statements would grow without bound.
 */
export function prepared(text: string): QueryOptions {
  let opts = names.get(text);
  if (!opts) {
    opts = { name: `s_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}` };
    names.set(text, opts);
  }
  return opts;
}
