import type { RequestContext } from './identity/context.ts';

/** Who makes a change, as services see it: the caller's context and address (for the audit entry). */
export interface Actor {
  ctx: RequestContext;
  ip: string | null;
}
