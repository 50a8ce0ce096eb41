import type { FastifyInstance } from 'fastify';
import { errors } from './errors.ts';

/**
 * Text that PostgreSQL cannot store, or that is not Unicode at all: a NUL character (text columns
 * refuse it) or a UTF-16 surrogate without its pair (no code point; drivers replace or reject it).
 * Decided once at the edge, so that no route answers 500 for it deep in a query.
 */
export function isUnstorableText(value: string): boolean {
  return value.includes('\0') || !value.isWellFormed();
}

export const UNSTORABLE_TEXT_REASON = 'must not contain NUL characters or unpaired UTF-16 surrogates';

/**
 * The first place in a parsed JSON value (strings and object keys, at any depth) holding unstorable
 * text, as a dotted path (`name`, `items.2.label`), or null. `root` names the value itself.
 */
export function findUnstorableText(value: unknown, root = '_body'): string | null {
  const stack: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (stack.length) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (isUnstorableText(v)) return path || root;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: path ? `${path}.${i}` : String(i) });
    } else if (v !== null && typeof v === 'object' && !Buffer.isBuffer(v)) {
      for (const [key, child] of Object.entries(v)) {
        const at = path ? `${path}.${key}` : key;
        if (isUnstorableText(key)) return path || root;
        stack.push({ value: child, path: at });
      }
    }
  }
  return null;
}

/**
 * Refuses unstorable text in the query string (422 validation_failed, like other query errors), the
 * path parameters (404: no record has such a name) and a parsed body (400 validation_error), before
 * schema validation and any handler. Binary bodies (Buffers) are not text and pass untouched.
 */
export function installTextGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const inQuery = findUnstorableText(request.query, '_query');
    if (inQuery) throw errors.queryValidation({ [inQuery]: UNSTORABLE_TEXT_REASON });
    if (findUnstorableText(request.params)) throw errors.notFound();
    const inBody = findUnstorableText(request.body);
    if (inBody) throw errors.validation({ [inBody]: UNSTORABLE_TEXT_REASON });
  });
}
