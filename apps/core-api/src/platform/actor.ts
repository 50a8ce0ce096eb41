import type { RequestContext } from './identity/context.ts';

/** Who makes a change, as services see it: the caller's context and address (for the audit entry). */
export interface Actor {
  ctx: RequestContext;
  ip: string | null;
}

/** An actor acting on the organization in scope (X-Organization-ID, spec 4.1): the routes that take it from the header. */
export type OrgActor = Actor & { orgId: string };
