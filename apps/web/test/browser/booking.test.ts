import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { skipWithoutChromium } from './harness.ts';
import { seriousViolations, startUiStack, type UiStack } from './ui-harness.ts';

/*
 * The public booking page in a real browser, driven as a person is: by role and label. A guest books and
 * gets the .ics; two visitors race for one time and the loser is told and offered others; a hold left
 * alone expires on screen (holds last one minute here, the shortest SCHEDULING_HOLD_MINUTES allows).
 */
const skip = skipWithoutChromium();
const SLOT = { name: /^\d{2}:\d{2}$/ };

describe('booking page (browser)', { skip, concurrency: false }, () => {
  let s: UiStack;
  const contexts: BrowserContext[] = [];
  before(async () => {
    s = await startUiStack({ holdMinutes: 1 });
  });
  after(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await s?.close();
  });

  async function open(width = 1280): Promise<Page> {
    const context = await s.browser.newContext({
      viewport: { width, height: 900 },
      acceptDownloads: true,
      locale: 'en-GB',
      timezoneId: 'Europe/Bucharest',
    });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(s.bookingUrl);
    await page.getByRole('button', SLOT).first().waitFor();
    return page;
  }

  async function fillGuest(page: Page, name: string) {
    await page.getByLabel('Full name').fill(name);
    await page.getByLabel('Email').fill(`${name.split(' ')[0]!.toLowerCase()}@example.com`);
    await page.getByLabel('Phone (optional)').fill('+40 700 000 000');
    await page.getByRole('checkbox', { name: /I accept/ }).check();
  }

  it('a guest books a slot start to finish and downloads the .ics', async () => {
    const page = await open();
    await s.screenshot(page, 'booking-slots-desktop');
    await page.getByRole('button', SLOT).first().click();
    await page.getByRole('timer', { name: 'Reservation time left' }).waitFor();
    await fillGuest(page, 'Ana Guest');
    await s.screenshot(page, 'booking-form-desktop');
    await page.getByRole('button', { name: 'Confirm booking' }).click();
    await page.getByRole('heading', { name: 'You are booked' }).waitFor();
    await s.screenshot(page, 'booking-done-desktop');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /Add to calendar/ }).click()]);
    assert.equal(download.suggestedFilename(), 'appointment.ics');
    const ics = await readFile((await download.path())!, 'utf8');
    assert.match(ics, /BEGIN:VEVENT[\s\S]*DTSTART:\d{8}T\d{6}Z[\s\S]*SUMMARY:Physiotherapy session with Dr Ana Popescu/);
  });

  it('keyboard alone at phone width: choose a time, fill the form, book', async () => {
    const page = await open(390);
    await s.screenshot(page, 'booking-slots-phone');
    const slot = page.getByRole('button', SLOT).first();
    await slot.focus();
    await page.keyboard.press('Enter');
    // Focus lands in the form; everything else is typed and tabbed.
    await page.waitForFunction(() => document.activeElement?.id === 'g-name');
    await page.keyboard.type('Kim Keys');
    await page.keyboard.press('Tab');
    await page.keyboard.type('kim@example.com');
    await page.getByRole('checkbox', { name: /I accept/ }).focus();
    await page.keyboard.press('Space');
    await s.screenshot(page, 'booking-form-phone');
    await page.getByRole('button', { name: 'Confirm booking' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'You are booked' }).waitFor();
    await s.screenshot(page, 'booking-done-phone');
  });

  it('two visitors race for one time: the loser is told and offered the next free ones', async () => {
    const [a, b] = [await open(), await open()];
    const first = await a.getByRole('button', SLOT).first().textContent();
    await a.getByRole('button', { name: first! }).click();
    await a.getByRole('timer').waitFor();
    await b.getByRole('button', { name: first! }).click();
    await b.getByText(/was just taken by someone else/).waitFor();
    const offered = b.getByRole('status').getByRole('button');
    assert.ok((await offered.count()) > 0, 'other times are offered');
    await s.screenshot(b, 'booking-taken-desktop');
    await offered.first().click();
    await b.getByRole('timer').waitFor();
    await b.getByLabel('Full name').waitFor();
  });

  it('a hold left alone expires on screen and another time can be picked', async () => {
    const page = await open();
    await page.getByRole('button', SLOT).first().click();
    await page.getByRole('timer').waitFor();
    // The hold lasts a minute; its stream says `expired` when the server ends it.
    await page.getByText('Your reservation has expired').waitFor({ timeout: 120_000 });
    await s.screenshot(page, 'booking-expired-desktop');
    await page.getByRole('button', { name: 'Pick another time' }).click();
    await page.getByRole('button', SLOT).first().waitFor();
  });

  it('no serious or critical axe violation in en and ro, on the slots and the guest form', async () => {
    const page = await open();
    assert.deepEqual(await seriousViolations(page), [], 'slots, en');
    await page.getByRole('combobox', { name: 'Language' }).selectOption('ro');
    await page.waitForFunction(() => document.documentElement.lang === 'ro');
    await page.getByRole('heading', { name: 'Programează-te' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'slots, ro');
    await s.screenshot(page, 'booking-slots-ro-desktop');
    await page.getByRole('combobox', { name: 'Limba' }).selectOption('en');
    await page.getByRole('button', SLOT).first().click();
    await page.getByLabel('Full name').waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'guest form, en');
    await page.getByRole('combobox', { name: 'Language' }).selectOption('ro');
    await page.getByLabel('Nume complet').waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'guest form, ro');
    await s.screenshot(page, 'booking-form-ro-desktop');
  });
});
