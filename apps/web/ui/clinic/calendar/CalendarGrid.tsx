import './calendar.css';
import { type CalendarColumn, clockLabel, formatDay, hourRange, type Lang, type Placed, place, useI18n } from '@clinic/ui';
import { type DragEvent, type KeyboardEvent, memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';

/** Pixels per minute: an hour is 72 px, a 15-minute step 18 px. */
export const PX = 1.2;
const SNAP = 15;
/** Width of the time axis, and of each column once there are more than VIRTUAL_FROM of them. */
const AXIS = 64;
const COL_WIDTH = 112;
const VIRTUAL_FROM = 42;

export interface GridAppointment {
  id: string;
  start: string;
  end: string;
  /** The specialist (or room calendar) it occupies. */
  resourceId: string | null;
  title: string;
  subtitle: string;
  status: string;
  statusLabel: string;
  /** Whether it can be moved (scheduled or confirmed, and the member may). */
  movable: boolean;
  /** The service's slot grid in minutes: what one keyboard step moves it by. */
  step: number;
}

export interface GridWindow {
  resourceId: string;
  start: string;
  end: string;
}

export interface GridProps {
  columns: readonly CalendarColumn[];
  zone: string;
  /** Today's local date in the zone (its heading is marked). */
  today?: string | undefined;
  windows: readonly GridWindow[];
  appointments: readonly GridAppointment[];
  /** The appointment being moved by keyboard, if any (started from its panel). */
  moving: string | null;
  onOpen: (id: string) => void;
  onCreateAt?: ((column: CalendarColumn, minutes: number) => void) | undefined;
  onMove: (id: string, column: CalendarColumn, minutes: number) => void;
  onMoveEnd: () => void;
}

function dayHeading(date: string, lang: Lang): string {
  const d = formatDay(date, lang);
  return `${d.weekday} ${d.day} ${d.month}`;
}

/**
 * The time grid of the calendar: a column per day and resource, the open hours of each shaded lighter,
 * appointments placed by the wall clock of the location's zone. Appointments are buttons (open the panel
 * of actions); movable ones can be dragged to another time or column, or moved with the arrow keys once
 * their panel's Move starts it (Enter saves, Escape cancels).
 */
export const CalendarGrid = memo(function CalendarGrid(props: GridProps) {
  const { columns, zone, windows, appointments, moving } = props;
  const { t, lang } = useI18n();
  const placed = useMemo(
    () => place(appointments, columns, zone, (a) => ({ start: a.start, end: a.end, resourceId: a.resourceId })),
    [appointments, columns, zone],
  );
  const open = useMemo(
    () => place(windows, columns, zone, (w) => ({ start: w.start, end: w.end, resourceId: w.resourceId })),
    [windows, columns, zone],
  );
  const [fromHour, toHour] = useMemo(() => hourRange([...placed, ...open]), [placed, open]);
  const origin = fromHour * 60;
  const height = (toHour - fromHour) * 60 * PX;
  const y = (minutes: number) => (minutes - origin) * PX;
  const dates = useMemo(() => [...new Set(columns.map((c) => c.date))], [columns]);
  const perDay = dates.length ? columns.length / dates.length : 0;
  const week = dates.length > 1;
  const hours = useMemo(() => Array.from({ length: toHour - fromHour }, (_, i) => fromHour + i), [fromHour, toHour]);
  const byColumn = useMemo(() => {
    const m = new Map<number, { appts: Placed<GridAppointment>[]; open: Placed<GridWindow>[] }>();
    for (let i = 0; i < columns.length; i++) m.set(i, { appts: [], open: [] });
    for (const p of placed) m.get(p.column)!.appts.push(p);
    for (const p of open) m.get(p.column)!.open.push(p);
    return m;
  }, [placed, open, columns.length]);

  // Dragging: where on the block it was grabbed, so the drop keeps the block under the pointer.
  const grab = useRef<{ id: string; offset: number } | null>(null);
  const minutesAt = (e: { clientY: number; currentTarget: HTMLElement }, offset = 0) => {
    const rect = e.currentTarget.getBoundingClientRect();
    return origin + (e.clientY - rect.top - offset) / PX;
  };
  const snap = (m: number, step = SNAP) => Math.max(0, Math.min(1440 - step, Math.round(m / step) * step));

  // Keyboard move: the proposed column and start, shown as a ghost that holds the focus.
  const movingPlaced = moving ? placed.find((p) => p.item.id === moving) : undefined;
  const [proposal, setProposal] = useState<{ column: number; minutes: number } | null>(null);
  // Only when another appointment starts moving, not on every refetch.
  useEffect(() => {
    setProposal(movingPlaced ? { column: movingPlaced.column, minutes: movingPlaced.top } : null);
  }, [moving]);
  const ghost = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (proposal) ghost.current?.focus();
  }, [proposal]);
  const moveKeys = (e: KeyboardEvent<HTMLButtonElement>) => {
    if (!proposal || !movingPlaced) return;
    const step = movingPlaced.item.step;
    const length = movingPlaced.bottom - movingPlaced.top;
    const next = { ...proposal };
    if (e.key === 'ArrowUp') next.minutes = Math.max(0, proposal.minutes - step);
    else if (e.key === 'ArrowDown') next.minutes = Math.min(1440 - length, proposal.minutes + step);
    else if (e.key === 'ArrowLeft') next.column = Math.max(0, proposal.column - 1);
    else if (e.key === 'ArrowRight') next.column = Math.min(columns.length - 1, proposal.column + 1);
    else if (e.key === 'Enter') {
      e.preventDefault();
      props.onMove(movingPlaced.item.id, columns[proposal.column]!, proposal.minutes);
      return;
    } else if (e.key === 'Escape') {
      e.preventDefault();
      props.onMoveEnd();
      return;
    } else return;
    e.preventDefault();
    setProposal(next);
  };

  // Many columns (a week of a whole clinic): fixed widths, and only the columns in view (plus a margin) are
  // rendered, each at its own grid line; the rest are empty track. Scrolling renders the next ones.
  const virtual = columns.length > VIRTUAL_FROM;
  const scroller = useRef<HTMLElement>(null);
  // A first guess from the window's width, so the first render is usually the right one.
  const [range, setRange] = useState<[number, number]>(() => [
    0,
    Math.min(columns.length, Math.ceil((typeof window === 'undefined' ? 1600 : window.innerWidth) / COL_WIDTH) + 2),
  ]);
  const measure = useCallback(() => {
    const el = scroller.current;
    if (!el || !virtual) return;
    const first = Math.max(0, Math.floor(el.scrollLeft / COL_WIDTH) - 2);
    const last = Math.min(columns.length, Math.ceil((el.scrollLeft + el.clientWidth) / COL_WIDTH) + 2);
    setRange((r) => (r[0] === first && r[1] === last ? r : [first, last]));
  }, [virtual, columns.length]);
  useLayoutEffect(measure, [measure]);
  // A keyboard move to a column out of view scrolls it in.
  useEffect(() => {
    const el = scroller.current;
    if (!el || !proposal) return;
    const left = proposal.column * COL_WIDTH;
    if (virtual && (left < el.scrollLeft || left + COL_WIDTH + AXIS > el.scrollLeft + el.clientWidth)) {
      el.scrollLeft = Math.max(0, left - COL_WIDTH);
      measure();
    }
  }, [proposal, virtual, measure]);
  const visible = virtual
    ? columns.slice(range[0], range[1]).map((c, k) => [c, range[0] + k] as const)
    : columns.map((c, i) => [c, i] as const);
  const dayRow = week && perDay > 1;
  const bodyRow = dayRow ? 3 : 2;
  const gridColumns = virtual
    ? `${AXIS}px repeat(${columns.length}, ${COL_WIDTH}px)`
    : `${AXIS}px repeat(${columns.length}, minmax(${week && perDay > 1 ? 104 : 140}px, 1fr))`;
  return (
    // The scrolling region is focusable so it can be scrolled by keyboard even when it holds no appointment
    // (axe: scrollable-region-focusable).
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scroll container must take focus to scroll by keyboard
    <section className="cal-scroll" ref={scroller} onScroll={virtual ? measure : undefined} aria-label={t('cal.grid')} tabIndex={0}>
      <div className="cal-grid" style={{ gridTemplateColumns: gridColumns }}>
        <div className="cal-corner" aria-hidden="true" style={{ gridColumn: 1, gridRow: dayRow ? '1 / span 2' : 1 }} />
        {dayRow &&
          dates.map((date, d) => (
            <div
              key={date}
              className={`cal-dayhead cal-dayhead-span${date === props.today ? ' cal-colhead-today' : ''}`}
              style={{ gridColumn: `${2 + d * perDay} / span ${perDay}`, gridRow: 1 }}
            >
              {dayHeading(date, lang)}
            </div>
          ))}
        {visible.map(([c, i]) => (
          <div
            key={c.key}
            className={`cal-colhead${week && perDay === 1 && c.date === props.today ? ' cal-colhead-today' : ''}`}
            style={{ gridColumn: i + 2, gridRow: dayRow ? 2 : 1 }}
          >
            {week && perDay === 1 ? dayHeading(c.date, lang) : c.resource.label}
          </div>
        ))}
        <div className="cal-axis" style={{ height, gridColumn: 1, gridRow: bodyRow }} aria-hidden="true">
          {hours.map((h) => (
            <span key={h} className="cal-hour" style={{ top: y(h * 60) }}>
              {clockLabel(h * 60)}
            </span>
          ))}
        </div>
        {visible.map(([c, i]) => {
          const cell = byColumn.get(i)!;
          return (
            // biome-ignore lint/a11y/noStaticElementInteractions: a pointer shortcut; the toolbar's New appointment is the keyboard path
            // biome-ignore lint/a11y/useKeyWithClickEvents: as above
            <div
              key={c.key}
              className={`cal-col${i % perDay === perDay - 1 ? ' cal-col-dayend' : ''}`}
              style={{
                height,
                gridColumn: i + 2,
                gridRow: bodyRow,
                backgroundSize: `100% ${60 * PX}px`,
                backgroundPositionY: `${-(origin % 60) * PX}px`,
              }}
              data-column={c.key}
              onClick={(e) => {
                if (!props.onCreateAt || (e.target as HTMLElement).closest('.cal-appt')) return;
                props.onCreateAt(c, snap(minutesAt(e)));
              }}
              onDragOver={(e: DragEvent<HTMLDivElement>) => {
                if (grab.current) e.preventDefault();
              }}
              onDrop={(e: DragEvent<HTMLDivElement>) => {
                const g = grab.current;
                grab.current = null;
                if (!g) return;
                e.preventDefault();
                const a = appointments.find((x) => x.id === g.id);
                props.onMove(g.id, c, snap(minutesAt(e, g.offset), a?.step ?? SNAP));
              }}
            >
              {cell.open.map((w) => (
                <div key={`${w.item.start}`} className="cal-open" style={{ top: y(w.top), height: (w.bottom - w.top) * PX }} />
              ))}
              {cell.appts.map((p) => (
                <button
                  key={p.item.id}
                  type="button"
                  className={`cal-appt cal-status-${p.item.status}${p.item.id === moving ? ' cal-appt-moving' : ''}`}
                  style={{
                    top: y(p.top) + 1,
                    height: Math.max(18, (p.bottom - p.top) * PX - 2),
                    left: `calc(${(100 * p.lane) / p.lanes}% + 2px)`,
                    width: `calc(${100 / p.lanes}% - 4px)`,
                  }}
                  draggable={p.item.movable}
                  onDragStart={(e) => {
                    grab.current = { id: p.item.id, offset: e.clientY - e.currentTarget.getBoundingClientRect().top };
                    e.dataTransfer.effectAllowed = 'move';
                    e.dataTransfer.setData('text/plain', p.item.id);
                  }}
                  onDragEnd={() => {
                    grab.current = null;
                  }}
                  onClick={() => props.onOpen(p.item.id)}
                  aria-label={`${clockLabel(p.top)}–${clockLabel(p.bottom)}, ${p.item.title}, ${p.item.subtitle}, ${c.resource.label}, ${p.item.statusLabel}`}
                  data-appointment={p.item.id}
                >
                  <span className="cal-appt-time">
                    {clockLabel(p.top)}–{clockLabel(p.bottom)}
                  </span>
                  <span className="cal-appt-title">{p.item.title}</span>
                  <span className="cal-appt-sub">{p.item.subtitle}</span>
                </button>
              ))}
              {proposal && movingPlaced && proposal.column === i && (
                <button
                  ref={ghost}
                  type="button"
                  className="cal-appt cal-ghost"
                  style={{
                    top: y(proposal.minutes) + 1,
                    height: Math.max(18, (movingPlaced.bottom - movingPlaced.top) * PX - 2),
                    left: 2,
                    width: 'calc(100% - 4px)',
                  }}
                  onKeyDown={moveKeys}
                  aria-label={t('cal.move.ghost', {
                    time: clockLabel(proposal.minutes),
                    resource: c.resource.label,
                    day: dayHeading(c.date, lang),
                  })}
                  aria-describedby="cal-move-help"
                >
                  <span className="cal-appt-time">
                    {clockLabel(proposal.minutes)}–{clockLabel(proposal.minutes + movingPlaced.bottom - movingPlaced.top)}
                  </span>
                  <span className="cal-appt-title">{movingPlaced.item.title}</span>
                </button>
              )}
            </div>
          );
        })}
      </div>
      <p id="cal-move-help" className="visually-hidden">
        {t('cal.move.help')}
      </p>
    </section>
  );
});
