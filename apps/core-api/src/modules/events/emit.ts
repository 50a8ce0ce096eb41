import type { Queryable } from '@clinic/db';

export interface EventInput {
  /** The organization whose subscribers receive it; null for platform events (internal consumers only). */
  organizationId: string | null;
  /** A type of the catalog (catalog.ts, docs/events.md). */
  type: string;
  /** Ids and states, never personal data: receivers fetch details through the API. */
  data: Record<string, unknown>;
}

/**
 * Writes a domain event into the outbox (migration 0012) inside the caller's transaction: the event
 * exists if and only if the change that caused it commits. The worker delivers it later.
 */
export async function emitEvent(tx: Queryable, e: EventInput): Promise<void> {
  await tx.query('select app.emit_event($1, $2, $3::jsonb)', [e.organizationId, e.type, JSON.stringify(e.data)], { name: 'emit_event' });
}

/** A domain event of one organization, in the transaction of the change. */
export function emit(tx: Queryable, orgId: string, type: string, data: Record<string, unknown>): Promise<void> {
  return emitEvent(tx, { organizationId: orgId, type, data });
}
