import { isApiError } from '@clinic/ui';
import { useSyncExternalStore } from 'react';

/** One missing consent as the API's 412 consent_required names it. */
export interface MissingConsent {
  purpose_code: string;
  organization_id: string | null;
  version: number;
}

/**
 * The re-consent gate is the API's: any call may answer 412 consent_required (GET /v1/me does not). The
 * query and mutation caches report every error here, and the portal shows the consent screen while the
 * list is not empty.
 */
let missing: MissingConsent[] | null = null;
const listeners = new Set<() => void>();

export function reportApiError(err: unknown): void {
  if (!isApiError(err) || err.status !== 412 || err.code !== 'consent_required') return;
  missing = ((err.body.error as unknown as { missing?: MissingConsent[] }).missing ?? []) as MissingConsent[];
  for (const l of listeners) l();
}

export function clearMissingConsents(): void {
  missing = null;
  for (const l of listeners) l();
}

export function useMissingConsents(): MissingConsent[] | null {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => missing,
  );
}
