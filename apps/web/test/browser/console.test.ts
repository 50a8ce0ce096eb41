import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@clinic/client';
import type { Page } from 'playwright-core';
import { type Platform, skipWithoutChromium, startPlatform } from './harness.ts';
import { seriousViolations } from './ui-harness.ts';

/*
 * The console (superadmin, /console on the platform's own host) in a real browser through the proxy: a
 * superadmin signs in, creates an organization, opens a clinic's patients under break-glass (the elevation
 * form drawn from the refusal, the countdown), and the clinic's admin finds the session in its audit log;
 * the other screens pass axe-core in en and ro; a signed-in person who is not a superadmin is refused.
 */
const SUPERADMIN = 'operator@console.test';

describe('console (browser)', { skip: skipWithoutChromium(), concurrency: false }, () => {
  let p: Platform;
  let page: Page;
  before(async () => {
    p = await startPlatform();
    // The person exists once they have called the API; then the CLI makes them a superadmin, as an operator would.
    await createClient({ baseUrl: p.urls.core, token: await p.token(SUPERADMIN) }).getMe();
    const grant = spawnSync('npm', ['run', '-s', 'cli', '--', 'superadmin', 'grant', SUPERADMIN], {
      env: { ...process.env, DATA_DIR: p.dataDir, PORT: String(p.ports.core) },
      encoding: 'utf8',
    });
    assert.equal(grant.status, 0, `${grant.stderr}${grant.stdout}`);
  });
  after(() => p?.close());

  async function signIn(target: Page, email: string) {
    await target.goto(`${p.urls.platform}/console`);
    // Signed out: straight to the sign-in page, then back to the console.
    await target.getByLabel('Email').fill(email);
    await target.getByRole('button', { name: 'Sign in' }).click();
    await target.waitForURL(`${p.urls.platform}/console**`);
  }

  /** axe in en, then in ro through the language switch (back to en after). */
  async function accessible(target: Page, name: string, roHeading: string) {
    assert.deepEqual(await seriousViolations(target), [], `${name} (en)`);
    await p.screenshot(target, `console-${name}-en`);
    await target.getByRole('combobox', { name: 'Language' }).selectOption('ro');
    await target.getByRole('heading', { level: 1, name: roHeading }).waitFor();
    assert.deepEqual(await seriousViolations(target), [], `${name} (ro)`);
    await p.screenshot(target, `console-${name}-ro`);
    await target.getByRole('combobox', { name: 'Limba' }).selectOption('en');
    await target.waitForFunction(() => document.documentElement.lang === 'en');
  }

  it('a superadmin signs in and creates an organization (slug and language)', async () => {
    page = await p.newPage({ viewport: { width: 1360, height: 900 }, timezoneId: 'Europe/Bucharest' });
    await signIn(page, SUPERADMIN);
    await page.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor();
    await page.getByRole('link', { name: 'Demo Clinic' }).waitFor();
    await accessible(page, 'organizations', 'Organizații');

    await page.getByRole('button', { name: 'New organization' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Harbour Physio');
    assert.equal(await page.getByLabel('Slug', { exact: true }).inputValue(), 'harbour-physio', 'the slug follows the name');
    await page.getByLabel('Slug', { exact: true }).fill('harbour');
    await page.getByRole('combobox', { name: 'Language' }).nth(1).selectOption('ro');
    await p.screenshot(page, 'console-organization-create-en');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.getByRole('heading', { level: 1, name: 'Harbour Physio' }).waitFor();
    await page.getByText(`harbour.localhost:${p.ports.web}`).waitFor();
    await page.getByText('ro', { exact: true }).waitFor();
  });

  it("opens a clinic's patients under break-glass, and the clinic sees the session in its audit log", async () => {
    // The new clinic gets an administrator and a patient, made through the API as the clinic would.
    const su = createClient({ baseUrl: p.urls.core, token: await p.token(SUPERADMIN) });
    const orgs = (await su.listOrganizations({ query: { q: 'harbour' } })).data.data;
    const org = orgs.find((o) => o.slug === 'harbour')!;
    const adminEmail = 'admin@harbour.test';
    const adminToken = await p.token(adminEmail);
    await createClient({ baseUrl: p.urls.core, token: adminToken }).getMe();
    await su.addMember({ params: { id: org.id }, body: { email: adminEmail, role_code: 'admin' } });
    const clinic = createClient({ baseUrl: p.urls.core, token: adminToken, organizationId: org.id });
    await clinic.publishOrgConsentVersion({
      params: { id: org.id, code: 'org_privacy_notice' },
      body: { body_translations: { en: 'Harbour Physio keeps your contact details and visit notes to care for you.' } },
    });
    await clinic.createPatient({ body: { email: 'maria.harbour@example.com', first_name: 'Maria', last_name: 'Pop' } });

    await page.reload();
    await page.getByRole('tab', { name: 'Patients' }).waitFor();
    // The console asked; the API refused with the elevation metadata; the form is drawn from it.
    await page.getByRole('heading', { name: 'Break-glass access needed' }).waitFor();
    await accessible(page, 'break-glass-form', 'Harbour Physio');
    await page.getByLabel('Reason category').selectOption('support_ticket');
    await page.getByLabel('Ticket or incident reference (optional)').fill('SUP-4211');
    await page.getByLabel('Reason', { exact: true }).fill('The clinic asked us to check a duplicate patient record (ticket SUP-4211).');
    await page.getByLabel('Duration in minutes').fill('30');
    await page.getByRole('button', { name: 'Open break-glass session' }).click();

    const timer = page.getByRole('timer');
    await timer.waitFor();
    assert.match((await timer.textContent()) ?? '', /^(30:00|29:\d{2})$/);
    await page.getByRole('cell', { name: 'maria.harbour@example.com' }).waitFor();
    // Live: the countdown moves on its own.
    const first = await timer.textContent();
    await page.waitForFunction((t) => document.querySelector('[role="timer"]')?.textContent !== t, first);
    await accessible(page, 'break-glass-patients', 'Harbour Physio');

    // One patient's record is another scope (patient_detail): its own refusal, form and session.
    await page.getByRole('button', { name: 'maria.harbour@example.com' }).click();
    const record = page.getByRole('region', { name: 'Patient record' });
    await record.getByRole('heading', { name: 'Break-glass access needed' }).waitFor();
    await record.getByText('patient records').first().waitFor();
    await record.getByLabel('Reason', { exact: true }).fill('Duplicate record check for ticket SUP-4211, the second record.');
    await record.getByRole('button', { name: 'Open break-glass session' }).click();
    await record.getByRole('timer').waitFor();
    await record.getByText('maria.harbour@example.com').waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'patient record (en)');
    await p.screenshot(page, 'console-break-glass-record-en');

    // The audit log tab is another scope: refused until its own session.
    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Break-glass access needed' }).waitFor();
    await page.getByText('the full audit log').first().waitFor();

    // Back on the patients, the operator ends the session: the data goes, the form returns.
    await page.getByRole('tab', { name: 'Patients' }).click();
    await page.getByRole('timer').waitFor();
    await page.getByRole('button', { name: 'End session' }).click();
    await page.getByRole('heading', { name: 'Your break-glass session has ended' }).waitFor();
    assert.equal(await page.getByRole('cell', { name: 'maria.harbour@example.com' }).count(), 0);

    // The clinic's administrator sees the session, the read and its end in the clinic's own audit log.
    const log = (await clinic.listAuditLogs({ query: { action_context: 'break_glass', limit: '50' } })).data.data;
    const actions = log.map((e) => e.action);
    for (const action of ['break_glass.opened', 'console.patients_listed', 'break_glass.ended'])
      assert.ok(actions.includes(action), actions.join(', '));
    const opened = log.find((e) => e.action === 'break_glass.opened' && (e.data as { scope?: string }).scope === 'patient_list')!;
    assert.equal((opened.data as { reason_ref?: string }).reason_ref, 'SUP-4211');
  });

  it('providers, consent purposes, system health and the audit chain pass axe in en and ro', async () => {
    await page.getByRole('link', { name: 'Providers' }).click();
    await page.getByRole('heading', { level: 1, name: 'Platform providers' }).waitFor();
    await page.getByRole('cell', { name: /Email/ }).first().waitFor();
    await accessible(page, 'providers', 'Furnizorii platformei');
    await page.getByRole('button', { name: /Rotate credentials of Email/ }).click();
    await page.getByLabel('Secret access key').waitFor();
    assert.equal(await page.getByLabel('Secret access key').getAttribute('type'), 'password');
    assert.equal(await page.getByLabel('Secret access key').inputValue(), '', 'a stored secret is never shown');
    await p.screenshot(page, 'console-providers-rotate-en');
    await page.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('link', { name: 'Consent purposes' }).click();
    await page.getByRole('heading', { level: 1, name: 'Consent purposes' }).waitFor();
    await page
      .getByRole('button', { name: /New version/ })
      .first()
      .waitFor();
    await accessible(page, 'consents', 'Scopuri de consimțământ');

    await page.getByRole('link', { name: 'System health' }).click();
    await page.getByRole('heading', { level: 1, name: 'System health' }).waitFor();
    for (const name of ['Core API', 'Database pool', 'Redis', 'Telemetry', 'Composer', 'Worker'])
      await page.getByRole('heading', { level: 2, name }).waitFor();
    await accessible(page, 'health', 'Starea sistemului');

    await page.getByRole('link', { name: 'Audit chain' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit chain' }).waitFor();
    await page.getByLabel('Chain').selectOption({ label: 'Harbour Physio' });
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await page.getByText(/entries checked; every hash and link is intact/).waitFor();
    await accessible(page, 'audit-chain', 'Lanțul de audit');
  });

  it('a signed-in person who is not a superadmin is refused with a clear page (403)', async () => {
    const other = await p.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(other, 'someone@example.com');
    await other.getByRole('heading', { name: 'The console is for platform operators' }).waitFor();
    assert.equal(await other.getByRole('navigation', { name: 'Console' }).count(), 0, 'no console navigation');
    const res = await other.request.get(`${p.urls.platform}/console/organizations`, { maxRedirects: 0 });
    assert.equal(res.status(), 403);
    // The API refuses the console's data anyway.
    const api = await other.evaluate(async () => (await fetch('/v1/admin/system-status')).status);
    assert.equal(api, 403);
    await accessible(other, 'refused', 'Consola este pentru operatorii platformei');
  });
});
