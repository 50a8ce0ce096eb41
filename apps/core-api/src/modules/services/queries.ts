import { isForeignKeyViolation, isUniqueViolation, prepared, type Queryable } from '@clinic/db';
import { errors, type Pagination, type Sort, SqlWhere } from '@clinic/http-kit';

/*
 * SQL of the catalog, written once for its three tables (services, products, service_plans) and their
 * link tables. A Table names the columns a client may set (also the allow-list of the dynamic INSERT
 * and UPDATE), the read-only expressions added to every read (the links), and the 409 codes. Every
 * statement names the organization: superadmins run on app_bypass, where no policy narrows rows.
 */

export interface Table {
  /** The table; rows are read as `t`. */
  name: string;
  /** Audit entity type and event prefix: service, product, service_plan. */
  entity: string;
  /** Columns a client may set. */
  writable: readonly string[];
  /** Read-only select expressions on `t` (link arrays), each `<expr> as <name>`. */
  extra: string[];
  /** 409 code when the unique name (or SKU) is taken, and the field it names. */
  taken: { code: string; field: string };
  /** 409 code and message when a plan still uses the row (its link's foreign key restricts the delete). */
  inUse: { code: string; message: string };
  /** Has is_public (patients see only those rows). */
  publicRows: boolean;
}

/** A link table from a catalog row (`parent`) to rows of `target`, optionally with a quantity. */
export interface Link {
  /** Body and response field: location_ids, specialist_ids, services. */
  field: string;
  table: string;
  parent: string;
  child: string;
  /** The linked table, for the "belongs to the organization" check; `live` when it is soft-deleted. */
  target: { table: string; live?: boolean };
  quantity?: boolean;
}

export type Row = Record<string, unknown> & { id: string; organization_id: string };
export type Values = Record<string, unknown>;

const columnsOf = (t: Table) => [
  't.id',
  't.organization_id',
  ...t.writable.map((c) => `t.${c}`),
  ...t.extra,
  't.created_at',
  't.updated_at',
];
const selectOf = (t: Table) => `select ${columnsOf(t).join(', ')} from ${t.name} t`;

/** The read-only select expression of a link: an array of ids, or `[{<child>, quantity}]` ordered by id. */
export function linkColumn(l: Link, as = l.field): string {
  const where = `l.organization_id = t.organization_id and l.${l.parent} = t.id`;
  // A soft-deleted specialist no longer delivers anything, whatever links are left.
  const live = l.target.live
    ? ` and exists (select 1 from ${l.target.table} x where x.organization_id = l.organization_id and x.id = l.${l.child} and x.deleted_at is null)`
    : '';
  if (!l.quantity) return `array(select l.${l.child} from ${l.table} l where ${where}${live} order by l.${l.child}) as ${as}`;
  return `coalesce((select json_agg(json_build_object('${l.child}', l.${l.child}, 'quantity', l.quantity) order by l.${l.child})
    from ${l.table} l where ${where}${live}), '[]'::json) as ${as}`;
}

function conflict(t: Table, err: unknown, values: Values): never {
  // A writable column that names another row (a service's intake form): its foreign key names the column.
  if (isForeignKeyViolation(err)) {
    const constraint = String((err as { constraint?: string }).constraint ?? '');
    const field = t.writable.find((c) => constraint.includes(c));
    if (field) throw errors.validation({ [field]: "must name one of the organization's records" });
  }
  if (isUniqueViolation(err)) {
    const field = t.taken.field;
    throw errors.conflict(
      t.taken.code,
      `This organization already has a ${t.entity.replace('_', ' ')} with ${field} "${String(values[field] ?? '')}".`,
    );
  }
  throw err;
}

/** Inserts the given columns (the others take the table's defaults); returns the new id. */
export async function insertRow(tx: Queryable, t: Table, orgId: string, values: Values): Promise<string> {
  const cols = t.writable.filter((c) => Object.hasOwn(values, c));
  try {
    const { rows } = await tx.query<{ id: string }>(
      `insert into ${t.name} (organization_id${cols.map((c) => `, ${c}`).join('')})
       values ($1${cols.map((_, i) => `, $${i + 2}`).join('')}) returning id`,
      [orgId, ...cols.map((c) => values[c])],
    );
    return rows[0]!.id;
  } catch (err) {
    return conflict(t, err, values);
  }
}

