import { appointmentTitle, type IcsEvent } from '../../platform/icalendar.ts';
import type { CalendarEntryRow } from './extras-queries.ts';

const MODES: Record<string, string> = { video: 'Video visit', phone: 'Phone call' };

/**
 * The event of an appointment: a title that says what the clinic chose (its name by default; the service and the
 * specialist only if it chose so), where, the status; never the patient's name or contact data (docs/decisions.md).
 * Every entry is CLASS:PRIVATE. The UID is the appointment id, so a client that imported or
 * subscribed updates the same entry.
 */
export function appointmentEvent(row: CalendarEntryRow, host: string, o: { withSpecialist: boolean }): IcsEvent {
  const gone = row.status === 'cancelled' || row.status === 'rescheduled';
  const where = MODES[row.mode] ?? row.location_name;
  return {
    uid: `${row.id}@${host}`,
    stamp: row.updated_at,
    start: row.starts_at,
    end: row.ends_at,
    summary: appointmentTitle(row.heading?.[0], {
      clinic: row.heading?.[1] ?? '',
      service: row.service_name,
      specialist: o.withSpecialist ? row.specialist_name : null,
    }),
    description: `Appointment ${row.id} (${row.status.replace('_', ' ')})`,
    location: where ?? null,
    status: gone ? 'CANCELLED' : 'CONFIRMED',
  };
}
