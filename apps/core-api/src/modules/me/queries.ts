import type { Queryable } from '@clinic/db';

export async function storeCurrentOrganization(tx: Queryable, userId: string, organizationId: string): Promise<void> {
  await tx.query('update users set current_organization_id = $2 where id = $1', [userId, organizationId]);
}
