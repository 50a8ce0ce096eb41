import { resolvesPublicly, urlProblem } from '../../platform/outgoing-url.ts';

/**
 * A row's endpoint_url, through the platform's one outgoing-URL guard (platform/outgoing-url.ts). Empty
 * means the provider's public default. Otherwise an https URL to a public host, without credentials;
 * where private endpoints are allowed (development and tests: local wire-format servers), also http
 * and private addresses.
 */
export function endpointProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw === '') return null;
  return urlProblem(raw, allowPrivate, { httpAllowed: allowPrivate });
}

/**
 * Before a call: the URL still passes, and its name resolves to public addresses only. The sockets of
 * the call check again when they connect (guardedAgents), so a DNS answer that changes in between
 * (rebinding) is caught too.
 */
export async function assertPublicEndpoint(raw: string, allowPrivate: boolean): Promise<void> {
  const problem = endpointProblem(raw, allowPrivate) ?? (raw === '' ? null : await resolvesPublicly(raw, allowPrivate));
  if (problem) throw new Error(`endpoint_url ${problem}`);
}
