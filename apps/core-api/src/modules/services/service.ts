import type { Queryable } from '@clinic/db';
import { containsPattern, errors, listEnvelope, parseDateRange, parsePagination, parseSort, SqlWhere } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { emit } from '../events/emit.ts';
import * as q from './queries.ts';

/*
 * Create, read, list, change and delete of a catalog entry, written once for services, products and
 * service plans (resources.ts describes each). Every change is audited (`<entity>.created|updated|deleted`)
 * and emitted as a domain event carrying ids and changed field names only.
 */

export type Body = Record<string, unknown>;

export interface Resource {
  table: q.Table;
  /** The links a body may replace (location_ids, specialist_ids, services). */
  links: q.Link[];
  sort: Readonly<Record<string, string>>;
  /** Columns `q` searches (substring, case-insensitive). */
  searched: string[];
  /** The list's own filters beyond q and the created_at range. */
  filter?: (where: SqlWhere, query: Record<string, unknown>) => void;
}

// ---------------------------------------------------------------------------------------------
// Input: one normaliser for the fields the three tables share (name, description, money) and the SKU.

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
const SKU = /^[A-Z0-9][A-Z0-9._-]{0,63}$/;

/** Per-column fixers: the normalised value, or a problem (a string starting with "!"). */
const FIXERS: Record<string, (v: unknown) => unknown> = {
  name: (v) => String(v).trim() || '!must not be blank',
  description: (v) => (typeof v === 'string' ? v.trim() || null : null),
  currency: (v) => {
    const code = String(v).trim().toUpperCase();
    return CURRENCIES.has(code) ? code : '!must be an ISO 4217 currency code such as RON, EUR or USD';
  },
  sku: (v) => {
    const sku = String(v).trim().toUpperCase();
    return SKU.test(sku) ? sku : '!letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64';
  },
};
const isProblem = (v: unknown): v is string => typeof v === 'string' && v.startsWith('!');

/** A link's items from the body: ids (de-duplicated), or `{id, quantity}` with each id at most once. */
function itemsOf(l: q.Link, raw: unknown, problems: Record<string, string>): { id: string; quantity?: number }[] {
  if (!l.quantity) return [...new Set((raw as string[]).map((id) => id.toLowerCase()))].map((id) => ({ id }));
  const items = (raw as Record<string, unknown>[]).map((i) => ({ id: String(i[l.child]).toLowerCase(), quantity: Number(i.quantity) }));
  if (new Set(items.map((i) => i.id)).size !== items.length) problems[l.field] = `each ${l.child} at most once`;
  return items;
}

interface Input {
  values: q.Values;
  links: Map<q.Link, { id: string; quantity?: number }[]>;
}

/** Only the keys given; every problem in one 400 validation_error. */
function normalize(r: Resource, body: Body): Input {
  const problems: Record<string, string> = {};
  const values: q.Values = {};
  for (const col of r.table.writable) {
    if (!Object.hasOwn(body, col)) continue;
    const v = FIXERS[col] ? FIXERS[col](body[col]) : body[col];
    if (isProblem(v)) problems[col] = v.slice(1);
    else values[col] = v;
  }
  const links = new Map<q.Link, { id: string; quantity?: number }[]>();
  for (const l of r.links) if (Object.hasOwn(body, l.field)) links.set(l, itemsOf(l, body[l.field], problems));
  if (Object.keys(problems).length) throw errors.validation(problems);
  return { values, links };
}

/** "Link ids belong to the organization": every id names a row of the organization (a live one where rows are soft-deleted). */
export async function checkIds(tx: Queryable, orgId: string, l: Pick<q.Link, 'field' | 'target'>, ids: string[]): Promise<void> {
  const missing = await q.missingIds(tx, orgId, l.target, ids);
  if (missing.length) throw errors.validation({ [l.field]: `not found in this organization: ${missing.join(', ')}` });
}

async function writeLinks(tx: Queryable, orgId: string, id: string, links: Input['links']): Promise<void> {
  for (const [l, items] of links) {
    await checkIds(
      tx,
      orgId,
      l,
      items.map((i) => i.id),
    );
    await q.replaceLinks(tx, l, orgId, id, items);
  }
}

/** A link's value as rows present it, for comparing a PATCH with the current row. */
const linkValue = (l: q.Link, items: { id: string; quantity?: number }[]) =>
  JSON.stringify(
    [...items].sort((a, b) => (a.id < b.id ? -1 : 1)).map((i) => (l.quantity ? { [l.child]: i.id, quantity: i.quantity } : i.id)),
  );

