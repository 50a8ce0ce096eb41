import { clinicCountry } from '../../platform/phone.ts';
import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort, type ListEnvelope } from '@clinic/http-kit';
import { recordChange } from '../../platform/audit.ts';
import { emitEvent } from '../events/emit.ts';
import type { Actor } from '../../platform/actor.ts';
import {
  deleteLocation as deleteRow,
  findLocation,
  insertLocation,
  listLocations as listRows,
  updateLocation as updateRow,
  WRITABLE,
  type LocationInput,
  type LocationRow,
  type Writable,
} from './queries.ts';
import { LOCATION_SORT } from './schemas.ts';
import { normalizeLocation, type LocationBody } from './validation.ts';

const notFound = () => errors.notFound('No location with this id in this organization.');

function audit(tx: Queryable, actor: Actor, orgId: string, action: string, id: string, data: Record<string, unknown>) {
  return recordChange(tx, actor, action, { type: 'location', id: id, organizationId: orgId }, data);
}

/** The client-set fields of a row, for audit entries. */
const snapshot = (row: LocationRow) => Object.fromEntries(WRITABLE.map((c) => [c, row[c]]));

export async function createLocation(
  tx: Queryable,
  actor: Actor,
  orgId: string,
  body: LocationBody & { name: string; timezone: string },
): Promise<LocationRow> {
  const input = normalizeLocation(body, await clinicCountry(tx, orgId)) as LocationInput;
  const row = await insertLocation(tx, orgId, input);
  await audit(tx, actor, orgId, 'location.created', row.id, snapshot(row));
  await emitEvent(tx, { organizationId: orgId, type: 'location.created', data: { organization_id: orgId, location_id: row.id } });
  return row;
}

export async function getLocation(tx: Queryable, orgId: string, id: string): Promise<LocationRow> {
  const row = await findLocation(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

/** GET .../locations: pagination, sort (name, created_at; newest first by default), q, created_at range. */
export async function listLocations(tx: Queryable, orgId: string, query: Record<string, unknown>): Promise<ListEnvelope<LocationRow>> {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, LOCATION_SORT);
  const created = parseDateRange(query, 'created_at');
  const q = typeof query.q === 'string' ? query.q.trim() : '';
  const { rows, total } = await listRows(tx, orgId, { q: q || undefined, created }, sort, page);
  return listEnvelope(rows, page, total);
}

/**
 * PATCH: only the fields given, and of those only the ones whose value differs are written and
 * audited (with from and to). A PATCH that changes nothing writes nothing and returns the location.
 */
export async function updateLocation(tx: Queryable, actor: Actor, orgId: string, id: string, body: LocationBody): Promise<LocationRow> {
  if (!Object.keys(body).length) throw errors.validation({ _body: 'give at least one field to change' });
  const current = await findLocation(tx, orgId, id, { forUpdate: true });
  const input = normalizeLocation(body, current?.country ?? (await clinicCountry(tx, orgId)));
  if (!current) throw notFound();
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  const set: Partial<Record<Writable, string | null>> = {};
  for (const key of WRITABLE) {
    if (!Object.hasOwn(input, key) || input[key] === current[key]) continue;
    changes[key] = { from: current[key], to: input[key] };
    set[key] = input[key] ?? null;
  }
  if (!Object.keys(set).length) return current;
  const row = await updateRow(tx, orgId, id, set);
  if (!row) throw notFound();
  await audit(tx, actor, orgId, 'location.updated', id, { changes });
  await emitEvent(tx, {
    organizationId: orgId,
    type: 'location.updated',
    data: { organization_id: orgId, location_id: id, changed: Object.keys(changes) },
  });
  return row;
}

export async function deleteLocation(tx: Queryable, actor: Actor, orgId: string, id: string): Promise<void> {
  const row = await deleteRow(tx, orgId, id);
  if (!row) throw notFound();
  // The row is gone; the audit entry keeps what it was.
  await audit(tx, actor, orgId, 'location.deleted', id, snapshot(row));
  await emitEvent(tx, { organizationId: orgId, type: 'location.deleted', data: { organization_id: orgId, location_id: id } });
}
