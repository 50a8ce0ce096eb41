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

// One formatter per zone: making an Intl.DateTimeFormat costs far more than using it, and a week view reads
// thousands of instants.
const wallFormats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock parts of an instant in a zone. */
function wallParts(instant: Date, zone: string): { y: number; m: number; d: number; h: number; min: number } {
  let format = wallFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    });
    wallFormats.set(zone, format);
  }
  const parts = format.formatToParts(instant);
  const n = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0);
  return { y: n('year'), m: n('month'), d: n('day'), h: n('hour'), min: n('minute') };
}

/**
 * Minutes since the local midnight of `date` (YYYY-MM-DD) at which an instant shows on the wall clock of
 * `zone`: what places an appointment on a day's grid. An instant on another local day gives a value below
 * 0 or from 1440 on, so a caller can clip it. Daylight-saving days need nothing special: the wall clock is read.
 */
export function wallMinutes(instant: string | Date, date: string, zone: string): number {
  const t = typeof instant === 'string' ? Date.parse(instant) : instant.getTime();
  return Math.floor((t + cachedOffset(t, zone) - Date.parse(`${date}T00:00:00Z`)) / 60_000);
}

// Offsets by zone and quarter hour: every zone's offsets are multiples of 15 minutes and its changes fall on
// a quarter hour, so one reading serves the whole quarter. A week of a large clinic reads thousands of instants.
const offsets = new Map<string, number>();
function cachedOffset(t: number, zone: string): number {
  const key = `${zone}|${Math.floor(t / 900_000)}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    if (offsets.size > 100_000) offsets.clear();
    offset = offsetAt(t, zone);
    offsets.set(key, offset);
  }
  return offset;
}

/** The zone's offset from UTC at an instant, in milliseconds (whole minutes). */
function offsetAt(instant: number, zone: string): number {
  const p = wallParts(new Date(instant), zone);
  return Date.UTC(p.y, p.m - 1, p.d, p.h, p.min) - Math.floor(instant / 60_000) * 60_000;
}

/**
 * The instant at which the wall clock of `zone` shows `minutes` after midnight on `date`: the inverse of
 * wallMinutes. A time skipped by a spring-forward change (03:30 on a day that jumps from 03:00 to 04:00) is
 * read with the offset before the change, so it lands an hour later on the wall; a repeated one (autumn) is
 * its later occurrence.
 */
export function zonedInstant(date: string, minutes: number, zone: string): Date {
  const guess = Date.parse(`${date}T00:00:00Z`) + minutes * 60_000;
  const first = guess - offsetAt(guess, zone);
  return new Date(guess - offsetAt(first, zone));
}

/** "09:05" from minutes after midnight (the calendar's labels: both languages write 24-hour times). */
export function clockLabel(minutes: number): string {
  const m = ((Math.round(minutes) % 1440) + 1440) % 1440;
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
}
