import type { Queryable } from '@clinic/db';
import { errors, listEnvelope, parseDateRange, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import * as av from '../availability/queries.ts';
import { checkAvailability, type ExceptionBody, type RuleBody, windowRange } from '../availability/service.ts';
import { emit } from '../events/emit.ts';
import * as q from './queries.ts';
import { CALENDAR_SORT } from './schemas.ts';

const notFound = () => errors.notFound('No calendar with this id in this organization.');
const text = (v: string | null | undefined) => (typeof v === 'string' ? v.trim() || null : null);

export async function getCalendar(tx: Queryable, orgId: string, id: string) {
  const row = await q.findCalendar(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

export async function listCalendars(tx: Queryable, orgId: string, query: Record<string, unknown>) {
  const page = parsePagination(query);
  const sort = parseSort(query.sort, CALENDAR_SORT, '-created_at', 'c.id');
  const filter = {
    kind: typeof query.kind === 'string' && query.kind ? query.kind : undefined,
    locationId: typeof query.location_id === 'string' && query.location_id ? query.location_id : undefined,
    specialistId: typeof query.specialist_id === 'string' && query.specialist_id ? query.specialist_id : undefined,
    created: parseDateRange(query, 'created_at'),
  };
  const { rows, total } = await q.listCalendars(tx, orgId, filter, sort, page);
  return listEnvelope(rows, page, total);
}

/** A room or a device at a location; a specialist's calendar is made with the specialist. */
export async function createCalendar(
  tx: Queryable,
  actor: OrgActor,
  body: { kind: 'room' | 'device'; name: string; description?: string | null; location_id: string },
) {
  const name = body.name.trim();
  if (!name) throw errors.validation({ name: 'must not be blank' });
  const id = await q.insertCalendar(tx, actor.orgId, {
    kind: body.kind,
    name,
    description: text(body.description),
    location_id: body.location_id.toLowerCase(),
  });
  await audit(tx, actor, 'calendar.created', 'calendar', id, { kind: body.kind });
  await emit(tx, actor.orgId, 'calendar.created', { id, kind: body.kind });
  return getCalendar(tx, actor.orgId, id);
}

export async function updateCalendar(tx: Queryable, actor: OrgActor, id: string, body: { name?: string; description?: string | null }) {
  const current = await q.findCalendar(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  const name = body.name === undefined ? current.name : body.name.trim();
  if (!name) throw errors.validation({ name: 'must not be blank' });
  const next = { name, description: body.description === undefined ? current.description : text(body.description) };
  const changed = (['name', 'description'] as const).filter((k) => next[k] !== current[k]);
  if (!changed.length) return current;
  await q.updateCalendar(tx, actor.orgId, id, next);
  await audit(tx, actor, 'calendar.updated', 'calendar', id, { fields: changed });
  await emit(tx, actor.orgId, 'calendar.updated', { id, changed });
  return getCalendar(tx, actor.orgId, id);
}

/** A room or device without bookings ahead; a specialist's calendar goes with the specialist (409). */
export async function deleteCalendar(tx: Queryable, actor: OrgActor, id: string): Promise<void> {
  const current = await q.findCalendar(tx, actor.orgId, id, true);
  if (!current) throw notFound();
  if (current.kind === 'specialist')
    throw errors.conflict('specialist_calendar', "A specialist's calendar goes with the specialist (DELETE /v1/specialists/{id}).");
  if (await q.hasFutureClaims(tx, actor.orgId, id))
    throw errors.conflict('calendar_in_use', 'The calendar has appointments or holds ahead; move or cancel them first.');
  await q.deleteCalendar(tx, actor.orgId, id);
  await audit(tx, actor, 'calendar.deleted', 'calendar', id, { kind: current.kind });
  await emit(tx, actor.orgId, 'calendar.deleted', { id });
}

/** The availability of a room or device (a specialist's is at /v1/specialists/{id}/availability). */
async function ownerOf(tx: Queryable, orgId: string, id: string) {
  const cal = await getCalendar(tx, orgId, id);
  if (cal.kind === 'specialist')
    throw errors.conflict('specialist_calendar', "A specialist's availability is read and set at /v1/specialists/{id}/availability.");
  return cal;
}

export async function getCalendarAvailability(tx: Queryable, orgId: string, id: string, range: { from?: string; to?: string }) {
  const cal = await ownerOf(tx, orgId, id);
  const owner = av.calendarOwner(cal.id);
  const dates = windowRange(range);
  const windows = dates ? await av.openWindows(tx, orgId, owner, dates.from, dates.to) : undefined;
  return {
    calendar_id: cal.id,
    rules: await av.readRules(tx, orgId, owner),
    exceptions: await av.readExceptions(tx, orgId, owner),
    ...(windows ? { windows } : {}),
  };
}

export async function putCalendarAvailability(
  tx: Queryable,
  actor: OrgActor,
  id: string,
  body: { rules: RuleBody[]; exceptions?: ExceptionBody[] },
) {
  const cal = await ownerOf(tx, actor.orgId, id);
  const locations = await q.calendarLocation(tx, actor.orgId, cal.location_id!);
  const { rules, exceptions } = checkAvailability(body, locations, "not this calendar's location");
  await av.replaceAvailability(tx, actor.orgId, av.calendarOwner(cal.id), rules, exceptions);
  const counts = { rules: rules.length, exceptions: exceptions.length };
  await audit(tx, actor, 'calendar.availability_updated', 'calendar', cal.id, counts);
  await emit(tx, actor.orgId, 'calendar.updated', { id: cal.id, changed: ['availability'] });
  return getCalendarAvailability(tx, actor.orgId, cal.id, {});
}
