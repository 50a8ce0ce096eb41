import { isUniqueViolation, type Queryable } from '@clinic/db';
import type { StoredFile } from '../../platform/file-store.ts';

// Files, reviews and calendar entries of appointments. Every statement names the organization:
// superadmins run on app_bypass, where no policy narrows rows.

export interface FileRow {
  id: string;
  appointment_id: string;
  asset_key: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  uploaded_by: 'staff' | 'patient';
  uploaded_by_principal_id: string | null;
  created_at: Date;
}

const FILE_COLUMNS = `id, appointment_id, asset_key, filename, content_type, size_bytes::int as size_bytes, sha256, uploaded_by,
  uploaded_by_principal_id, created_at`;

export async function insertFile(
  tx: Queryable,
  orgId: string,
  f: StoredFile & { appointment_id: string; uploaded_by: 'staff' | 'patient'; uploaded_by_principal_id: string },
): Promise<FileRow> {
  const { rows } = await tx.query<FileRow>(
    `insert into appointment_files (organization_id, id, appointment_id, asset_key, filename, content_type, size_bytes, sha256,
       uploaded_by, uploaded_by_principal_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning ${FILE_COLUMNS}`,
    [
      orgId,
      f.id,
      f.appointment_id,
      f.asset_key,
      f.filename,
      f.content_type,
      f.size_bytes,
      f.sha256,
      f.uploaded_by,
      f.uploaded_by_principal_id,
    ],
  );
  return rows[0]!;
}

export async function listFiles(tx: Queryable, orgId: string, appointmentId: string): Promise<FileRow[]> {
  const { rows } = await tx.query<FileRow>(
    `select ${FILE_COLUMNS} from appointment_files where organization_id = $1 and appointment_id = $2 order by created_at, id`,
    [orgId, appointmentId],
  );
  return rows;
}

export async function findFile(tx: Queryable, orgId: string, appointmentId: string, fileId: string): Promise<FileRow | null> {
  const { rows } = await tx.query<FileRow>(
    `select ${FILE_COLUMNS} from appointment_files where organization_id = $1 and appointment_id = $2 and id = $3`,
    [orgId, appointmentId, fileId],
  );
  return rows[0] ?? null;
}

/** Deletes the row; false when the caller's policies do not let it (a patient and a file staff added). */
export async function deleteFile(tx: Queryable, orgId: string, appointmentId: string, fileId: string): Promise<boolean> {
  const { rowCount } = await tx.query('delete from appointment_files where organization_id = $1 and appointment_id = $2 and id = $3', [
    orgId,
    appointmentId,
    fileId,
  ]);
  return (rowCount ?? 0) > 0;
}

/** Which of these object keys an appointment file names (the orphan sweep deletes the others). */
export async function knownAssetKeys(tx: Queryable, keys: string[]): Promise<string[]> {
  const { rows } = await tx.query<{ asset_key: string }>(
    `select f.asset_key from unnest($1::text[]) k (key)
     join appointment_files f on f.organization_id = split_part(k.key, '/', 2)::uuid and f.asset_key = k.key`,
    [keys],
  );
  return rows.map((r) => r.asset_key);
}

export interface ReviewRow {
  id: string;
  appointment_id: string;
  patient_id: string;
  rating: number;
  comment: string | null;
  author_principal_id: string | null;
  created_at: Date;
}

const REVIEW_COLUMNS = 'id, appointment_id, patient_id, rating::int as rating, comment, author_principal_id, created_at';

/** The review, or null when the appointment has one already (the unique constraint decides a race). */
export async function insertReview(
  tx: Queryable,
  orgId: string,
  r: { appointmentId: string; patientId: string; rating: number; comment: string | null; author: string },
): Promise<ReviewRow | null> {
  try {
    const { rows } = await tx.query<ReviewRow>(
      `insert into appointment_reviews (organization_id, appointment_id, patient_id, rating, comment, author_principal_id)
       values ($1, $2, $3, $4, $5, $6) returning ${REVIEW_COLUMNS}`,
      [orgId, r.appointmentId, r.patientId, r.rating, r.comment, r.author],
    );
    return rows[0]!;
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

export async function listReviews(tx: Queryable, orgId: string, appointmentId: string): Promise<ReviewRow[]> {
  const { rows } = await tx.query<ReviewRow>(
    `select ${REVIEW_COLUMNS} from appointment_reviews where organization_id = $1 and appointment_id = $2 order by created_at, id`,
    [orgId, appointmentId],
  );
  return rows;
}

/** What a calendar entry of an appointment shows: times, status, the service, specialist and location names. */
export interface CalendarEntryRow {
  id: string;
  status: string;
  starts_at: Date;
  ends_at: Date;
  mode: string;
  updated_at: Date;
  created_at: Date;
  service_name: string;
  specialist_name: string | null;
  location_name: string | null;
  /** app.calendar_heading: the clinic's title choice and its name. */
  heading: [string, string] | null;
}

const ENTRY_COLUMNS = `a.id, a.status, a.starts_at, a.ends_at, a.mode, a.updated_at, a.created_at, s.name as service_name,
  sp.display_name as specialist_name, l.name as location_name, app.calendar_heading(a.organization_id) as heading`;
const ENTRY_JOINS = `join services s on s.organization_id = a.organization_id and s.id = a.service_id
  left join specialists sp on sp.organization_id = a.organization_id and sp.id = a.specialist_id
  left join locations l on l.organization_id = a.organization_id and l.id = a.location_id`;

export async function calendarEntry(tx: Queryable, orgId: string, appointmentId: string): Promise<CalendarEntryRow | null> {
  const { rows } = await tx.query<CalendarEntryRow>(
    `select ${ENTRY_COLUMNS} from appointments a ${ENTRY_JOINS} where a.organization_id = $1 and a.id = $2`,
    [orgId, appointmentId],
  );
  return rows[0] ?? null;
}

/**
 * The entries of a calendar's feed: appointments of its specialist, or claiming it (a room or device),
 * from `pastDays` ago on; booked ones (scheduled to done), and those cancelled or moved within the last
 * `cancelledDays` (so that subscribed calendars drop them). At most `limit`, earliest first.
 */
export async function feedEntries(
  tx: Queryable,
  orgId: string,
  cal: { id: string; specialist_id: string | null },
  o: { pastDays: number; cancelledDays: number; limit: number },
): Promise<CalendarEntryRow[]> {
  const { rows } = await tx.query<CalendarEntryRow>(
    `select ${ENTRY_COLUMNS} from appointments a ${ENTRY_JOINS}
     where a.organization_id = $1
       and (a.specialist_id = $2::uuid
            or exists (select 1 from calendar_claims cc where cc.organization_id = a.organization_id and cc.calendar_id = $3
                         and cc.appointment_id = a.id))
       and a.ends_at > now() - make_interval(days => $4)
       and (a.status in ('scheduled', 'confirmed', 'checked_in', 'in_progress', 'done')
            or (a.status in ('cancelled', 'rescheduled') and a.status_changed_at > now() - make_interval(days => $5)))
     order by a.starts_at, a.id limit $6`,
    [orgId, cal.specialist_id, cal.id, o.pastDays, o.cancelledDays, o.limit],
  );
  return rows;
}
