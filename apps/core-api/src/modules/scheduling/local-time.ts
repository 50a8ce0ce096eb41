/*
 * Instants as a zone's clock shows them, fast: an availability page formats thousands of slot times, and
 * building an Intl.DateTimeFormat costs about 80 us. The formatter is made once per zone and asked only
 * for the zone's UTC offset, once per quarter hour of time (offsets change only on quarter hours); the
 * string is then plain arithmetic.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();
const QUARTER = 15 * 60_000;

function formatterOf(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    formatters.set(zone, f);
  }
  return f;
}

/** The zone's offset from UTC at `ms`, in minutes (Bucharest in summer: 180). */
export function offsetMinutes(ms: number, zone: string): number {
  const bucket = Math.floor(ms / QUARTER);
  const key = `${zone}|${bucket}`;
  let minutes = offsets.get(key);
  if (minutes === undefined) {
    const name = formatterOf(zone)
      .formatToParts(new Date(bucket * QUARTER))
      .find((p) => p.type === 'timeZoneName')!.value;
    const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name);
    minutes = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
    if (offsets.size > 50_000) offsets.clear();
    offsets.set(key, minutes);
  }
  return minutes;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An instant as the viewer reads it: RFC 3339 with the zone's offset, e.g. 2026-03-29T09:00:00+03:00. */
export function localIso(at: Date, zone: string): string {
  const offset = offsetMinutes(at.getTime(), zone);
  const local = new Date(at.getTime() + offset * 60_000).toISOString().slice(0, 19);
  const abs = Math.abs(offset);
  return `${local}${offset < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}
