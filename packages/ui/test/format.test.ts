import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addDays, formatCountdown, formatDay, formatShortDateTime, formatTime, icsEvent, localDate, zoneOffset } from '../src/format.ts';

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
});
