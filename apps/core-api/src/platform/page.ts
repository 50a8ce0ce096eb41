import type { Queryable } from '@clinic/db';
import type { Pagination, Sort, SqlWhere } from '@clinic/http-kit';

/**
 * One page of a list and its total (spec 4.1) in one statement (count(*) over ()); only a page past the
 * end, which has no row to carry the total, costs a second count. `select` is the column list with its
 * `select`, `from` the rest of the statement up to (not including) the order: from, joins and where.
 */
export async function pageOf<R>(
  tx: Queryable,
  select: string,
  from: string,
  where: SqlWhere,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: R[]; total: number }> {
  const { rows } = await tx.query<R & { total: number }>(
    `${select}, count(*) over ()::int as total ${from} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  if (rows.length) return { rows: rows.map(({ total: _t, ...r }) => r as R), total: rows[0]!.total };
  if (page.offset === 0) return { rows: [], total: 0 };
  const { rows: n } = await tx.query<{ n: number }>(`select count(*)::int as n ${from}`, where.params.slice(0, -2));
  return { rows: [], total: n[0]?.n ?? 0 };
}
