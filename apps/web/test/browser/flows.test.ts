import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { type Platform, skipWithoutChromium, startPlatform } from './harness.ts';
import { seriousViolations } from './ui-harness.ts';

/*
 * The whole path through the proxy on the demo clinic's own host (http://demo.localhost:<port>/): a guest
 * books and gets the .ics; a patient signs in through the OpenID flow, meets the consent gate in the
 * portal, accepts, sees their booking and cancels it.
 */
describe('booking page and portal through the proxy (browser)', { skip: skipWithoutChromium(), concurrency: false }, () => {
  let p: Platform;
  before(async () => {
    p = await startPlatform();
  });
  after(() => p?.close());

  it('a guest books on the clinic host start to finish and downloads the .ics', async () => {
    const page = await p.newPage({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Bucharest' });
    await page.goto(p.urls.booking);
    await page.getByRole('link', { name: 'Demo Clinic' }).waitFor();
    const slot = page.getByRole('button', { name: /^\d{2}:\d{2}$/ }).first();
    await slot.waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'booking page via the proxy (CSP on)');
    await slot.click();
    await page.getByRole('timer').waitFor();
    await page.getByLabel('Full name').fill('Ion Guest');
    await page.getByLabel('Email').fill('ion.guest@example.com');
    for (const box of await page.getByRole('checkbox', { name: /I accept/ }).all()) await box.check();
    await page.getByRole('button', { name: 'Confirm booking' }).click();
    await page.getByRole('heading', { name: 'You are booked' }).waitFor();
    await p.screenshot(page, 'proxy-booking-done-desktop');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /Add to calendar/ }).click()]);
    assert.match(await readFile((await download.path())!, 'utf8'), /BEGIN:VEVENT[\s\S]*SUMMARY:Physiotherapy session/);
  });

  it('a patient signs in, accepts the consents, sees the booking and cancels it', async () => {
    const page = await p.newPage({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Bucharest' });
    await page.goto(p.urls.portal);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Email').fill('maria.patient@example.com');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${p.urls.portal}**`);

    await page.getByRole('heading', { name: 'Before you continue' }).waitFor();
    await p.screenshot(page, 'proxy-portal-consent-desktop');
    // The texts load after the heading: wait for them before taking the list of boxes.
    await page
      .getByRole('checkbox', { name: /I have read and accept/ })
      .first()
      .waitFor();
    for (const box of await page.getByRole('checkbox', { name: /I have read and accept/ }).all()) await box.check();
    await page.getByRole('button', { name: 'Accept and continue' }).click();
    await page.getByRole('heading', { name: 'Upcoming' }).waitFor();

    // The patient books a time as patients do (POST /v1/appointments on their session), then sees it.
    const booked = await page.evaluate(async () => {
      const services = (await (await fetch('/v1/public/services')).json()).data;
      const service = services[0];
      const from = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
      const to = new Date(Date.now() + 14 * 86_400_000).toISOString().slice(0, 10);
      const slots = (await (await fetch(`/v1/public/availability?service_id=${service.id}&from=${from}&to=${to}`)).json()).data.slots;
      const res = await fetch('/v1/appointments', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ service_id: service.id, specialist_id: slots[0].specialist_id, start: slots[0].start }),
      });
      return { status: res.status, body: await res.text() };
    });
    assert.equal(booked.status, 201, booked.body);
    await page.reload();
    const cancel = page.getByRole('button', { name: 'Cancel appointment' });
    await cancel.waitFor();
    assert.equal(await cancel.count(), 1);
    assert.deepEqual(await seriousViolations(page), [], 'portal via the proxy (CSP on)');
    await p.screenshot(page, 'proxy-portal-appointments-desktop');
    await cancel.click();
    await page.getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.getByText('The appointment was cancelled.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Cancel appointment' }).count(), 0);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${p.clinicUrl('demo')}/**`);
    await page.goto(p.urls.portal);
    await page.getByRole('link', { name: 'Sign in' }).waitFor();
  });
});
