import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@clinic/client';
import type { Locator, Page } from 'playwright-core';
import { createDevClinic, type DevClinic } from './dev-clinic.ts';
import { type Platform, skipWithoutChromium, startPlatform } from './harness.ts';
import { seriousViolations } from './ui-harness.ts';

/*
 * The clinic app's calendar (issue 30, area 1) through the proxy and the real sign-in: a receptionist (the
 * customer_support template: appointments, no settings) books a visit in a free slot, sees another member's
 * booking arrive by itself, moves the visit with the keyboard (and is told why when the time is taken), then
 * checks the patient in; a stale action shows the server's refusal. axe-core in en and ro; screenshots kept.
 */
const ZONE = 'Europe/Bucharest';

/** The local date in the clinic's zone n days from now. */
function localDay(n: number): string {
  const d = new Date(Date.now() + n * 86_400_000);
  return new Intl.DateTimeFormat('en-CA', { timeZone: ZONE, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d);
}

/** The instant of a wall-clock time in the clinic's zone (the same rule the screen uses). */
function at(date: string, hhmm: string): string {
  const guess = Date.parse(`${date}T${hhmm}:00Z`);
  const offset = (t: number) => {
    const p = new Intl.DateTimeFormat('en-GB', {
      timeZone: ZONE,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    }).formatToParts(new Date(t));
    const n = (k: string) => Number(p.find((x) => x.type === k)!.value);
    return Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute')) - t;
  };
  return new Date(guess - offset(guess - offset(guess))).toISOString();
}

describe('browser: the clinic calendar', { skip: skipWithoutChromium(), concurrency: false }, () => {
  let p: Platform;
  let clinic: DevClinic;
  let base: string;
  let admin: ReturnType<typeof createClient>;
  let maria: string;
  let other: string;
  const stamp = Date.now().toString(36);
  const desk = `frontdesk.${stamp}@example.com`;
  const day = localDay(2);

  before(async () => {
    p = await startPlatform();
    clinic = await createDevClinic(p.urls.core, { slug: `cal${stamp}`, env: { DATA_DIR: p.dataDir, NODE_ENV: 'development' } });
    base = p.clinicUrl(clinic.slug);
    admin = createClient({ baseUrl: p.urls.core, token: clinic.adminToken, organizationId: clinic.id });
    await admin.addMember({ params: { id: clinic.id }, body: { email: desk, role_code: 'customer_support' } });
    maria = (
      (await admin.createPatient({ body: { first_name: 'Maria', last_name: 'Ionescu', email: `maria.${stamp}@example.com` } })).data
        .data as { id: string }
    ).id;
    other = (
      (await admin.createPatient({ body: { first_name: 'Andrei', last_name: 'Pop', email: `andrei.${stamp}@example.com` } })).data.data as {
        id: string;
      }
    ).id;
    // A treatment room with its own hours: the "calendars and rooms" columns show it.
    const room = (await admin.createCalendar({ body: { kind: 'room', name: 'Room 1', location_id: clinic.locationId } })).data.data as {
      id: string;
    };
    await admin.putCalendarAvailability({
      params: { id: room.id },
      body: {
        rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: clinic.locationId, weekday, start: '09:00', end: '13:00' })),
      } as never,
    });
  });
  after(() => p?.close());

  async function signIn(): Promise<Page> {
    const page = await p.newPage({ viewport: { width: 1366, height: 900 }, locale: 'en-GB', timezoneId: 'America/New_York' });
    await page.goto(`${base}/clinic/calendar?date=${day}`);
    await page.getByLabel('Email').fill(desk);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/clinic/calendar**`);
    await page.getByRole('heading', { name: 'Calendar', level: 1 }).waitFor();
    return page;
  }

  const appointment = (page: Page, prefix: string): Locator => page.locator(`button.cal-appt[aria-label^="${prefix}"]`);

  async function axeIn(page: Page, lang: 'en' | 'ro') {
    const current = await page.evaluate(() => document.documentElement.lang);
    if (current !== lang) {
      await page.getByRole('combobox', { name: lang === 'ro' ? 'Language' : 'Limba' }).selectOption(lang);
      await page.waitForFunction((l) => document.documentElement.lang === l, lang);
    }
    assert.deepEqual(await seriousViolations(page), [], `axe in ${lang}`);
  }

  it('a receptionist books, sees another booking arrive, moves by keyboard (a taken time says why) and checks in', async () => {
    const page = await signIn();
    // The browser is in New York; the calendar shows the clinic's wall clock (Bucharest).
    assert.match(await page.locator('.cal-subtitle').innerText(), /Europe\/Bucharest/);
    await page.locator('.cal-open').first().waitFor();
    await p.screenshot(page, 'clinic-calendar-day-empty');

    // Book Maria at 10:30 (the service's grid: multiples of 45 minutes after midnight, inside the hours).
    await page.getByRole('button', { name: 'New appointment' }).click();
    const create = page.getByRole('dialog', { name: 'New appointment' });
    await create.getByLabel('Find a patient').fill('Ionescu');
    await create.getByLabel('Patient', { exact: true }).selectOption(maria);
    await create.getByLabel('Date').fill(day);
    await create.getByLabel('Start time').fill('10:30');
    await p.screenshot(page, 'clinic-calendar-create');
    await axeIn(page, 'en');
    await create.getByRole('button', { name: 'Book' }).click();
    await page.getByText('Booked at 10:30.').waitFor();
    const booked = appointment(page, '10:30–11:15, Maria Ionescu');
    await booked.waitFor();

    // Another member books 12:00 for Andrei: it shows up without a reload (the calendar polls).
    await admin.createAppointment({
      body: { service_id: clinic.serviceId, specialist_id: clinic.specialistId, start: at(day, '12:00'), patient_id: other },
    });
    await appointment(page, '12:00–12:45, Andrei Pop').waitFor({ timeout: 30_000 });

    // Move by keyboard: open it, Move, one step down (45 min) to 11:15, Enter.
    await booked.focus();
    await page.keyboard.press('Enter');
    const details = page.getByRole('dialog', { name: 'Maria Ionescu' });
    await details.getByRole('button', { name: 'Move' }).click();
    await page.locator('.cal-ghost').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('cal-ghost')), true);
    await page.keyboard.press('ArrowDown');
    assert.match((await page.locator('.cal-ghost').getAttribute('aria-label')) ?? '', /^Move to 11:15/);
    await p.screenshot(page, 'clinic-calendar-moving');
    await page.keyboard.press('Enter');
    await page.getByText('Moved to 11:15, Dr Ana Popescu.').waitFor();
    const moved = appointment(page, '11:15–12:00, Maria Ionescu');
    await moved.waitFor();

    // One more step down is Andrei's time: refused, with the server's reason.
    await moved.click();
    await page.getByRole('dialog', { name: 'Maria Ionescu' }).getByRole('button', { name: 'Move' }).click();
    await page.locator('.cal-ghost').waitFor();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    const refused = page.getByRole('alert');
    await refused.waitFor();
    assert.match(await refused.innerText(), /not free/);
    assert.match(await refused.innerText(), /The server says:/);
    await appointment(page, '11:15–12:00, Maria Ionescu').waitFor();

    // Check in.
    await appointment(page, '11:15–12:00, Maria Ionescu').click();
    const panel = page.getByRole('dialog', { name: 'Maria Ionescu' });
    await p.screenshot(page, 'clinic-calendar-details');
    await axeIn(page, 'ro');
    await axeIn(page, 'en');
    await panel.getByRole('button', { name: 'Check in' }).click();
    await page.getByText('Now Checked in.').waitFor();
    await appointment(page, '11:15–12:00, Maria Ionescu').and(page.locator('.cal-status-checked_in')).waitFor();
    await p.screenshot(page, 'clinic-calendar-day');
    await axeIn(page, 'en');
    await axeIn(page, 'ro');
    await axeIn(page, 'en');

    // A stale screen: Andrei's visit is cancelled elsewhere while its panel is open; Check in is refused.
    await appointment(page, '12:00–12:45, Andrei Pop').click();
    const stale = page.getByRole('dialog', { name: 'Andrei Pop' });
    await stale.waitFor();
    const list = (await admin.listAppointments({ query: { patient_id: other } as never })).data.data as { id: string }[];
    await admin.updateAppointment({
      params: { id: list[0]!.id },
      body: { status: 'cancelled', cancellation_reason: 'Called in' } as never,
    });
    await stale.getByRole('button', { name: 'Check in' }).click();
    await stale.getByRole('alert').waitFor();
    assert.match(await stale.getByRole('alert').innerText(), /cannot change like that/);
    assert.match(await stale.getByRole('alert').innerText(), /cancelled/);
    await page.keyboard.press('Escape');
  });

  it('drag and drop moves an appointment; the week view and the rooms columns render', async () => {
    const page = await signIn();
    await admin.createAppointment({
      body: { service_id: clinic.serviceId, specialist_id: clinic.specialistId, start: at(day, '14:15'), patient_id: other },
    });
    const block = appointment(page, '14:15–15:00, Andrei Pop');
    await block.waitFor({ timeout: 30_000 });
    // 90 minutes further down (the grid's 72 px an hour), grabbed at the block's top.
    const box = (await block.boundingBox())!;
    const column = page.locator('.cal-col').first();
    await block.dragTo(column, {
      sourcePosition: { x: 10, y: 2 },
      targetPosition: { x: 20, y: box.y - (await column.boundingBox())!.y + 2 + 1.5 * 72 },
    });
    await appointment(page, '15:45–16:30, Andrei Pop').waitFor();

    await page.getByText('Week', { exact: true }).click();
    await page.waitForURL(/view=week/);
    await appointment(page, '15:45–16:30, Andrei Pop').waitFor();
    assert.equal(await page.locator('.cal-colhead').count(), 7);
    await page.waitForFunction(() => document.querySelectorAll('.cal-open').length >= 7);
    await p.screenshot(page, 'clinic-calendar-week');
    await axeIn(page, 'en');

    await page.getByText('Day', { exact: true }).click();
    await page.getByLabel('Columns').selectOption('calendars');
    await page.locator('.cal-colhead', { hasText: 'Room 1' }).waitFor();
    assert.deepEqual(await page.locator('.cal-colhead').allTextContents(), ['Dr Ana Popescu', 'Room 1']);
    // Both columns have their open hours: the specialist's 08:00-20:00 and the room's own 09:00-13:00.
    await page.waitForFunction(() => document.querySelectorAll('.cal-open').length >= 2);
    await p.screenshot(page, 'clinic-calendar-rooms');
    await axeIn(page, 'ro');
  });
});
