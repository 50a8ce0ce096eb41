import { buildCalendar } from '../../platform/icalendar.ts';

/**
 * The .ics attachment of appointment messages (RFC 5545): one VEVENT in UTC. UID is
 * `<appointment id>@<host>`, the name the calendar routes give the same appointment, so a calendar that
 * imports both keeps one entry.
 */
export interface AppointmentInvite {
  appointmentId: string;
  host: string;
  startsAt: Date;
  endsAt: Date;
  summary: string;
  location: string | null;
  organizer: string;
  cancelled?: boolean;
}

export function appointmentIcs(e: AppointmentInvite, now = new Date()): string {
  return buildCalendar({
    product: 'Messages',
    method: e.cancelled ? 'CANCEL' : 'PUBLISH',
    events: [
      {
        uid: `${e.appointmentId}@${e.host}`,
        stamp: now,
        start: e.startsAt,
        end: e.endsAt,
        summary: e.summary,
        location: e.location,
        organizer: { name: e.organizer, email: `no-reply@${e.host}` },
        status: e.cancelled ? 'CANCELLED' : 'CONFIRMED',
      },
    ],
  });
}
