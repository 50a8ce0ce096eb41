import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@clinic/client';
import type { Page } from 'playwright-core';
import { createDevClinic, type DevClinic } from './dev-clinic.ts';
import { type Platform, skipWithoutChromium, startPlatform } from './harness.ts';
import { seriousViolations } from './ui-harness.ts';

/*
 * The clinic app's shell (/clinic on the clinic's host, through the proxy and the real OpenID sign-in):
 * staff invited by email sign in there for the first time (the proxy sends X-Organization-ID with that first
 * request, which must not make them patients); each sees only the areas its permission codes allow; a person
 * without a membership gets the refusal page; axe-core passes in en and ro.
 */
describe('browser: the clinic app shell', { skip: skipWithoutChromium(), concurrency: false }, () => {
  let p: Platform;
  let clinic: DevClinic;
  let base: string;
  const stamp = Date.now().toString(36);
  const emails = {
    desk: `reception.${stamp}@example.com`,
    clerk: `records.${stamp}@example.com`,
    stranger: `walk-in.${stamp}@example.com`,
  };
  let admin: ReturnType<typeof createClient>;

  before(async () => {
    p = await startPlatform();
    clinic = await createDevClinic(p.urls.core, { slug: `shell${stamp}`, env: { DATA_DIR: p.dataDir, NODE_ENV: 'development' } });
    base = p.clinicUrl(clinic.slug);
    admin = createClient({ baseUrl: p.urls.core, token: clinic.adminToken, organizationId: clinic.id });
    // A front-desk member (the customer_support template: appointments, no settings) and a member of a
    // custom role without any appointments code; both invited by email, never signed in yet.
    await admin.addMember({ params: { id: clinic.id }, body: { email: emails.desk, role_code: 'customer_support' } });
    await admin.createRole({
      params: { id: clinic.id },
      body: { code: 'records_clerk', name: 'Records clerk', permissions: ['patients.view_org'] } as never,
    });
    await admin.addMember({ params: { id: clinic.id }, body: { email: emails.clerk, role_code: 'records_clerk' } });
  });
  after(() => p?.close());

  async function signIn(email: string, path = '/clinic'): Promise<Page> {
    const page = await p.newPage({ viewport: { width: 1280, height: 860 }, locale: 'en-GB', timezoneId: 'Europe/Bucharest' });
    await page.goto(`${base}${path}`);
    // Signed out, /clinic goes straight to the provider's page.
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/clinic**`);
    return page;
  }

  const navLinks = async (page: Page, label = 'Clinic areas') =>
    page.getByRole('navigation', { name: label }).getByRole('link').allInnerTexts();

  async function axeIn(page: Page, lang: 'en' | 'ro') {
    const current = await page.evaluate(() => document.documentElement.lang);
    if (current !== lang) {
      await page.getByRole('combobox', { name: lang === 'ro' ? 'Language' : 'Limba' }).selectOption(lang);
      await page.waitForFunction((l) => document.documentElement.lang === l, lang);
    }
    assert.deepEqual(await seriousViolations(page), [], `axe in ${lang}`);
  }

  it('a front-desk member signs in at /clinic for the first time: staff, not a patient, sees Calendar and Patients', async () => {
    const page = await signIn(emails.desk);
    await page.getByRole('heading', { name: 'Calendar', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/clinic/calendar');
    assert.deepEqual(await navLinks(page), ['Calendar', 'Patients']);
    assert.equal(await page.getByRole('link', { name: 'Calendar' }).getAttribute('aria-current'), 'page');
    // The first request carried X-Organization-ID (the proxy sets it from the host): still no patient link.
    const me: any = await page.evaluate(async () => (await fetch('/v1/me')).json());
    assert.equal(me.data.is_staff_at_current_org, true);
    assert.equal(me.data.is_patient_at_current_org, false);
    assert.deepEqual(me.data.patient_org_ids, []);
    const patients = (await admin.listPatients({ query: { q: emails.desk } as never })).data.data;
    assert.equal(patients.length, 0, 'no patient record was made for the member');
    await p.screenshot(page, 'clinic-shell-reception');
    await axeIn(page, 'en');
    await axeIn(page, 'ro');
    assert.deepEqual(await navLinks(page, 'Secțiunile clinicii'), ['Calendar', 'Pacienți']);
    await axeIn(page, 'en');
  });

  it('a member whose role has no appointments code sees no Calendar, in the language of their preference', async () => {
    // The clerk chose Romanian earlier (a first request without a clinic: no patient link either).
    const own = createClient({ baseUrl: p.urls.core, token: await p.token(emails.clerk) });
    await own.updateMe({ body: { preferred_language: 'ro' } });
    const page = await signIn(emails.clerk);
    await page.waitForFunction(() => document.documentElement.lang === 'ro');
    await page.getByRole('banner').waitFor();
    const nav = page.getByRole('navigation', { name: 'Secțiunile clinicii' });
    const links = (await nav.count()) ? await nav.getByRole('link').allInnerTexts() : [];
    assert.ok(!links.includes('Calendar'), `no Calendar for the clerk: ${links.join(', ')}`);
    // Opening the calendar's address anyway shows no calendar.
    await page.goto(`${base}/clinic/calendar`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    assert.notEqual(await page.getByRole('heading', { level: 1 }).first().textContent(), 'Calendar');
    await p.screenshot(page, 'clinic-shell-clerk-ro');
    await axeIn(page, 'ro');
  });

  it('a person without a membership gets the refusal page, accessible in en and ro', async () => {
    const page = await signIn(emails.stranger);
    await page.getByRole('heading', { name: 'No access to this clinic' }).waitFor();
    assert.equal(await page.getByRole('navigation', { name: 'Clinic areas' }).count(), 0);
    assert.ok(await page.getByRole('link', { name: /Go to your account/ }).isVisible());
    await p.screenshot(page, 'clinic-shell-no-access');
    await axeIn(page, 'en');
    await axeIn(page, 'ro');
    await page.getByRole('heading', { name: 'Nu aveți acces la această clinică' }).waitFor();
  });
});
