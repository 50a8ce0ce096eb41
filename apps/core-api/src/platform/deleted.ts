import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { hasPermission } from './identity/context.ts';
import { contextOf } from './route.ts';

/**
 * Soft-deleted rows (spec 2.7): every table with a deleted_at column hides its deleted rows in its read
 * policy from callers without data.view_deleted (migrations 0002, 0022, 0023, 0140). Lists show live rows;
 * `include_deleted=true` adds the deleted ones for a holder of data.view_deleted (docs/decisions.md).
 */

/** The tables with soft deletion; the view-deleted test checks that the schema has no other. */
export const SOFT_DELETED_TABLES = [
  'automation_rules',
  'custom_fields',
  'form_templates',
  'forms',
  'patients',
  'pdf_templates',
  'specialists',
  'treatment_plans',
] as const;
export type SoftDeletedTable = (typeof SOFT_DELETED_TABLES)[number];

/** The `include_deleted` query parameter of the list routes of soft-deleted resources. */
export const IncludeDeletedQuery = {
  include_deleted: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], {
      description: 'true: deleted rows too (needs data.view_deleted, 403 otherwise); default false: live rows only.',
    }),
  ),
};

/**
 * Whether the list asks for deleted rows too. Refused (403) without data.view_deleted: the policies would
 * hide the deleted rows anyway, and an answer without them would read as "none were deleted".
 */
export function includeDeletedOf(request: FastifyRequest): boolean {
  const value = (request.query as { include_deleted?: unknown } | undefined)?.include_deleted;
  if (value !== 'true') return false;
  if (!hasPermission(contextOf(request), 'data.view_deleted'))
    throw errors.forbidden('include_deleted=true needs the data.view_deleted permission in the organization.');
  return true;
}

let cursors = 0;

/**
 * Marks one live row deleted, under the caller's policies; false when the caller cannot update such a row.
 * `UPDATE ... WHERE id = $1` would read the table, and PostgreSQL then checks the new row against the
 * SELECT policies, which hide it from a caller without data.view_deleted ("new row violates row-level
 * security policy"). WHERE CURRENT OF a FOR UPDATE cursor reads no column of the new row: the UPDATE
 * policies and the table's triggers still apply, the read policies do not. `set` adds assignments
 * (`, status = $1`) with their `params`; they must not name a column (`version = version + 1` reads the
 * row, and the read policies apply again).
 */
export async function markDeleted(
  tx: Queryable,
  table: SoftDeletedTable,
  orgId: string,
  id: string,
  set = '',
  params: readonly unknown[] = [],
): Promise<boolean> {
  // A name of its own: two marks of one transaction may be in flight together (pipelined statements).
  const cursor = `mark_deleted_${table}_${++cursors}`;
  await tx.query(
    `declare ${cursor} cursor for select 1 from ${table} where organization_id = $1 and id = $2 and deleted_at is null for update`,
    [orgId, id],
  );
  const { rows } = await tx.query(`fetch ${cursor}`);
  if (rows.length) await tx.query(`update ${table} set deleted_at = now()${set} where current of ${cursor}`, params);
  await tx.query(`close ${cursor}`);
  return rows.length > 0;
}
