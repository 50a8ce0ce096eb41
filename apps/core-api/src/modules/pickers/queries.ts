import type { Queryable } from '@clinic/db';
import { containsPattern, type Picker, SqlWhere } from '@clinic/http-kit';

/** How one resource is picked: its table, the live rows, what the label shows and what `q` matches. */
export interface PickerSource {
  table: string;
  /** Rows a picker may offer (live, of the organization in scope). */
  live: string;
  label: string;
  detail: string;
  /** What `q` matches: a condition with `?` placeholders and their values, given the ILIKE pattern. */
  match(pattern: string, orgId: string): [string, ...unknown[]];
  order: string;
}

export interface PickerRow {
  id: string;
  label: string;
  detail: string | null;
}

/**
 * One picker query under the caller's policies (spec 4.1): ids win over q; q is a case-insensitive
 * substring; at most `limit` rows, no pagination. Every statement names the organization.
 */
export async function pick(tx: Queryable, s: PickerSource, orgId: string, p: Picker): Promise<PickerRow[]> {
  const where = new SqlWhere().add('t.organization_id = ?', orgId).add(s.live);
  if (p.mode === 'ids') where.add('t.id = any(?::uuid[])', p.ids);
  else if (p.q) where.add(...s.match(containsPattern(p.q), orgId));
  const { rows } = await tx.query<PickerRow>(
    `select t.id, ${s.label} as label, ${s.detail} as detail from ${s.table} t where ${where.text}
     order by ${s.order}, t.id limit ${where.param(p.limit)}`,
    where.params,
  );
  return rows;
}
