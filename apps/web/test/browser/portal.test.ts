import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@clinic/client';
import type { Page } from 'playwright-core';
import { skipWithoutChromium } from './harness.ts';
import { seriousViolations, startUiStack, type UiStack } from './ui-harness.ts';

/*
 * The patient portal in a real browser. Signed in here means the development server forwards the
 * patient's bearer token as the proxy does after its OpenID sign-in (the sign-in flow itself is the proxy's
 * test). The clinic made the patient's record and booked a visit for them; the patient meets the consent
 * gate, accepts, sees the visit and cancels it.
 */
const skip = skipWithoutChromium();

describe('patient portal (browser)', { skip, concurrency: false }, () => {
  let s: UiStack;
  let signedIn: string;
  let bookFor: () => Promise<void>;
  before(async () => {
    s = await startUiStack();
    const staff = createClient({ baseUrl: s.apiUrl, token: s.clinic.adminToken, organizationId: s.clinic.id });
    const email = `maria.${Date.now()}@example.com`;
    const patient = (await staff.createPatient({ body: { email, first_name: 'Maria', last_name: 'Ionescu' } })).data.data as { id: string };
    const from = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const slots = (
      await staff.getPublicAvailability({
        query: { organization: s.clinic.id, service_id: s.clinic.serviceId, from, to: from, time_zone: 'UTC' },
      })
    ).data.data.slots;
    let next = 0;
    bookFor = async () => {
      await staff.createAppointment({
        body: { service_id: s.clinic.serviceId, specialist_id: s.clinic.specialistId, start: slots[next++]!.start, patient_id: patient.id },
      });
    };
    await bookFor();
    signedIn = await s.signedInPortal(await s.clinic.token(email), email);
  });
  after(() => s?.close());

  async function open(url: string, width = 1280): Promise<Page> {
    const context = await s.browser.newContext({ viewport: { width, height: 900 }, locale: 'en-GB', timezoneId: 'Europe/Bucharest' });
    const page = await context.newPage();
    await page.goto(url);
    return page;
  }

  async function inRo(page: Page, check: () => Promise<void>) {
    await page.getByRole('combobox', { name: 'Language' }).selectOption('ro');
    await page.waitForFunction(() => document.documentElement.lang === 'ro');
    await check();
    await page.getByRole('combobox', { name: 'Limba' }).selectOption('en');
    await page.waitForFunction(() => document.documentElement.lang === 'en');
  }

  it('signed out: a Sign in control, accessible in en and ro', async () => {
    for (const width of [1280, 390]) {
      const page = await open(s.portalUrl, width);
      const signIn = page.getByRole('link', { name: 'Sign in' });
      await signIn.waitFor();
      assert.match((await signIn.getAttribute('href'))!, /^\/auth\/login\?return_to=%2Fportal/);
      await s.screenshot(page, `portal-signed-out-${width < 500 ? 'phone' : 'desktop'}`);
      if (width > 500) {
        assert.deepEqual(await seriousViolations(page), [], 'signed out, en');
        await inRo(page, async () => {
          await page.getByRole('link', { name: 'Autentificare' }).waitFor();
          assert.deepEqual(await seriousViolations(page), [], 'signed out, ro');
        });
      }
      await page.context().close();
    }
  });

  it('signed in: the consent gate, then the booking, which the patient cancels', async () => {
    const page = await open(signedIn);
    await page.getByRole('heading', { name: 'Before you continue' }).waitFor();
    await page.getByText(/keeps your name, contact details/).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'consent screen, en');
    await s.screenshot(page, 'portal-consent-desktop');
    await inRo(page, async () => {
      await page.getByRole('heading', { name: 'Înainte de a continua' }).waitFor();
      await page.getByText(/păstrează numele, datele de contact/).waitFor();
      assert.deepEqual(await seriousViolations(page), [], 'consent screen, ro');
      await s.screenshot(page, 'portal-consent-ro-desktop');
    });
    await page.getByRole('checkbox', { name: /I have read and accept/ }).check();
    await page.getByRole('button', { name: 'Accept and continue' }).click();

    await page.getByRole('heading', { name: 'Upcoming' }).waitFor();
    const cancel = page.getByRole('button', { name: 'Cancel appointment' });
    await cancel.waitFor();
    assert.equal(await cancel.count(), 1);
    assert.deepEqual(await seriousViolations(page), [], 'appointments, en');
    await s.screenshot(page, 'portal-appointments-desktop');
    await inRo(page, async () => {
      await page.getByRole('heading', { name: 'Următoare' }).waitFor();
      assert.deepEqual(await seriousViolations(page), [], 'appointments, ro');
    });

    await page.getByRole('button', { name: 'Cancel appointment' }).click();
    await page.getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.getByText('The appointment was cancelled.').waitFor();
    await page.getByText('Cancelled', { exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Cancel appointment' }).count(), 0);
    await s.screenshot(page, 'portal-cancelled-desktop');

    for (const tab of ['Documents', 'Forms', 'Today’s session', 'My progress', 'My data']) {
      await page.getByRole('tab', { name: tab }).click();
      await page.getByRole('tabpanel').waitFor();
      await page.waitForFunction(() => !document.querySelector('[role=tabpanel] .loading'));
      assert.deepEqual(await seriousViolations(page), [], `${tab}, en`);
      await s.screenshot(page, `portal-${tab.toLowerCase().replace(/\W+/g, '-')}-desktop`);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('tab', { name: 'Appointments' }).click();
    await page.getByRole('heading', { name: 'Past' }).waitFor();
    await s.screenshot(page, 'portal-appointments-phone');
  });

  it('signed in: the patient moves a visit the clinic booked to another time', async () => {
    await bookFor();
    const page = await open(signedIn);
    await page.getByRole('heading', { name: 'Upcoming' }).waitFor();
    // Moved to another time: the old one is shown as moved, the new one can be cancelled.
    await page.getByRole('button', { name: 'Reschedule' }).click();
    const times = page.getByRole('group', { name: 'Choose a new time' }).getByRole('button');
    await times.first().waitFor();
    await s.screenshot(page, 'portal-reschedule-desktop');
    await times.nth(3).click();
    await page.getByText('The appointment was moved.').waitFor();
    await page.getByText('Moved', { exact: true }).waitFor();
  });
});
