import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { FastifyRequest } from 'fastify';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { RequestContext } from '../../platform/identity/context.ts';
import { requireStaff as requireStaffGate } from '../../platform/gates.ts';
import type { Actor } from '../../platform/actor.ts';
import { contextOf } from '../../platform/route.ts';

// Small pieces shared by the custom-field, form-template, form, patient and specialist modules: these
// routes take their organization from X-Organization-ID (spec 4.1), not from the path.

/** The organization in scope; a superadmin without X-Organization-ID is told to send one. */
export function orgOf(ctx: RequestContext): string {
  if (!ctx.orgId)
    throw errors.validation({ 'X-Organization-ID': 'required: name the organization this acts on' }, 'No organization in scope.');
  return ctx.orgId;
}

export const actorOf = (request: FastifyRequest): Actor & { orgId: string } => ({
  ctx: contextOf(request),
  ip: request.ip,
  orgId: orgOf(contextOf(request)),
});

/** Staff of the organization in scope (a membership row, spec 5.7) or a superadmin. */
export const requireStaff = requireStaffGate();

/** A patient caller: no staff membership and no superadmin, acting by row ownership (spec 5.8). */
export const isPatientCaller = (ctx: RequestContext): boolean => !ctx.isSuperadmin && !ctx.isStaff && ctx.isPatient;

export function audit(
  tx: Queryable,
  actor: Actor & { orgId: string },
  action: string,
  entityType: string,
  id: string,
  data: Record<string, unknown>,
) {
  return recordChange(tx, actor, action, { type: entityType, id: id, organizationId: actor.orgId }, data);
}

/** A domain event of the organization in scope, in the transaction of the change (events/emit.ts). */
export function emit(tx: Queryable, orgId: string, type: string, data: Record<string, unknown>): Promise<void> {
  return emitEvent(tx, { organizationId: orgId, type, data });
}