/** A row's link field back as items. */
const itemsOfRow = (l: q.Link, row: q.Row) =>
  (row[l.field] as Record<string, unknown>[] | string[]).map((c) =>
    typeof c === 'string' ? { id: c } : { id: String(c[l.child]), quantity: Number(c.quantity) },
  );

const notFound = (r: Resource) => errors.notFound(`No ${r.table.entity.replace('_', ' ')} with this id in this organization.`);

/** The client-set fields of a row, for audit entries. */
const snapshot = (r: Resource, row: q.Values) =>
  Object.fromEntries([...r.table.writable, ...r.links.map((l) => l.field)].filter((c) => c in row).map((c) => [c, row[c]]));

// ---------------------------------------------------------------------------------------------

export async function createEntry(tx: Queryable, actor: OrgActor, r: Resource, body: Body): Promise<q.Row> {
  const input = normalize(r, body);
  const id = await q.insertRow(tx, r.table, actor.orgId, input.values);
  await writeLinks(tx, actor.orgId, id, input.links);
  const row = (await q.findRow(tx, r.table, actor.orgId, id))!;
  const entity = r.table.entity;
  await audit(tx, actor, `${entity}.created`, entity, id, snapshot(r, row));
  await emit(tx, actor.orgId, `${entity}.created`, { id });
  return row;
}

export async function getEntry(tx: Queryable, orgId: string, r: Resource, id: string, publicOnly: boolean): Promise<q.Row> {
  const row = await q.findRow(tx, r.table, orgId, id, { publicOnly });
  if (!row) throw notFound(r);
  return row;
}

/** Pagination, sort (allow-list), q, created_at range, the resource's filters; a patient sees public rows only. */
export async function listEntries(tx: Queryable, orgId: string, r: Resource, query: Record<string, unknown>, publicOnly: boolean) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, r.sort);
  const where = new SqlWhere().add('t.organization_id = ?', orgId).dateRange('t.created_at', parseDateRange(query, 'created_at'));
  const text = typeof query.q === 'string' ? query.q.trim() : '';
  if (text) {
    const pattern = containsPattern(text);
    where.add(`(${r.searched.map((c) => `t.${c} ilike ?`).join(' or ')})`, ...r.searched.map(() => pattern));
  }
  if (publicOnly && r.table.publicRows) where.add('t.is_public');
  r.filter?.(where, query);
  const { rows, total } = await q.listRows(tx, r.table, where, sort, page);
  return listEnvelope(rows, page, total);
}

/**
 * PATCH: only the fields given, and of those only the ones whose value differs are written, audited
 * (names, and from/to of plain fields) and emitted. A link field replaces the whole set. A PATCH that
 * changes nothing writes nothing and returns the entry.
 */
export async function updateEntry(tx: Queryable, actor: OrgActor, r: Resource, id: string, body: Body): Promise<q.Row> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const input = normalize(r, body);
  const current = await q.findRow(tx, r.table, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound(r);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  const values: q.Values = {};
  for (const [col, v] of Object.entries(input.values)) {
    if (v === current[col]) continue;
    changes[col] = { from: current[col], to: v };
    values[col] = v;
  }
  const links: Input['links'] = new Map();
  for (const [l, items] of input.links) if (linkValue(l, items) !== linkValue(l, itemsOfRow(l, current))) links.set(l, items);
  const fields = [...Object.keys(values), ...[...links.keys()].map((l) => l.field)];
  if (!fields.length) return current;
  if (Object.keys(values).length) await q.updateRow(tx, r.table, actor.orgId, id, values);
  else await q.touchRow(tx, r.table, actor.orgId, id);
  await writeLinks(tx, actor.orgId, id, links);
  const entity = r.table.entity;
  await audit(tx, actor, `${entity}.updated`, entity, id, { fields, changes });
  await emit(tx, actor.orgId, `${entity}.updated`, { id, changed: fields });
  return (await q.findRow(tx, r.table, actor.orgId, id))!;
}

export async function deleteEntry(tx: Queryable, actor: OrgActor, r: Resource, id: string): Promise<void> {
  const current = await q.findRow(tx, r.table, actor.orgId, id, { forUpdate: true });
  if (!current) throw notFound(r);
  await q.deleteRow(tx, r.table, actor.orgId, id);
  // The row is gone; the audit entry keeps what it was.
  const entity = r.table.entity;
  await audit(tx, actor, `${entity}.deleted`, entity, id, snapshot(r, current));
  await emit(tx, actor.orgId, `${entity}.deleted`, { id });
}
