import { ApiError, createClient, isApiError } from '@clinic/client';

export { ApiError, isApiError };

/**
 * The typed client for the browser: same origin (baseUrl ''), the session cookie rides along and the
 * proxy adds the bearer token and X-Organization-ID; the page never holds a token.
 */
export const api = createClient({
  baseUrl: '',
  fetch: (input, init) => fetch(input, { ...init, credentials: 'same-origin' }),
});

export type Api = typeof api;

/** The error code of an ApiError, or null for anything else. */
export function errorCode(err: unknown): string | null {
  return isApiError(err) ? err.code : null;
}

/** A fresh Idempotency-Key for one user action (retries of that action reuse it). */
export function idempotencyKey(): string {
  return `web-${crypto.randomUUID()}`;
}
