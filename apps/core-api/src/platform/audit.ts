import type { Queryable } from '@clinic/db';
import type { Actor, OrgActor } from './actor.ts';

export interface AuditEntry {
  organizationId: string | null;
  actorUserId: string | null;
  action: string;
  entityType: string;
  entityId?: string | null;
  actionContext?: string | null;
  breakGlassId?: string | null;
  data?: Record<string, unknown>;
  ip?: string | null;
}

/** One audit row; call it inside the transaction of the change it records. */
export async function insertAudit(db: Queryable, e: AuditEntry): Promise<void> {
  await db.query(
    `insert into audit_logs (organization_id, actor_user_id, action, entity_type, entity_id, action_context, break_glass_id, data, ip)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      e.organizationId,
      e.actorUserId,
      e.action,
      e.entityType,
      e.entityId ?? null,
      e.actionContext ?? null,
      e.breakGlassId ?? null,
      JSON.stringify(e.data ?? {}),
      e.ip ?? null,
    ],
  );
}

/** What a change acted on: the entity and the organization whose trail records it (null: the platform's). */
export interface AuditTarget {
  type: string;
  id?: string | null;
  organizationId: string | null;
}

/** Under which circumstances a change was made (spec 6.2): `break_glass` with its session, `system`, ... */
export interface AuditContext {
  actionContext: string;
  breakGlassId?: string | null;
}

/**
 * The audit entry of a change (spec 6.2): who (the actor's principal and address; null for the system:
 * sweeps, health checks, operator commands), what (`action`), on what (`target`), with `data`, and under
 * which action context. Call it in the transaction of the change.
 */
export function recordChange(
  tx: Queryable,
  actor: Actor | null,
  action: string,
  target: AuditTarget,
  data: Record<string, unknown> = {},
  context?: AuditContext,
): Promise<void> {
  // A change made with an impersonation token says so: the context, the session and who was behind it.
  const imp = actor?.ctx.impersonation;
  return insertAudit(tx, {
    organizationId: target.organizationId,
    actorUserId: actor?.ctx.principalId ?? null,
    action,
    entityType: target.type,
    entityId: target.id ?? null,
    actionContext: context?.actionContext ?? (imp ? 'impersonation' : null),
    breakGlassId: context?.breakGlassId ?? null,
    data: imp ? { ...data, impersonation_id: imp.id, impersonated_by: imp.byPrincipalId } : data,
    ip: actor?.ip ?? null,
  });
}

/** recordChange for the org-scoped modules: the entry goes to the trail of the organization in scope. */
export function audit(
  tx: Queryable,
  actor: OrgActor,
  action: string,
  entityType: string,
  id: string,
  data: Record<string, unknown>,
): Promise<void> {
  return recordChange(tx, actor, action, { type: entityType, id, organizationId: actor.orgId }, data);
}