/** One row as the caller may see it; `publicOnly` narrows to is_public rows (what a patient reads). */
export async function findRow(
  tx: Queryable,
  t: Table,
  orgId: string,
  id: string,
  opts: { forUpdate?: boolean; publicOnly?: boolean } = {},
): Promise<Row | null> {
  const { rows } = await tx.query<Row>(
    `${selectOf(t)} where t.organization_id = $1 and t.id = $2${opts.publicOnly && t.publicRows ? ' and t.is_public' : ''}${
      opts.forUpdate ? ' for update of t' : ''
    }`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

/** Sets only the given columns (names from `writable`, values bound). */
export async function updateRow(tx: Queryable, t: Table, orgId: string, id: string, values: Values): Promise<void> {
  const cols = t.writable.filter((c) => Object.hasOwn(values, c));
  if (!cols.length) return;
  try {
    await tx.query(`update ${t.name} set ${cols.map((c, i) => `${c} = $${i + 3}`).join(', ')} where organization_id = $1 and id = $2`, [
      orgId,
      id,
      ...cols.map((c) => values[c]),
    ]);
  } catch (err) {
    conflict(t, err, values);
  }
}

/** Touches updated_at (a change of the row's links only). */
export async function touchRow(tx: Queryable, t: Table, orgId: string, id: string): Promise<void> {
  await tx.query(`update ${t.name} set updated_at = now() where organization_id = $1 and id = $2`, [orgId, id]);
}

/** Removes the row (its own links go with it); 409 `inUse` while a plan still uses it. */
export async function deleteRow(tx: Queryable, t: Table, orgId: string, id: string): Promise<void> {
  try {
    await tx.query(`delete from ${t.name} where organization_id = $1 and id = $2`, [orgId, id]);
  } catch (err) {
    if (isForeignKeyViolation(err)) throw errors.conflict(t.inUse.code, t.inUse.message);
    throw err;
  }
}

export async function listRows(
  tx: Queryable,
  t: Table,
  where: SqlWhere,
  sort: Sort,
  page: Pagination,
): Promise<{ rows: Row[]; total: number }> {
  // Both at once (one round trip), prepared: their texts come from a few sorts and filters, and planning the
  // page with its link columns' policies cost more than running it (bench/directory.ts).
  const countText = `select count(*)::int as total from ${t.name} t where ${where.text}`;
  const countParams = [...where.params];
  const pageText = `${selectOf(t)} where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`;
  const [count, { rows }] = await Promise.all([
    tx.query<{ total: number }>(countText, countParams, prepared(countText)),
    tx.query<Row>(pageText, where.params, prepared(pageText)),
  ]);
  return { rows, total: count.rows[0]!.total };
}

/** The ids among `ids` that name no row of the organization the caller can see (no live one, for `live` targets). */
export async function missingIds(tx: Queryable, orgId: string, target: Link['target'], ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const { rows } = await tx.query<{ id: string }>(
    `select id from ${target.table} where organization_id = $1 and id = any($2::uuid[])${target.live ? ' and deleted_at is null' : ''}`,
    [orgId, ids],
  );
  const found = new Set(rows.map((r) => r.id));
  return ids.filter((id) => !found.has(id));
}

/** Replaces a row's links of one kind with `items` (ids, with quantities where the link has them). */
export async function replaceLinks(tx: Queryable, l: Link, orgId: string, parentId: string, items: { id: string; quantity?: number }[]) {
  await tx.query(`delete from ${l.table} where organization_id = $1 and ${l.parent} = $2`, [orgId, parentId]);
  if (!items.length) return;
  const ids = items.map((i) => i.id);
  try {
    if (l.quantity) {
      await tx.query(
        `insert into ${l.table} (organization_id, ${l.parent}, ${l.child}, quantity)
         select $1, $2, u.id, u.quantity from unnest($3::uuid[], $4::int[]) as u (id, quantity)`,
        [orgId, parentId, ids, items.map((i) => i.quantity ?? 1)],
      );
    } else {
      await tx.query(`insert into ${l.table} (organization_id, ${l.parent}, ${l.child}) select $1, $2, unnest($3::uuid[])`, [
        orgId,
        parentId,
        ids,
      ]);
    }
  } catch (err) {
    // The check before this one saw every id; a row removed meanwhile fails the foreign key.
    if (isForeignKeyViolation(err)) throw errors.validation({ [l.field]: "every id must name one of the organization's records" });
    throw err;
  }
}

// The products of a service plan, with the product's name, SKU and price.
export interface PlanItem {
  product_id: string;
  name: string;
  sku: string;
  price_minor: number;
  currency: string;
  quantity: number;
  created_at: Date;
}
const ITEM_COLUMNS = 'l.product_id, p.name, p.sku, p.price_minor, p.currency, l.quantity, l.created_at';
const ITEM_FROM = 'service_plan_products l join products p on p.organization_id = l.organization_id and p.id = l.product_id';

export async function findPlanItem(tx: Queryable, orgId: string, planId: string, productId: string): Promise<PlanItem | null> {
  const { rows } = await tx.query<PlanItem>(
    `select ${ITEM_COLUMNS} from ${ITEM_FROM} where l.organization_id = $1 and l.plan_id = $2 and l.product_id = $3`,
    [orgId, planId, productId],
  );
  return rows[0] ?? null;
}

export async function listPlanItems(tx: Queryable, orgId: string, planId: string, sort: Sort, page: Pagination) {
  const where = new SqlWhere().add('l.organization_id = ?', orgId).add('l.plan_id = ?', planId);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from ${ITEM_FROM} where ${where.text}`, where.params);
  const { rows } = await tx.query<PlanItem>(
    `select ${ITEM_COLUMNS} from ${ITEM_FROM} where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

export async function insertPlanItem(tx: Queryable, orgId: string, planId: string, productId: string, quantity: number): Promise<void> {
  await tx.query('insert into service_plan_products (organization_id, plan_id, product_id, quantity) values ($1, $2, $3, $4)', [
    orgId,
    planId,
    productId,
    quantity,
  ]);
}

export async function setPlanItemQuantity(
  tx: Queryable,
  orgId: string,
  planId: string,
  productId: string,
  quantity: number,
): Promise<void> {
  await tx.query('update service_plan_products set quantity = $4 where organization_id = $1 and plan_id = $2 and product_id = $3', [
    orgId,
    planId,
    productId,
    quantity,
  ]);
}

/** The removed entry's quantity, or null when the plan did not include the product. */
export async function deletePlanItem(tx: Queryable, orgId: string, planId: string, productId: string): Promise<number | null> {
  const { rows } = await tx.query<{ quantity: number }>(
    'delete from service_plan_products where organization_id = $1 and plan_id = $2 and product_id = $3 returning quantity',
    [orgId, planId, productId],
  );
  return rows[0]?.quantity ?? null;
}
