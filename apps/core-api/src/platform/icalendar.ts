/*
 * iCalendar (RFC 5545) output, shared by the appointment routes (one appointment's .ics, a calendar's
 * subscription feed) and the messages (the .ics attached to appointment emails). Written here rather than
 * with a package: what is needed is a handful of properties, TEXT escaping (3.3.11), CRLF line ends and
 * folding at 75 octets (3.1), and tests parse the output with ical.js.
 * Times are UTC (DATE-TIME with Z), so no VTIMEZONE is needed; calendar apps show them in their zone.
 */

/** TEXT value escaping: backslash, semicolon, comma and line breaks; other control characters dropped. */
export function escapeText(value: string): string {
  return (
    value
      .replace(/\\/g, '\\\\')
      .replace(/;/g, '\\;')
      .replace(/,/g, '\\,')
      .replace(/\r\n|\r|\n/g, '\\n')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: TEXT allows no control character but HTAB.
      .replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '')
  );
}

/**
 * One content line folded so that no line exceeds 75 octets (the CRLF aside): each continuation line
 * starts with one space, and a UTF-8 sequence is never split.
 */
export function foldLine(line: string): string {
  const out: string[] = [];
  let current = '';
  let octets = 0;
  for (const ch of line) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (octets + size > 75) {
      out.push(current);
      current = ` ${ch}`;
      octets = 1 + size;
    } else {
      current += ch;
      octets += size;
    }
  }
  out.push(current);
  return out.join('\r\n');
}

/** A DATE-TIME in UTC: 20250131T090000Z. */
export function utc(d: Date): string {
  return d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

export interface IcsEvent {
  uid: string;
  stamp: Date;
  start: Date;
  end: Date;
  summary: string;
  description?: string;
  location?: string | null;
  /** The organizer's display name and address (an email's invitation); absent in feeds. */
  organizer?: { name: string; email: string };
  status: 'CONFIRMED' | 'CANCELLED' | 'TENTATIVE';
}

/** How much an appointment's title says (organization_settings.calendar_title). */
export type CalendarTitle = 'clinic' | 'clinic_and_service' | 'full';
export const CALENDAR_TITLES: readonly CalendarTitle[] = ['clinic', 'clinic_and_service', 'full'];

/**
 * An appointment's SUMMARY as the clinic chose: its name only (the default), with the service, or with the service
 * and the specialist. Never the patient.
 */
export function appointmentTitle(
  title: string | null | undefined,
  parts: { clinic: string; service: string | null; specialist: string | null },
): string {
  const clinic = parts.clinic || 'Appointment';
  if (title === 'clinic_and_service' && parts.service) return `${clinic}: ${parts.service}`;
  if (title === 'full' && parts.service)
    return parts.specialist ? `${clinic}: ${parts.service} with ${parts.specialist}` : `${clinic}: ${parts.service}`;
  return clinic;
}

/** A VCALENDAR of events, CRLF throughout, each line folded. */
export function buildCalendar(opts: {
  /** The PRODID's product part: who made the file (Scheduling, Messages). */
  product: string;
  name?: string;
  /** CANCEL for a cancelled appointment's message, so a client that imported it removes it. */
  method?: 'PUBLISH' | 'CANCEL';
  refreshMinutes?: number;
  events: IcsEvent[];
}): string {
  const lines = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    `PRODID:-//Clinic Platform//${opts.product}//EN`,
    'CALSCALE:GREGORIAN',
    `METHOD:${opts.method ?? 'PUBLISH'}`,
  ];
  if (opts.name) lines.push(`X-WR-CALNAME:${escapeText(opts.name)}`, `NAME:${escapeText(opts.name)}`);
  if (opts.refreshMinutes)
    lines.push(`REFRESH-INTERVAL;VALUE=DURATION:PT${opts.refreshMinutes}M`, `X-PUBLISHED-TTL:PT${opts.refreshMinutes}M`);
  for (const e of opts.events) {
    lines.push(
      'BEGIN:VEVENT',
      `UID:${escapeText(e.uid)}`,
      `DTSTAMP:${utc(e.stamp)}`,
      `DTSTART:${utc(e.start)}`,
      `DTEND:${utc(e.end)}`,
      `SUMMARY:${escapeText(e.summary)}`,
    );
    if (e.description) lines.push(`DESCRIPTION:${escapeText(e.description)}`);
    if (e.location) lines.push(`LOCATION:${escapeText(e.location)}`);
    if (e.organizer) lines.push(`ORGANIZER;CN=${escapeText(e.organizer.name).replace(/[":]/g, '')}:mailto:${e.organizer.email}`);
    lines.push(`STATUS:${e.status}`, 'TRANSP:OPAQUE');
    // Every appointment is private: a client that shares the calendar shows the time, not the text.
    lines.push('CLASS:PRIVATE');
    lines.push('END:VEVENT');
  }
  lines.push('END:VCALENDAR');
  return `${lines.map(foldLine).join('\r\n')}\r\n`;
}
