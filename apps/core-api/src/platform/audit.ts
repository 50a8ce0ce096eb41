import type { Queryable } from '@clinic/db';
import type { Actor } from './actor.ts';

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

/**
 * The audit entry of a change made by a caller (spec 6.2): who (the actor's principal and address),
 * what (`action`), on what (`target`), with `data`. Call it in the transaction of the change.
 */
export function recordChange(
  tx: Queryable,
  actor: Actor,
  action: string,
  target: AuditTarget,
  data: Record<string, unknown> = {},
): Promise<void> {
  return insertAudit(tx, {
    organizationId: target.organizationId,
    actorUserId: actor.ctx.principalId,
    action,
    entityType: target.type,
    entityId: target.id ?? null,
    data,
    ip: actor.ip,
  });
}
