import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { createClient } from '@clinic/client';
import type { Page } from 'playwright-core';
import { createDevClinic, type DevClinic } from './dev-clinic.ts';
import { type Platform, skipWithoutChromium, startPlatform } from './harness.ts';
import { seriousViolations } from './ui-harness.ts';

/*
 * The clinic app's Patients area (/clinic/patients on the clinic's host, through the proxy and the real OpenID
 * sign-in): the list is windowed over the server's pages with the exact total; search narrows it; the keyboard
 * moves through rows and opens a record; the record shows only the sections the member's permission codes
 * allow (a custom role with patients.view_org and appointments.view_org sees no consents, documents or access
 * log); a document is rendered from a template and downloaded through its signed link; the access log names
 * who read the record; axe-core passes on the list and the record in en and ro.
 */
describe('browser: the clinic app, patients', { skip: skipWithoutChromium(), concurrency: false }, () => {
  let p: Platform;
  let clinic: DevClinic;
  let base: string;
  const stamp = Date.now().toString(36);
  /** More than two of the list's pages (100 rows each), so scrolling to the end needs a page the first view did not load. */
  const FILLER = 230;
  const deskEmail = () => `desk+${clinic.slug}@example.com`;
  const limitedEmail = `front.${stamp}@example.com`;
  let ioana: { id: string };
  let staff: ReturnType<typeof createClient>;

  before(async () => {
    p = await startPlatform();
    clinic = await createDevClinic(p.urls.core, { slug: `pat${stamp}`, env: { DATA_DIR: p.dataDir, NODE_ENV: 'development' } });
    base = p.clinicUrl(clinic.slug);
    staff = createClient({ baseUrl: p.urls.core, token: clinic.adminToken, organizationId: clinic.id });
    // The patient the tests look for, with a visit, a consent and a caregiver on her record.
    ioana = (
      await staff.createPatient({
        body: {
          email: `ioana.${stamp}@example.com`,
          first_name: 'Ioana',
          last_name: 'Marinescu',
          date_of_birth: '1986-04-12',
          phone: '+40 721 555 010',
        },
      })
    ).data.data;
    const surnames = ['Popa', 'Stan', 'Dumitru', 'Ionescu', 'Georgescu', 'Matei', 'Radu', 'Constantin', 'Munteanu', 'Lazăr'];
    const given = ['Andrei', 'Elena', 'Mihai', 'Ana', 'Radu', 'Cristina', 'Vlad', 'Irina', 'Dan', 'Sorina', 'Paul', 'Oana'];
    const queue = Array.from({ length: FILLER }, (_, i) => i);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift())
          await staff.createPatient({
            body: {
              email: `p${i}.${stamp}@example.com`,
              first_name: given[i % given.length]!,
              last_name: `${surnames[i % surnames.length]!}${i >= surnames.length ? ` ${String.fromCharCode(65 + (i % 26))}` : ''}`,
              date_of_birth: `19${50 + (i % 50)}-0${1 + (i % 9)}-1${i % 10}`,
            },
          });
      }),
    );
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const slots = (
      await staff.getPublicAvailability({
        query: { organization: clinic.id, service_id: clinic.serviceId, from: day, to: day, time_zone: 'UTC' },
      })
    ).data.data.slots;
    await staff.createAppointment({
      body: { service_id: clinic.serviceId, specialist_id: clinic.specialistId, start: slots[2]!.start, patient_id: ioana.id },
    });
    await staff.grantPatientConsents({
      params: { org_id: clinic.id, patient_id: ioana.id },
      body: { grants: [{ purpose_code: 'org_privacy_notice', purpose_version: 1 }] },
    });
    await staff.addCaregiver({ params: { id: ioana.id }, body: { email: `mother.${stamp}@example.com`, relationship: 'parent' } });
    await staff.createPdfTemplate({
      body: {
        name: 'Visit summary',
        kind: 'visit_summary',
        layout: {
          blocks: [
            { type: 'heading', text: '{{document.title}}' },
            { type: 'fields', rows: [{ label: 'Patient', value: '{{patient.full_name}}' }] },
            { type: 'text', text: '{{document.body}}' },
          ],
        },
      } as never,
    });
    // A clinic field on patient records, and an unsigned form for Ioana to fill and sign at the desk.
    await staff.createCustomField({
      body: {
        entity_type: 'patient',
        key: 'referred_by',
        label: 'Referred by',
        field_type: 'select',
        options: ['GP', 'Website', 'A friend'],
      },
    });
    const pain = (
      await staff.createCustomField({
        body: { entity_type: 'form', key: 'pain_today', label: 'Pain today (0 to 10)', field_type: 'number' },
      })
    ).data.data as { id: string };
    const template = (
      await staff.createFormTemplate({ body: { name: 'Back pain check', fields: [{ custom_field_id: pain.id, required: true }] } })
    ).data.data as { id: string };
    await staff.createForm({ body: { form_template_id: template.id, patient_id: ioana.id } });
    // A member whose custom role reads patients and appointments, and nothing else of the record.
    await staff.createRole({
      params: { id: clinic.id },
      body: { code: 'front_desk_lite', name: 'Front desk (lite)', permissions: ['patients.view_org', 'appointments.view_org'] } as never,
    });
    await staff.addMember({ params: { id: clinic.id }, body: { email: limitedEmail, role_code: 'front_desk_lite' } });
  });
  after(() => p?.close());

  async function signIn(email: string, path: string): Promise<Page> {
    const page = await p.newPage({ viewport: { width: 1360, height: 900 }, locale: 'en-GB', timezoneId: 'Europe/Bucharest' });
    await page.goto(`${base}${path}`);
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/clinic**`);
    return page;
  }

  async function axeIn(page: Page, lang: 'en' | 'ro', what: string) {
    const current = await page.evaluate(() => document.documentElement.lang);
    if (current !== lang) {
      await page.getByRole('combobox', { name: lang === 'ro' ? 'Language' : 'Limba' }).selectOption(lang);
      await page.waitForFunction((l) => document.documentElement.lang === l, lang);
    }
    assert.deepEqual(await seriousViolations(page), [], `axe: ${what} in ${lang}`);
  }

  const tabs = (page: Page) => page.getByRole('tablist').getByRole('tab').allInnerTexts();
  const grid = (page: Page) => page.getByRole('grid', { name: 'Patients' });

  it('the list: exact total, windowed rows, search, keyboard to the record', async () => {
    const page = await signIn(deskEmail(), '/clinic/patients');
    await page.getByRole('heading', { name: 'Patients', level: 1 }).waitFor();
    await page.getByText(`${FILLER + 1} patients`).waitFor();
    assert.equal(await grid(page).getAttribute('aria-rowcount'), String(FILLER + 2), 'every patient counted, plus the header row');
    await grid(page).getByRole('row').nth(5).getByRole('link').waitFor();
    const rendered = await grid(page).locator('tbody tr').count();
    assert.ok(rendered < 60, `only the rows in view are in the page (${rendered} of ${FILLER + 1})`);
    await p.screenshot(page, 'clinic-patients-list');
    await axeIn(page, 'en', 'list');
    await axeIn(page, 'ro', 'list');
    await page.getByText(`${FILLER + 1} pacienți`).waitFor();
    await axeIn(page, 'en', 'list');

    // End jumps to the last row: its page (the third) is fetched when it comes into view.
    await grid(page).focus();
    await page.keyboard.press('End');
    const last = grid(page).locator(`tr[aria-rowindex="${FILLER + 2}"]`);
    await last.getByRole('link').waitFor();
    assert.equal(await last.getAttribute('aria-selected'), 'true');
    // The second half is read in the reversed sort from the end: the same rows, in the same places, as the
    // sort's own pages (the server's order is total: the id breaks ties, reversed with the sort).
    const forward = (await staff.listPatients({ query: { sort: 'last_name', limit: '500' } })).data.data;
    const nameAt = async (i: number) =>
      (
        await grid(page)
          .locator(`tr[aria-rowindex="${i + 2}"] a`)
          .textContent()
      )?.trim();
    const name = (x: { first_name: string | null; last_name: string | null }) => `${x.first_name} ${x.last_name}`;
    assert.equal(await nameAt(FILLER), name(forward[FILLER]!));
    const half = Math.ceil((FILLER + 1) / 2);
    for (let i = FILLER; i > half - 1; i--) await page.keyboard.press('ArrowUp');
    await grid(page)
      .locator(`tr[aria-rowindex="${half + 1}"] a`)
      .waitFor();
    assert.equal(await nameAt(half - 1), name(forward[half - 1]!), 'the last row of the first half');
    assert.equal(await nameAt(half), name(forward[half]!), 'the first row of the second half');
    await page.keyboard.press('Home');
    await grid(page).locator('tr[aria-rowindex="2"][aria-selected="true"]').waitFor();

    await page.getByRole('searchbox', { name: 'Search' }).fill('marines');
    await page.getByText('1 found').waitFor();
    await page.waitForURL(/\?q=marines/);
    await grid(page).getByRole('link', { name: 'Ioana Marinescu' }).waitFor();
    await p.screenshot(page, 'clinic-patients-search');
    // Arrows move the active row; Enter opens it.
    await grid(page).focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/clinic/patients/${ioana.id}`);
    await page.getByRole('heading', { name: 'Ioana Marinescu', level: 1 }).waitFor();
    // Back returns to the search.
    await page.goBack();
    await page.getByText('1 found').waitFor();
    await page.context().close();
  });

  it('the record: every section the admin may read; a document rendered and downloaded; the access log names the reader', async () => {
    const page = await signIn(deskEmail(), `/clinic/patients/${ioana.id}`);
    await page.getByRole('heading', { name: 'Ioana Marinescu', level: 1 }).waitFor();
    assert.deepEqual(await tabs(page), [
      'Profile',
      'Appointments',
      'Consents',
      'Forms',
      'Documents',
      'Caregivers',
      'Treatment plans',
      'Access log',
    ]);
    // The server keeps the phone in E.164.
    await page.getByRole('tabpanel').getByText('+40721555010').waitFor();
    await p.screenshot(page, 'clinic-patient-profile');
    await axeIn(page, 'en', 'record');
    await axeIn(page, 'ro', 'record');
    await page.getByRole('tab', { name: 'Profil' }).waitFor();
    await axeIn(page, 'en', 'record');

    // Edit the profile: the server's answer is what the record then shows.
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('City').fill('Cluj-Napoca');
    await page.getByLabel('Referred by').selectOption('GP');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('The profile was saved.').waitFor();
    await page.getByRole('tabpanel').getByText('Cluj-Napoca').waitFor();
    const referred = page.getByRole('tabpanel').locator('dt', { hasText: 'Referred by' }).locator('xpath=following-sibling::dd');
    assert.equal(await referred.textContent(), 'GP');
    // A refusal shows the server's message: a record number too long for the field.
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Clinic record number').fill('X'.repeat(80));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').waitFor();
    assert.notEqual(await page.getByRole('alert').first().textContent(), 'Something went wrong. Please try again.');
    await page.getByRole('button', { name: 'Cancel' }).click();

    // Tabs by keyboard: the arrow moves to the next section.
    await page.getByRole('tab', { name: 'Profile' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.getByRole('tab', { name: 'Appointments', selected: true }).waitFor();
    await page.getByRole('tabpanel').getByText('Physiotherapy session').waitFor();
    await page.getByRole('tabpanel').getByText('Dr Ana Popescu').waitFor();
    await p.screenshot(page, 'clinic-patient-appointments');

    await page.getByRole('tab', { name: 'Consents' }).click();
    await page.getByRole('tabpanel').getByText('Clinic privacy notice').waitFor();
    await page.getByRole('tabpanel').getByText('By the clinic').waitFor();
    await p.screenshot(page, 'clinic-patient-consents');

    // The form: filled and signed by the desk; signing is final.
    await page.getByRole('tab', { name: 'Forms' }).click();
    await page.getByRole('button', { name: 'Fill in Back pain check' }).click();
    await page.getByLabel(/Pain today/).fill('4');
    await page.getByRole('button', { name: 'Sign Back pain check' }).click();
    await page.getByText('“Back pain check” is signed. A signed form is final.').waitFor();
    await page.getByRole('tabpanel').getByText('Signed', { exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Fill in Back pain check' }).count(), 0);
    await p.screenshot(page, 'clinic-patient-forms');

    await page.getByRole('tab', { name: 'Caregivers' }).click();
    await page.getByRole('tabpanel').getByText(`mother.${stamp}@example.com`).first().waitFor();

    await page.getByRole('tab', { name: 'Treatment plans' }).click();
    await page.getByRole('tabpanel').getByText('Not enrolled in a treatment plan.').waitFor();

    await page.getByRole('tab', { name: 'Documents' }).click();
    await page.getByRole('button', { name: 'New document' }).click();
    await page.getByLabel('Title (optional)').fill('Summary of the first visit');
    await page.getByLabel('Text').fill('Lower back pain, improving. Continue the exercises twice a day.');
    await page.getByRole('button', { name: 'Create PDF' }).click();
    const download = page.getByRole('button', { name: 'Download Summary of the first visit' });
    await download.waitFor({ timeout: 60_000 });
    await p.screenshot(page, 'clinic-patient-documents');
    await axeIn(page, 'en', 'documents');
    // The signed link is an attachment: the browser saves a PDF and the record stays.
    const [saved] = await Promise.all([page.waitForEvent('download'), download.click()]);
    assert.match(saved.suggestedFilename(), /\.pdf$/);
    const bytes = await readFile((await saved.path())!);
    assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
    await page.getByRole('heading', { name: 'Ioana Marinescu', level: 1 }).waitFor();

    await page.getByRole('tab', { name: 'Access log' }).click();
    const log = page.getByRole('tabpanel');
    await log.getByText('Opened the record').first().waitFor();
    await log.getByText(deskEmail()).first().waitFor();
    await log.getByText('Downloaded a document').first().waitFor();
    await p.screenshot(page, 'clinic-patient-access-log');
    await axeIn(page, 'en', 'access log');
    await axeIn(page, 'ro', 'access log');
    await page.context().close();
  });

  it('a member whose role lacks the codes does not see those sections', async () => {
    const page = await signIn(limitedEmail, `/clinic/patients/${ioana.id}`);
    await page.getByRole('heading', { name: 'Ioana Marinescu', level: 1 }).waitFor();
    assert.deepEqual(await tabs(page), ['Profile', 'Appointments', 'Caregivers']);
    // No edit without patients.update_org, and a section's address opened anyway shows the first section.
    assert.equal(await page.getByRole('button', { name: 'Edit' }).count(), 0);
    await page.goto(`${base}/clinic/patients/${ioana.id}?tab=access`);
    await page.getByRole('tab', { name: 'Profile', selected: true }).waitFor();
    assert.equal(await page.getByText('Who opened this record').count(), 0);
    await p.screenshot(page, 'clinic-patient-limited-role');
    // The server agrees: the access log is refused to this member.
    const refused = await page.evaluate(async (id) => (await fetch(`/v1/audit-logs/access?patient_id=${id}`)).status, ioana.id);
    assert.equal(refused, 403);
    await axeIn(page, 'en', 'record, limited');
    await page.context().close();
  });
});
