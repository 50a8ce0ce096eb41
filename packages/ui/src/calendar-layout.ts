import { addDays, wallMinutes } from './format.ts';

/*
 * The calendar's geometry, apart from React: which columns a view has, where each appointment and open
 * window sits in them (minutes on the wall clock of the location's zone), and side-by-side lanes for
 * appointments that overlap. Pure, so the week view of a large clinic stays a single cheap pass.
 */

export type View = 'day' | 'week';

/** A bookable resource shown as a column: a specialist, or a room or device calendar. */
export interface Resource {
  id: string;
  label: string;
  /** The specialist whose appointments show here (a specialist's calendar); null for a room or device. */
  specialistId: string | null;
}

export interface CalendarColumn {
  key: string;
  date: string;
  resource: Resource;
}

export interface Placed<T> {
  item: T;
  column: number;
  top: number;
  bottom: number;
  lane: number;
  lanes: number;
}

/** Monday of the ISO week holding `date`. */
export function weekStart(date: string): string {
  const weekday = (new Date(`${date}T12:00:00Z`).getUTCDay() + 6) % 7;
  return addDays(date, -weekday);
}

export function viewDates(view: View, date: string): string[] {
  if (view === 'day') return [date];
  const monday = weekStart(date);
  return Array.from({ length: 7 }, (_, i) => addDays(monday, i));
}

/** Day view: one column per resource; week view: each day, then each resource within it. */
export function buildColumns(dates: readonly string[], resources: readonly Resource[]): CalendarColumn[] {
  const out: CalendarColumn[] = [];
  for (const date of dates) for (const resource of resources) out.push({ key: `${date}|${resource.id}`, date, resource });
  return out;
}

/**
 * Places items (by start and end instants, and the resource they belong to) in the columns, with lanes for
 * overlaps: items that overlap share the column's width, each in its own lane.
 */
export function place<T>(
  items: readonly T[],
  columns: readonly CalendarColumn[],
  zone: string,
  get: (item: T) => { start: string; end: string; resourceId: string | null },
): Placed<T>[] {
  const index = new Map<string, number>();
  columns.forEach((c, i) => {
    index.set(`${c.date}|${c.resource.specialistId ?? c.resource.id}`, i);
  });
  const dates = [...new Set(columns.map((c) => c.date))].sort();
  const first = dates[0];
  const byColumn = new Map<number, Placed<T>[]>();
  if (!first) return [];
  for (const item of items) {
    const g = get(item);
    if (!g.resourceId) continue;
    // Minutes from the view's first local midnight: the day and the place within it in one reading.
    const from = wallMinutes(g.start, first, zone);
    let to = wallMinutes(g.end, first, zone);
    if (to <= from) to = from + Math.max(5, (Date.parse(g.end) - Date.parse(g.start)) / 60_000);
    const day = Math.floor(from / 1440);
    const date = dates[day];
    if (date === undefined || from < 0) continue;
    const col = index.get(`${date}|${g.resourceId}`);
    if (col === undefined) continue;
    const top = from - day * 1440;
    const list = byColumn.get(col) ?? [];
    list.push({ item, column: col, top, bottom: Math.min(1440, to - day * 1440), lane: 0, lanes: 1 });
    byColumn.set(col, list);
  }
  const out: Placed<T>[] = [];
  for (const list of byColumn.values()) {
    list.sort((a, b) => a.top - b.top || b.bottom - a.bottom);
    // Clusters of transitively overlapping items share a lane count; each item takes the first free lane.
    let cluster: Placed<T>[] = [];
    let clusterEnd = -1;
    const laneEnds: number[] = [];
    const flush = () => {
      for (const p of cluster) p.lanes = laneEnds.length;
      cluster = [];
      laneEnds.length = 0;
    };
    for (const p of list) {
      if (p.top >= clusterEnd) flush();
      let lane = laneEnds.findIndex((end) => end <= p.top);
      if (lane === -1) {
        lane = laneEnds.length;
        laneEnds.push(p.bottom);
      } else laneEnds[lane] = p.bottom;
      p.lane = lane;
      cluster.push(p);
      clusterEnd = Math.max(clusterEnd, p.bottom);
      out.push(p);
    }
    flush();
  }
  return out;
}

/** The hours the grid shows: working hours by default, widened to whatever is open or booked. */
export function hourRange(spans: Iterable<{ top: number; bottom: number }>, fallback: [number, number] = [8, 18]): [number, number] {
  let [from, to] = [fallback[0] * 60, fallback[1] * 60];
  for (const s of spans) {
    from = Math.min(from, s.top);
    to = Math.max(to, s.bottom);
  }
  return [Math.floor(from / 60), Math.min(24, Math.ceil(to / 60))];
}
