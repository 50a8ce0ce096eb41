import type { IcsEvent } from '../../platform/icalendar.ts';
import type { CalendarEntryRow } from './extras-queries.ts';

const MODES: Record<string, string> = { video: 'Video visit', phone: 'Phone call' };

/**
 * The event of an appointment: the service's name, the specialist, where, the status; never the patient's
 * name or contact data (docs/decisions.md). The UID is the appointment id, so a client that imported or
 * subscribed updates the same entry.
 */
export function appointmentEvent(row: CalendarEntryRow, host: string, o: { withSpecialist: boolean; privateClass?: boolean }): IcsEvent {
  const gone = row.status === 'cancelled' || row.status === 'rescheduled';
  const where = MODES[row.mode] ?? row.location_name;
  return {
    uid: `${row.id}@${host}`,
    stamp: row.updated_at,
    start: row.starts_at,
    end: row.ends_at,
    summary: row.specialist_name && o.withSpecialist ? `${row.service_name} with ${row.specialist_name}` : row.service_name,
    description: `Appointment ${row.id} (${row.status.replace('_', ' ')})`,
    location: where ?? null,
    status: gone ? 'CANCELLED' : 'CONFIRMED',
    ...(o.privateClass ? { privateClass: true } : {}),
  };
}
