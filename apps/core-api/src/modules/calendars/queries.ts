import { isForeignKeyViolation, type Queryable } from '@clinic/db';
import { type DateRange, errors, SqlWhere, type Pagination, type Sort } from '@clinic/http-kit';

export interface CalendarRow {
  id: string;
  organization_id: string;
  kind: 'specialist' | 'room' | 'device';
  name: string;
  description: string | null;
  specialist_id: string | null;
  location_id: string | null;
  feed_enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `c.id, c.organization_id, c.kind, c.name, c.description, c.specialist_id, c.location_id,
  c.feed_token_hash is not null as feed_enabled, c.created_at, c.updated_at`;

// Every statement names the organization: superadmins run on app_bypass, where no policy narrows rows.

export async function findCalendar(tx: Queryable, orgId: string, id: string, forUpdate = false): Promise<CalendarRow | null> {
  const { rows } = await tx.query<CalendarRow>(
    `select ${COLUMNS} from calendars c where c.organization_id = $1 and c.id = $2${forUpdate ? ' for update' : ''}`,
    [orgId, id],
  );
  return rows[0] ?? null;
}

export async function insertCalendar(
  tx: Queryable,
  orgId: string,
  c: { kind: string; name: string; description: string | null; location_id: string },
): Promise<string> {
  try {
    const { rows } = await tx.query<{ id: string }>(
      'insert into calendars (organization_id, kind, name, description, location_id) values ($1, $2, $3, $4, $5) returning id',
      [orgId, c.kind, c.name, c.description, c.location_id],
    );
    return rows[0]!.id;
  } catch (err) {
    if (isForeignKeyViolation(err)) throw errors.validation({ location_id: "must name one of the organization's locations" });
    throw err;
  }
}

export async function updateCalendar(tx: Queryable, orgId: string, id: string, c: { name: string; description: string | null }) {
  await tx.query('update calendars set name = $3, description = $4 where organization_id = $1 and id = $2', [
    orgId,
    id,
    c.name,
    c.description,
  ]);
}

/** Deletes a room or device calendar; its availability and past claims go with it. */
export async function deleteCalendar(tx: Queryable, orgId: string, id: string): Promise<void> {
  await tx.query('delete from calendars where organization_id = $1 and id = $2', [orgId, id]);
}

/** Whether the calendar holds an active claim that has not ended (a booked appointment, a live hold). */
export async function hasFutureClaims(tx: Queryable, orgId: string, id: string): Promise<boolean> {
  const { rows } = await tx.query(
    `select 1 from calendar_claims where organization_id = $1 and calendar_id = $2 and active and upper(during) > now()
       and (expires_at is null or expires_at > now()) limit 1`,
    [orgId, id],
  );
  return rows.length > 0;
}

export async function listCalendars(
  tx: Queryable,
  orgId: string,
  f: { kind?: string | undefined; locationId?: string | undefined; specialistId?: string | undefined; created: DateRange },
  sort: Sort,
  page: Pagination,
) {
  const where = new SqlWhere().add('c.organization_id = ?', orgId).dateRange('c.created_at', f.created);
  if (f.kind) where.add('c.kind = ?', f.kind);
  if (f.locationId) where.add('c.location_id = ?', f.locationId);
  if (f.specialistId) where.add('c.specialist_id = ?', f.specialistId);
  const count = await tx.query<{ total: number }>(`select count(*)::int as total from calendars c where ${where.text}`, where.params);
  const { rows } = await tx.query<CalendarRow>(
    `select ${COLUMNS} from calendars c where ${where.text} order by ${sort.sql} limit ${where.param(page.limit)} offset ${where.param(page.offset)}`,
    where.params,
  );
  return { rows, total: count.rows[0]!.total };
}

/** The location of a room or device calendar, with its zone (the default zone of its rules). */
export async function calendarLocation(tx: Queryable, orgId: string, locationId: string): Promise<Map<string, string>> {
  const { rows } = await tx.query<{ id: string; timezone: string }>(
    'select id, timezone from locations where organization_id = $1 and id = $2',
    [orgId, locationId],
  );
  return new Map(rows.map((r) => [r.id, r.timezone]));
}

/** Sets or clears the feed secret's hash. */
export async function setFeedToken(tx: Queryable, orgId: string, id: string, hash: string | null): Promise<void> {
  await tx.query('update calendars set feed_token_hash = $3 where organization_id = $1 and id = $2', [orgId, id, hash]);
}
