import type { Queryable } from '@clinic/db';

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
