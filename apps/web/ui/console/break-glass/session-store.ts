/** An open break-glass session as POST /v1/break-glass/sessions answered it. */
export interface OpenSession {
  id: string;
  organization_id: string;
  scope: string;
  reason_category: string;
  reason_text: string;
  expires_at: string;
}

/*
 * The sessions this tab opened, kept in sessionStorage so a reload keeps the countdown. The server stays
 * the judge: a session forgotten here still works until it expires, and one that expired is refused (410).
 */
const keyOf = (orgId: string, scope: string) => `console.break-glass:${orgId}:${scope}`;

export function rememberSession(s: OpenSession): void {
  sessionStorage.setItem(keyOf(s.organization_id, s.scope), JSON.stringify(s));
}

export function recallSession(orgId: string, scope: string): OpenSession | null {
  try {
    const s = JSON.parse(sessionStorage.getItem(keyOf(orgId, scope)) ?? 'null') as OpenSession | null;
    return s && new Date(s.expires_at).getTime() > Date.now() ? s : null;
  } catch {
    return null;
  }
}

export function forgetSession(orgId: string, scope: string): void {
  sessionStorage.removeItem(keyOf(orgId, scope));
}
