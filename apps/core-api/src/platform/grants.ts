import { errors } from '@clinic/http-kit';
import type { RequestContext } from './identity/context.ts';

/**
 * No escalation inside an organization: only a superadmin grants permissions it does not hold itself;
 * everyone else gives out (through a role given to a member, or a permission put into a role) only
 * permissions they hold. 403 forbidden names the missing codes.
 */
export function assertCanGrant(ctx: RequestContext, codes: readonly string[], what: string): void {
  if (ctx.isSuperadmin) return;
  const missing = [...new Set(codes.filter((c) => !ctx.permissions.includes(c)))].sort();
  if (missing.length)
    throw errors.forbidden(`${what} would grant permissions you do not hold (${missing.join(', ')}); ask someone who holds them.`);
}

/** Nobody but a superadmin changes their own role: someone else who can manage members must do it. */
export function assertNotOwnRoleChange(ctx: RequestContext, memberUserId: string): void {
  if (!ctx.isSuperadmin && ctx.principalId === memberUserId)
    throw errors.forbidden('You cannot change your own role; ask another member who can manage members.');
}
