import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addDays,
  formatCountdown,
  formatDay,
  formatShortDateTime,
  formatTime,
  icsEvent,
  localDate,
  wallMinutes,
  zonedInstant,
  zoneOffset,
} from '../src/format.ts';

/** Times are always read on the wall clock of an explicit zone, across daylight-saving changes too. */
describe('formatting', () => {
  it('an instant shows the clock of the zone asked, not the machine zone', () => {
    const t = '2027-03-29T06:00:00Z';
    assert.equal(formatTime(t, 'Europe/Bucharest', 'en'), '09:00'); // EEST, UTC+3, the day after the change
    assert.equal(formatTime(t, 'America/New_York', 'en'), '02:00');
    assert.equal(formatTime(t, 'Asia/Kolkata', 'ro'), '11:30');
    assert.equal(formatShortDateTime(t, 'America/New_York', 'en'), 'Mon 29 Mar, 02:00');
  });

  it('DST days: the same wall-clock time has another offset on each side of the change', () => {
    assert.equal(zoneOffset('2027-03-27T07:00:00Z', 'Europe/Bucharest'), 'GMT+2');
    assert.equal(zoneOffset('2027-03-29T07:00:00Z', 'Europe/Bucharest'), 'GMT+3');
    // The change day itself: 00:30 local is +2, 05:00 local is +3.
    assert.equal(formatTime('2027-03-27T22:30:00Z', 'Europe/Bucharest', 'en'), '00:30');
    assert.equal(formatTime('2027-03-28T02:00:00Z', 'Europe/Bucharest', 'en'), '05:00');
    // New York's fall-back: 01:30 is shown twice, an hour apart.
    assert.equal(formatTime('2027-11-07T05:30:00Z', 'America/New_York', 'en'), '01:30');
    assert.equal(formatTime('2027-11-07T06:30:00Z', 'America/New_York', 'en'), '01:30');
  });

  it('local dates follow the zone; date arithmetic never slips a day across a change', () => {
    assert.equal(localDate('2027-03-28T22:30:00Z', 'Europe/Bucharest'), '2027-03-29');
    assert.equal(localDate('2027-03-28T22:30:00Z', 'America/New_York'), '2027-03-28');
    assert.equal(addDays('2027-03-27', 1), '2027-03-28');
    assert.equal(addDays('2027-03-28', 1), '2027-03-29');
    assert.equal(addDays('2027-10-31', -1), '2027-10-30');
    assert.equal(addDays('2027-12-31', 1), '2028-01-01');
    assert.deepEqual(formatDay('2027-03-28', 'en'), { weekday: 'Sun', day: '28', month: 'Mar' });
    assert.equal(formatDay('2027-03-28', 'ro', 'long').weekday, 'duminică');
  });

  it('countdown and .ics', () => {
    assert.equal(formatCountdown(600), '10:00');
    assert.equal(formatCountdown(59.9), '0:59');
    assert.equal(formatCountdown(-3), '0:00');
    const ics = icsEvent({ uid: 'a@x', start: '2027-03-29T06:00:00Z', end: '2027-03-29T06:30:00Z', summary: 'Physio; with Dr, Ann' });
    assert.match(ics, /DTSTART:20270329T060000Z\r\n/);
    assert.match(ics, /DTEND:20270329T063000Z\r\n/);
    assert.match(ics, /SUMMARY:Physio\\; with Dr\\, Ann\r\n/);
    assert.match(ics, /^BEGIN:VCALENDAR\r\n[\s\S]*END:VCALENDAR\r\n$/);
  });

  it('calendar placement on a DST day: the wall clock of the location, both ways', () => {
    const z = 'Europe/Bucharest';
    // 09:00 local is 07:00Z the day before the spring change (+2), 06:00Z on the change day and after (+3).
    assert.equal(wallMinutes('2027-03-27T07:00:00Z', '2027-03-27', z), 9 * 60);
    assert.equal(wallMinutes('2027-03-28T06:00:00Z', '2027-03-28', z), 9 * 60);
    assert.equal(zonedInstant('2027-03-27', 9 * 60, z).toISOString(), '2027-03-27T07:00:00.000Z');
    assert.equal(zonedInstant('2027-03-28', 9 * 60, z).toISOString(), '2027-03-28T06:00:00.000Z');
    // Before the change on the change day: 02:30 local is still +2.
    assert.equal(zonedInstant('2027-03-28', 150, z).toISOString(), '2027-03-28T00:30:00.000Z');
    assert.equal(wallMinutes('2027-03-28T00:30:00Z', '2027-03-28', z), 150);
    // A 45-minute visit across nothing special keeps its length; one at 02:30-04:15 local spans 45 real minutes.
    assert.equal(wallMinutes('2027-03-28T01:15:00Z', '2027-03-28', z), 4 * 60 + 15);
    // The autumn change (Bucharest 31 Oct 2027, 04:00 -> 03:00): 10:00 local is 08:00Z (+2).
    assert.equal(zonedInstant('2027-10-31', 10 * 60, z).toISOString(), '2027-10-31T08:00:00.000Z');
    assert.equal(wallMinutes('2027-10-31T08:00:00Z', '2027-10-31', z), 10 * 60);
    // Another local day is outside 0..1440, so a grid can clip it.
    assert.equal(wallMinutes('2027-03-27T21:30:00Z', '2027-03-28', z), -30);
    assert.equal(wallMinutes('2027-03-28T22:00:00Z', '2027-03-28', z), 1440 + 60);
    // New York's autumn change: 09:00 local is 13:00Z before and 14:00Z on the change day.
    assert.equal(zonedInstant('2027-11-06', 9 * 60, 'America/New_York').toISOString(), '2027-11-06T13:00:00.000Z');
    assert.equal(zonedInstant('2027-11-07', 9 * 60, 'America/New_York').toISOString(), '2027-11-07T14:00:00.000Z');
  });
});
