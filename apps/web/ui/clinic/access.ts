import type { MessageKey } from '@clinic/ui';

/** The clinic app's areas (issue 30), in the navigation's order. */
export type Area = 'calendar' | 'patients' | 'care' | 'engagement' | 'settings';
export const AREAS: readonly { area: Area; key: MessageKey }[] = [
  { area: 'calendar', key: 'clinic.area.calendar' },
  { area: 'patients', key: 'clinic.area.patients' },
  { area: 'care', key: 'clinic.area.care' },
  { area: 'engagement', key: 'clinic.area.engagement' },
  { area: 'settings', key: 'clinic.area.settings' },
];

/** What decides whether a screen is shown: the caller's permission codes (GET /v1/me), never a role's name. */
export interface Gate {
  /** Shown when the caller holds at least one of these codes. */
  anyOf: readonly string[];
}

export function allowed(gate: Gate, permissions: readonly string[]): boolean {
  return gate.anyOf.some((code) => permissions.includes(code));
}

/** The areas to show: those with at least one screen the caller may open, each linking to its first such screen. */
export function navEntries<S extends Gate & { area: Area; path: string; nav?: boolean }>(
  screens: readonly S[],
  permissions: readonly string[],
): { area: Area; key: MessageKey; path: string }[] {
  const out: { area: Area; key: MessageKey; path: string }[] = [];
  for (const a of AREAS) {
    const first = screens.find((s) => s.area === a.area && s.nav !== false && allowed(s, permissions));
    if (first) out.push({ ...a, path: first.path });
  }
  return out;
}
