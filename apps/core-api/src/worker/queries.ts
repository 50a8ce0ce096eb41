import type { Queryable } from '@clinic/db';
import type { DomainEvent } from './types.ts';

/** Claims up to `limit` undispatched outbox events, oldest first, skipping rows another worker holds. */
export async function claimPendingEvents(tx: Queryable, limit: number): Promise<DomainEvent[]> {
  const { rows } = await tx.query<DomainEvent>(
    `with ev as (
       select id from domain_events where dispatched_at is null order by id limit $1 for update skip locked
     )
     update domain_events e set dispatched_at = now() from ev where e.id = ev.id
     returning e.id, e.organization_id, e.type, e.data, e.principal_id, e.occurred_at`,
    [limit],
  );
  return rows;
}
