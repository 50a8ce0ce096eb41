import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildColumns, hourRange, place, viewDates, weekStart } from '../src/calendar-layout.ts';
import { zonedInstant } from '../src/format.ts';

/** The calendar's geometry: columns of a view, appointments on the location's wall clock, lanes for overlaps. */
describe('calendar layout', () => {
  const z = 'Europe/Bucharest';
  const ana = { id: 'cal-ana', label: 'Ana', specialistId: 'ana' };
  const room = { id: 'room-1', label: 'Room 1', specialistId: null };
  const at = (date: string, hhmm: string) => {
    const [h, m] = hhmm.split(':').map(Number);
    return zonedInstant(date, h! * 60 + m!, z).toISOString();
  };

  it('a week is Monday to Sunday; a week view has each day, then each resource', () => {
    assert.equal(weekStart('2027-03-28'), '2027-03-22'); // a Sunday
    assert.equal(weekStart('2027-03-22'), '2027-03-22');
    assert.deepEqual(viewDates('day', '2027-03-28'), ['2027-03-28']);
    const week = viewDates('week', '2027-03-24');
    assert.deepEqual([week[0], week[6]], ['2027-03-22', '2027-03-28']);
    const cols = buildColumns(week, [ana, room]);
    assert.equal(cols.length, 14);
    assert.deepEqual(
      cols.slice(0, 3).map((c) => c.key),
      ['2027-03-22|cal-ana', '2027-03-22|room-1', '2027-03-23|cal-ana'],
    );
  });

  it('places by the wall clock on the DST day of the week, in the column of its day and specialist', () => {
    const cols = buildColumns(viewDates('week', '2027-03-24'), [ana]);
    const items = [
      { id: 'sat', start: at('2027-03-27', '09:00'), end: at('2027-03-27', '09:45'), who: 'ana' },
      { id: 'sun', start: at('2027-03-28', '09:00'), end: at('2027-03-28', '09:45'), who: 'ana' },
      { id: 'other', start: at('2027-03-28', '09:00'), end: at('2027-03-28', '09:45'), who: 'someone else' },
    ];
    // The instants differ by 23 hours (the night lost an hour) but both sit at 09:00.
    assert.equal(Date.parse(items[1]!.start) - Date.parse(items[0]!.start), 23 * 3600_000);
    const placed = place(items, cols, z, (i) => ({ start: i.start, end: i.end, resourceId: i.who }));
    assert.deepEqual(
      placed.map((p) => [p.item.id, cols[p.column]!.date, p.top, p.bottom]),
      [
        ['sat', '2027-03-27', 540, 585],
        ['sun', '2027-03-28', 540, 585],
      ],
    );
  });

  it('overlapping appointments share the width in lanes; a later one takes a freed lane', () => {
    const cols = buildColumns(['2027-03-22'], [ana]);
    const d = '2027-03-22';
    const items = [
      { id: 'a', start: at(d, '09:00'), end: at(d, '10:00') },
      { id: 'b', start: at(d, '09:30'), end: at(d, '10:30') },
      { id: 'c', start: at(d, '10:00'), end: at(d, '10:45') },
      { id: 'd', start: at(d, '11:00'), end: at(d, '11:30') },
    ];
    const placed = place(items, cols, z, (i) => ({ start: i.start, end: i.end, resourceId: 'ana' }));
    const byId = Object.fromEntries(placed.map((p) => [p.item.id, [p.lane, p.lanes]]));
    assert.deepEqual(byId, { a: [0, 2], b: [1, 2], c: [0, 2], d: [0, 1] });
  });

  it('a room column is keyed by its own calendar; the shown hours widen to what is open or booked', () => {
    const cols = buildColumns(['2027-03-22'], [room]);
    const placed = place([{ s: at('2027-03-22', '07:15'), e: at('2027-03-22', '19:30') }], cols, z, (w) => ({
      start: w.s,
      end: w.e,
      resourceId: 'room-1',
    }));
    assert.equal(placed.length, 1);
    assert.deepEqual(hourRange(placed), [7, 20]);
    assert.deepEqual(hourRange([]), [8, 18]);
  });
});
