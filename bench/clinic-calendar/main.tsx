import '@clinic/ui/styles.css';
import '../../apps/web/ui/clinic/clinic.css';
import { addDays, buildColumns, type Resource, viewDates, zonedInstant } from '@clinic/ui';
import { flushSync } from 'react-dom';
import { createRoot } from 'react-dom/client';
import { CalendarGrid, type GridAppointment, type GridWindow } from '../../apps/web/ui/clinic/calendar/CalendarGrid.tsx';

/*
 * The clinic calendar's week view with 30 specialists and 2,000 appointments, rendered by the production
 * build of the real component: the time from render() to the DOM committed, and to the next frame (layout
 * and paint), over a few fresh mounts. Driven by bench/clinic-calendar.ts.
 */
const ZONE = 'Europe/Bucharest';
// The week of the spring change (Sunday 28 March 2027): the placement must hold on a DST day too.
const dates = viewDates('week', '2027-03-24');
const resources: Resource[] = Array.from({ length: 30 }, (_, i) => ({
  id: `sp-${i}`,
  label: `Specialist ${i + 1}`,
  specialistId: `sp-${i}`,
}));
const columns = buildColumns(dates, resources);
let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const windows: GridWindow[] = [];
for (const r of resources)
  for (const d of dates)
    windows.push({
      resourceId: r.id,
      start: zonedInstant(d, 8 * 60, ZONE).toISOString(),
      end: zonedInstant(d, 18 * 60, ZONE).toISOString(),
    });
const statuses = ['scheduled', 'confirmed', 'checked_in', 'done'];
const appointments: GridAppointment[] = Array.from({ length: 2000 }, (_, i) => {
  const date = addDays(dates[0]!, Math.floor(random() * 7));
  const start = 8 * 60 + Math.floor(random() * 40) * 15;
  const length = [30, 45, 60][Math.floor(random() * 3)]!;
  const status = statuses[i % statuses.length]!;
  return {
    id: `a-${i}`,
    start: zonedInstant(date, start, ZONE).toISOString(),
    end: zonedInstant(date, start + length, ZONE).toISOString(),
    resourceId: `sp-${Math.floor(random() * 30)}`,
    title: `Patient ${i + 1}`,
    subtitle: 'Physiotherapy session',
    status,
    statusLabel: status,
    movable: status === 'scheduled' || status === 'confirmed',
    step: 15,
  };
});

const noop = () => undefined;
const nextFrame = () => new Promise<void>((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));

async function run(): Promise<{ commit: number; frame: number; blocks: number }[]> {
  const out: { commit: number; frame: number; blocks: number }[] = [];
  for (let i = 0; i < 6; i++) {
    const host = document.createElement('div');
    document.getElementById('root')!.replaceChildren(host);
    const root = createRoot(host);
    await nextFrame();
    const t0 = performance.now();
    flushSync(() =>
      root.render(
        <CalendarGrid
          columns={columns}
          zone={ZONE}
          windows={windows}
          appointments={appointments}
          moving={null}
          onOpen={noop}
          onMove={noop}
          onMoveEnd={noop}
        />,
      ),
    );
    const t1 = performance.now();
    await nextFrame();
    const t2 = performance.now();
    out.push({ commit: t1 - t0, frame: t2 - t0, blocks: host.querySelectorAll('.cal-appt').length });
    root.unmount();
  }
  return out;
}

/** Leaves one mounted, for the driver's screenshot. */
function show(): void {
  const host = document.createElement('div');
  document.getElementById('root')!.replaceChildren(host);
  flushSync(() =>
    createRoot(host).render(
      <CalendarGrid
        columns={columns}
        zone={ZONE}
        windows={windows}
        appointments={appointments}
        moving={null}
        onOpen={noop}
        onMove={noop}
        onMoveEnd={noop}
      />,
    ),
  );
}

Object.assign(window, { benchRun: run, benchShow: show });
document.title = 'ready';
