/**
 * Dates and times for people, always through Intl with an explicit IANA zone: a slot's instant is shown
 * as the clock on the wall of the zone the visitor picked, never the browser's implicit zone.
 */

export type Lang = 'en' | 'ro';

const locales: Record<Lang, string> = { en: 'en-GB', ro: 'ro-RO' };

export function localeOf(lang: Lang): string {
  return locales[lang];
}

/** The browser's zone, or UTC when it cannot say. */
export function browserZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** Whether `zone` is an IANA zone this runtime knows. */
export function isZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The local date (YYYY-MM-DD) of an instant in a zone. */
export function localDate(instant: string | Date, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(
    new Date(instant),
  );
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

/** A calendar date plus n days (no zone involved: dates are labels, not instants). */
export function addDays(date: string, n: number): string {
  const d = new Date(`${date}T12:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
}

/** 09:30 (or 9:30 AM in a 12-hour locale) on the wall clock of `zone`. */
export function formatTime(instant: string | Date, zone: string, lang: Lang): string {
  return new Intl.DateTimeFormat(localeOf(lang), { timeZone: zone, hour: '2-digit', minute: '2-digit' }).format(new Date(instant));
}

/** "Monday 29 March 2027" for an instant in a zone. */
export function formatLongDate(instant: string | Date, zone: string, lang: Lang): string {
  return new Intl.DateTimeFormat(localeOf(lang), {
    timeZone: zone,
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
  }).format(new Date(instant));
}

/** A calendar date (YYYY-MM-DD) as its weekday and day, read at noon UTC so no zone can move it to another day. */
export function formatDay(date: string, lang: Lang, style: 'short' | 'long' = 'short'): { weekday: string; day: string; month: string } {
  const d = new Date(`${date}T12:00:00Z`);
  const f = (o: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat(localeOf(lang), { timeZone: 'UTC', ...o }).format(d);
  return { weekday: f({ weekday: style }), day: f({ day: 'numeric' }), month: f({ month: style }) };
}

/** "29 Mar 2027, 09:30" in a zone. */
export function formatDateTime(instant: string | Date, zone: string, lang: Lang): string {
  return new Intl.DateTimeFormat(localeOf(lang), {
    timeZone: zone,
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  }).format(new Date(instant));
}

/** "Mon 30 Nov, 10:30" in a zone: a nearby time named compactly. */
export function formatShortDateTime(instant: string | Date, zone: string, lang: Lang): string {
  return new Intl.DateTimeFormat(localeOf(lang), {
    timeZone: zone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
  }).format(new Date(instant));
}

/** The zone's offset at an instant, e.g. "GMT+3" (a day of daylight-saving change has two). */
export function zoneOffset(instant: string | Date, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'shortOffset' }).formatToParts(new Date(instant));
  return parts.find((p) => p.type === 'timeZoneName')?.value ?? zone;
}

/** "Europe/Bucharest (GMT+2)": a zone as a person can check it. */
export function zoneLabel(zone: string, at: string | Date = new Date()): string {
  return `${zone.replaceAll('_', ' ')} (${zoneOffset(at, zone)})`;
}

/** Every zone the runtime lists, the given ones first if missing (old engines list none). */
export function allZones(...ensure: string[]): string[] {
  const listed = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const set = new Set(listed);
  for (const z of ensure) if (z) set.add(z);
  return [...set].sort();
}

/** Money from minor units, e.g. 15000 RON -> "150,00 RON". */
export function formatMoney(minor: number, currency: string, lang: Lang): string {
  try {
    return new Intl.NumberFormat(localeOf(lang), { style: 'currency', currency }).format(minor / 100);
  } catch {
    return `${(minor / 100).toFixed(2)} ${currency}`;
  }
}

/** "m:ss" of a number of seconds (never negative). */
export function formatCountdown(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** RFC 5545 UTC stamp: 20270329T060000Z. */
function icsStamp(instant: string | Date): string {
  return new Date(instant)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function icsText(s: string): string {
  return s
    .replace(/\\/g, '\\\\')
    .replace(/\n/g, '\\n')
    .replace(/([,;])/g, '\\$1');
}

/** A one-event iCalendar file (UTC times, so every calendar shows it at the right local time). */
export function icsEvent(e: { uid: string; start: string; end: string; summary: string; location?: string; description?: string }): string {
  const lines = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//clinic-platform//booking//EN',
    'CALSCALE:GREGORIAN',
    'METHOD:PUBLISH',
    'BEGIN:VEVENT',
    `UID:${e.uid}`,
    `DTSTAMP:${icsStamp(new Date())}`,
    `DTSTART:${icsStamp(e.start)}`,
    `DTEND:${icsStamp(e.end)}`,
    `SUMMARY:${icsText(e.summary)}`,
    ...(e.location ? [`LOCATION:${icsText(e.location)}`] : []),
    ...(e.description ? [`DESCRIPTION:${icsText(e.description)}`] : []),
    'END:VEVENT',
    'END:VCALENDAR',
  ];
  return `${lines.join('\r\n')}\r\n`;
}
