import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { redactUrl } from '@clinic/http-kit';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { canonical, formSnapshot } from '../src/modules/documents/data-model.ts';
import { renderQueued, sweepOrphanDocumentFiles } from '../src/modules/documents/jobs.ts';
import { createPdfEngine } from '../src/modules/documents/render/engine.ts';
import { loadForm } from '../src/modules/forms/service.ts';
import { startWorker } from '../src/worker/worker.ts';
import { signDocumentPath } from '../src/modules/documents/signed-url.ts';
import { assertError, dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';
import { type Clinic, setUpClinic } from './support/appointment-clinic.ts';
import { pdfFonts, pdfPicture, pdfText, skipWithoutPoppler } from './support/poppler.ts';

/*
 * Documents through HTTP: PDF templates with the versioned lifecycle and placeholders checked
 * against the data model; forms rendered (idempotent by content; the signature, its time and the
 * snapshot's SHA-256 printed); appointment documents made by staff, published to the patient and
 * downloaded through the API's signed path (the folder store); the worker path for long documents; the
 * letterhead and its logo; bad input answered 4xx with nothing stored.
 */

const skip = skipWithoutPoppler();
const MARKUP = '#set page(width: 20pt) *B* _i_ $x$ = H <l> @r ] [ \\ {{patient.full_name}}';

const formLayout = {
  blocks: [
    { type: 'heading', text: '{{form.title}}' },
    {
      type: 'fields',
      rows: [
        { label: 'Patient', value: '{{patient.full_name}}' },
        { label: 'Born', value: '{{patient.date_of_birth}}' },
      ],
    },
    { type: 'answers', question_label: 'Întrebare', answer_label: 'Răspuns' },
    { type: 'signature' },
  ],
};
const prescriptionLayout = {
  footer: '{{organization.name}} · {{specialist.display_name}}',
  blocks: [
    { type: 'heading', text: 'Prescription' },
    {
      type: 'fields',
      rows: [
        { label: 'Patient', value: '{{patient.full_name}}' },
        { label: 'Visit', value: '{{appointment.date}} {{appointment.time}} ({{appointment.time_zone}}), {{appointment.service}}' },
        { label: 'Specialist', value: '{{specialist.display_name}}' },
      ],
    },
    { type: 'text', text: '{{document.body}}' },
    {
      type: 'items',
      columns: [
        { key: 'drug', label: 'Medication', width: 3 },
        { key: 'dose', label: 'Dose' },
      ],
    },
  ],
};

describe('documents', { skip }, () => {
  let t: TestApp;
  let c: Clinic;
  let formTemplateId: string;
  let pdfFormTemplate: any;
  let pdfPrescription: any;
  const docs = (orgId: string) => t.db.query<{ n: number }>('select count(*)::int as n from documents where organization_id = $1', [orgId]);
  const fetchPdf = async (url: string) => {
    const u = new URL(url);
    const res = await t.app.inject({ method: 'GET', url: u.pathname + u.search });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/pdf');
    return res.rawPayload;
  };

  before(async () => {
    t = await startTestApp({ env: { DOCUMENT_LOGO_MAX_BYTES: '4096' } });
    c = await setUpClinic(t, 'docs');
    await t.db.query(`update patients set first_name = $2, last_name = 'Țăranu-Weiß', date_of_birth = '1980-03-04' where id = $1`, [
      c.patient.id,
      MARKUP,
    ]);
    const field = async (key: string, body: Record<string, unknown>) =>
      dataOf(
        await c.call('POST', '/v1/custom-fields', c.admin, { entity_type: 'form', key, label: key, field_type: 'text', ...body }),
        201,
      );
    const pain = await field('pain', { field_type: 'number', label: 'Durere (0-10) ș ț ă' });
    const story = await field('story', { field_type: 'long_text', label: 'Istoric ł ź ß ř' });
    const secret = await field('assessment', { private: true, label: 'Clinician only' });
    formTemplateId = dataOf(
      await c.call('POST', '/v1/form-templates', c.admin, {
        name: 'Intake',
        fields: [{ custom_field_id: pain.id, required: true }, { custom_field_id: story.id }, { custom_field_id: secret.id }],
      }),
      201,
    ).id;
    pdfFormTemplate = dataOf(
      await c.call('POST', '/v1/pdf-templates', c.admin, { name: 'Fișă de intake', kind: 'form', layout: formLayout }),
      201,
    );
    pdfPrescription = dataOf(
      await c.call('POST', '/v1/pdf-templates', c.admin, { name: 'Rețetă', kind: 'prescription', layout: prescriptionLayout }),
      201,
    );
  });
  after(() => t.close());

  const newForm = async (values: Record<string, unknown> = {}) => {
    const f = dataOf(
      await c.call('POST', '/v1/forms', c.specialists[0]!.token, { form_template_id: formTemplateId, patient_id: c.patient.id }),
      201,
    );
    if (Object.keys(values).length) dataOf(await c.call('PATCH', `/v1/forms/${f.id}`, c.specialists[0]!.token, { values }));
    return f.id as string;
  };

  describe('PDF templates', () => {
    it('follow the versioned lifecycle: draft, publish, versions, rollback; readers see the published version', async () => {
      const tpl = dataOf(
        await c.call('POST', '/v1/pdf-templates', c.admin, {
          name: 'Summary v1',
          kind: 'visit_summary',
          layout: { blocks: [{ type: 'text', text: '{{document.body}}' }] },
        }),
        201,
      );
      assert.equal(tpl.version, 1);
      assert.equal(tpl.published, true);
      assert.equal(tpl.layout.page.size, 'A4');
      const draft = dataOf(await c.call('PATCH', `/v1/pdf-templates/${tpl.id}`, c.admin, { name: 'Summary v2' }));
      assert.equal(draft.published, false);
      // A clinician (pdf_templates.view_published) sees version 1 while the draft waits.
      assert.equal(dataOf(await c.call('GET', `/v1/pdf-templates/${tpl.id}`, c.specialists[0]!.token)).name, 'Summary v1');
      assert.equal(dataOf(await c.call('GET', `/v1/pdf-templates/${tpl.id}`, c.admin)).name, 'Summary v2');
      // A template never published (a draft from the start, version 0) has no version to show a reader: it
      // is not there for them, in a read or a list (it was shown to them as the draft itself).
      const unpublished = dataOf(
        await c.call('POST', '/v1/pdf-templates', c.admin, {
          name: `Unpublished ${tpl.id}`,
          kind: 'report',
          layout: { blocks: [{ type: 'text', text: 'Draft' }] },
          draft: true,
        }),
        201,
      );
      assertError(await c.call('GET', `/v1/pdf-templates/${unpublished.id}`, c.specialists[0]!.token), 404, 'not_found');
      const listed = (token: string) =>
        c.call('GET', `/v1/pdf-templates?q=${encodeURIComponent(unpublished.name)}`, token).then((r) => r.json());
      assert.deepEqual((await listed(c.specialists[0]!.token)).data, []);
      assert.equal((await listed(c.specialists[0]!.token)).pagination.total, 0);
      assert.equal((await listed(c.admin)).data[0].id, unpublished.id);
      const v2 = dataOf(await c.call('POST', `/v1/pdf-templates/${tpl.id}/publish`, c.admin));
      assert.equal(v2.version, 2);
      assertError(await c.call('POST', `/v1/pdf-templates/${tpl.id}/publish`, c.admin), 409, 'already_published');
      const versions = (await c.call('GET', `/v1/pdf-templates/${tpl.id}/versions`, c.admin)).json();
      assert.deepEqual(
        versions.data.map((v: any) => [v.version, v.template.name]),
        [
          [2, 'Summary v2'],
          [1, 'Summary v1'],
        ],
      );
      const back = dataOf(await c.call('POST', `/v1/pdf-templates/${tpl.id}/rollback`, c.admin, { version: 1 }));
      assert.equal(back.name, 'Summary v1');
      assert.equal(back.published, false);
      assert.equal(dataOf(await c.call('GET', `/v1/pdf-templates/${tpl.id}/versions/1`, c.support)).template.kind, 'visit_summary');
      assertError(
        await c.call('POST', '/v1/pdf-templates', c.support, { name: 'x', kind: 'report', layout: { blocks: [{ type: 'divider' }] } }),
        403,
        'forbidden',
      );
    });

    it('refuse placeholders and blocks the data model of their kind lacks, on create, edit and publish', async () => {
      const bad = assertError(
        await c.call('POST', '/v1/pdf-templates', c.admin, {
          name: 'Bad',
          kind: 'prescription',
          layout: { footer: '{{patient.nam}}', blocks: [{ type: 'text', text: 'Signed {{signature.signed_at}}' }, { type: 'answers' }] },
        }),
        400,
        'validation_error',
      );
      assert.match(bad.fields['layout.footer'], /patient\.nam/);
      assert.match(bad.fields['layout.blocks[0].text'], /signature\.signed_at/);
      assert.ok(bad.fields['layout.blocks[1].type']);
      assertError(
        await c.call('PATCH', `/v1/pdf-templates/${pdfPrescription.id}`, c.admin, {
          layout: { blocks: [{ type: 'heading', text: '{{form.title}}' }] },
        }),
        400,
        'validation_error',
      );
      // Changing the kind re-checks the layout it keeps.
      assertError(await c.call('PATCH', `/v1/pdf-templates/${pdfFormTemplate.id}`, c.admin, { kind: 'report' }), 400, 'validation_error');
      const list = (await c.call('GET', '/v1/pdf-templates/placeholders', c.specialists[0]!.token)).json().data;
      assert.ok(list.some((p: any) => p.path === 'signature.sha256' && p.kinds.join() === 'form'));
    });
  });

  describe('forms rendered', () => {
    it('print the answers, who signed, when, and the snapshot SHA-256; the same content gives the same document', async () => {
      const formId = await newForm({ pain: 4, story: `Durere la umăr ș ț ă ł ź ß ř\n${MARKUP}`, assessment: 'private note' });
      dataOf(await t.call('POST', `/v1/forms/${formId}/sign`, { token: c.patient.token, org: c.org.id }));
      const before = (await docs(c.org.id)).rows[0]!.n;
      const res = await c.call('POST', `/v1/forms/${formId}/render`, c.specialists[0]!.token, { pdf_template_id: pdfFormTemplate.id });
      const doc = dataOf(res, 201);
      assert.equal(doc.status, 'ready');
      assert.equal(doc.kind, 'form');
      assert.equal(doc.template_version, 1);
      // The same form version and template version: the same document, whoever asks.
      const again = dataOf(await c.call('POST', `/v1/forms/${formId}/render`, c.admin, { pdf_template_id: pdfFormTemplate.id }), 200);
      assert.equal(again.id, doc.id);
      assert.equal((await docs(c.org.id)).rows[0]!.n, before + 1);
      // The digest printed is that of the form's snapshot as the API shows it.
      const { row, fields } = await t.db.withScope({ role: 'app_bypass', principalId: null, orgId: c.org.id, permissions: [] }, (tx) =>
        loadForm(tx, c.org.id, formId),
      );
      assert.equal(
        doc.source_sha256,
        createHash('sha256')
          .update(canonical(formSnapshot(row, fields)))
          .digest('hex'),
      );
      const link = dataOf(await c.call('GET', `/v1/documents/${doc.id}/download`, c.specialists[0]!.token));
      assert.doesNotMatch(link.url, /\?/, 'no query string: the signature is in the path');
      const pdf = await fetchPdf(link.url);
      assert.equal(createHash('sha256').update(pdf).digest('hex'), doc.sha256);
      const text = pdfText(pdf).replace(/\s+/g, ' ');
      for (const s of [
        'Fișă de intake',
        'Intake',
        'Întrebare',
        'Durere (0-10) ș ț ă',
        'Istoric ł ź ß ř',
        'ș ț ă ł ź ß ř',
        'Signed',
        doc.source_sha256,
      ]) {
        assert.ok(text.includes(s), `${s} missing`);
      }
      for (const piece of MARKUP.split(' ')) assert.ok(text.includes(piece), `${piece} missing (patient text must print as typed)`);
      assert.ok(text.includes('Signed by'));
      assert.ok(text.includes('Signed at'));
      assert.match(text, /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
      assert.ok(!text.includes('private note') && !text.includes('Clinician only'), 'private fields are not printed');
      for (const f of pdfFonts(pdf)) assert.ok(f.embedded, f.name);
      pdfPicture(pdf, 'kind-form');
    });

    it('an unsigned form changed after a render gets a new document; its document says it is not signed', async () => {
      const formId = await newForm({ pain: 2 });
      const d1 = dataOf(
        await c.call('POST', `/v1/forms/${formId}/render`, c.specialists[0]!.token, { pdf_template_id: pdfFormTemplate.id }),
        201,
      );
      dataOf(await c.call('PATCH', `/v1/forms/${formId}`, c.specialists[0]!.token, { values: { pain: 3 } }));
      const d2 = dataOf(
        await c.call('POST', `/v1/forms/${formId}/render`, c.specialists[0]!.token, { pdf_template_id: pdfFormTemplate.id }),
        201,
      );
      assert.notEqual(d1.id, d2.id);
      const pdf = await fetchPdf(dataOf(await c.call('GET', `/v1/documents/${d2.id}/download`, c.admin)).url);
      assert.match(pdfText(pdf), /Not signed/);
      const listed = (await c.call('GET', `/v1/forms/${formId}/documents`, c.specialists[0]!.token)).json().data;
      assert.deepEqual(listed.map((d: any) => d.id).sort(), [d1.id, d2.id].sort());
    });

    it('bad input is a clear 4xx and stores nothing: another organization, an unpublished or wrong-kind template', async () => {
      const formId = await newForm({ pain: 1 });
      const n = (await docs(c.org.id)).rows[0]!.n;
      const other = await t.createOrg();
      const otherAdmin = (await t.addMember(other.id, uniqueEmail('other-admin'), 'admin')).token;
      const otherTpl = dataOf(
        await t.call('POST', '/v1/pdf-templates', {
          token: otherAdmin,
          org: other.id,
          body: { name: 'X', kind: 'form', layout: formLayout },
        }),
        201,
      );
      // The form of another organization: not found from there.
      assertError(
        await t.call('POST', `/v1/forms/${formId}/render`, { token: otherAdmin, org: other.id, body: { pdf_template_id: otherTpl.id } }),
        404,
        'not_found',
      );
      // Another organization's template: an id the body may not name here.
      const foreignTpl = assertError(
        await c.call('POST', `/v1/forms/${formId}/render`, c.admin, { pdf_template_id: otherTpl.id }),
        400,
        'validation_error',
      );
      assert.ok(foreignTpl.fields.pdf_template_id);
      const draft = dataOf(
        await c.call('POST', '/v1/pdf-templates', c.admin, { name: 'Draft', kind: 'form', layout: formLayout, draft: true }),
        201,
      );
      assert.equal(draft.version, 0);
      assertError(
        await c.call('POST', `/v1/forms/${formId}/render`, c.admin, { pdf_template_id: draft.id }),
        409,
        'template_not_published',
      );
      assertError(
        await c.call('POST', `/v1/forms/${formId}/render`, c.admin, { pdf_template_id: pdfPrescription.id }),
        400,
        'validation_error',
      );
      assertError(await c.call('POST', `/v1/forms/${formId}/render`, c.support, { pdf_template_id: pdfFormTemplate.id }), 403, 'forbidden');
      assert.equal((await docs(c.org.id)).rows[0]!.n, n);
      assert.equal((await docs(other.id)).rows[0]!.n, 0);
      // The draft, once published, renders (version 1).
      dataOf(await c.call('POST', `/v1/pdf-templates/${draft.id}/publish`, c.admin));
      assert.equal(
        dataOf(await c.call('POST', `/v1/forms/${formId}/render`, c.admin, { pdf_template_id: draft.id }), 201).template_version,
        1,
      );
    });
  });

  describe('appointment documents', () => {
    it('are made by staff, published to the patient, downloaded by it alone through a signed, expiring path', async () => {
      const a = await c.book();
      const spec = c.specialists[0]!.token;
      const body = {
        pdf_template_id: pdfPrescription.id,
        body: 'Repaus 3 zile. Żółć, Straße, příliš.',
        items: [
          { drug: 'Ibuprofen 400 mg ș ț', dose: '1 × 3/zi' },
          { drug: MARKUP, dose: '—' },
        ],
      };
      const doc = dataOf(await c.call('POST', `/v1/appointments/${a.id}/documents`, spec, body), 201);
      assert.equal(doc.status, 'ready');
      assert.equal(doc.kind, 'prescription');
      assert.equal(dataOf(await c.call('POST', `/v1/appointments/${a.id}/documents`, spec, body), 200).id, doc.id);
      // Not the patient's to see until published.
      const asPatient = (m: string, u: string) => t.call(m, u, { token: c.patient.token, org: c.org.id });
      assertError(await asPatient('GET', `/v1/appointment-documents/${doc.id}/download`), 404, 'not_found');
      assertError(await asPatient('GET', `/v1/documents/${doc.id}`), 404, 'not_found');
      assert.deepEqual((await asPatient('GET', `/v1/appointments/${a.id}/documents`)).json().data, []);
      assertError(await asPatient('POST', `/v1/documents/${doc.id}/publish`), 403, 'forbidden');
      const published = dataOf(await c.call('POST', `/v1/documents/${doc.id}/publish`, spec));
      assert.ok(published.published_at);
      const link = dataOf(await asPatient('GET', `/v1/appointment-documents/${doc.id}/download`));
      assert.ok(new Date(link.expires_at).getTime() > Date.now());
      const pdf = await fetchPdf(link.url);
      const text = pdfText(pdf).replace(/\s+/g, ' ');
      for (const s of [
        'Prescription',
        'Medication',
        'Ibuprofen 400 mg ș ț',
        'Repaus 3 zile. Żółć, Straße, příliš.',
        'Dr Spec 1',
        'Physio session',
        'Europe/Bucharest',
      ]) {
        assert.ok(text.includes(s), `${s} missing`);
      }
      pdfPicture(pdf, 'kind-prescription');
      // Another patient of the clinic sees nothing.
      assertError(
        await t.call('GET', `/v1/appointment-documents/${doc.id}/download`, { token: c.otherPatient.token, org: c.org.id }),
        404,
        'not_found',
      );
      // The path is the credential: tampered, moved to another document or expired, it is refused.
      const u = new URL(link.url);
      const parts = u.pathname.split('/');
      const tampered = [...parts];
      tampered[6] = `${tampered[6]!.slice(0, -2)}AA`;
      assert.equal((await t.app.inject({ method: 'GET', url: tampered.join('/') })).statusCode, 403);
      const moved = [...parts];
      moved[4] = a.id;
      assert.equal((await t.app.inject({ method: 'GET', url: moved.join('/') })).statusCode, 403);
      const keys = t.rt.secrets.derive('document-download-url');
      const expired = signDocumentPath(keys, doc.id, Math.floor(Date.now() / 1000) - 1, 'x.pdf');
      assert.equal((await t.app.inject({ method: 'GET', url: expired })).statusCode, 403);
      // The access log keeps no signature.
      assert.doesNotMatch(redactUrl(u.pathname), new RegExp(parts[6]!));
      // The download was recorded in the patient's access log (a staff read; the patient's own is not).
      dataOf(await c.call('GET', `/v1/appointment-documents/${doc.id}/download`, spec));
      const logged = await t.db.query(`select 1 from patient_access_log where action = 'document.downloaded' and target_id = $1`, [doc.id]);
      assert.ok(logged.rows.length >= 1);
    });

    it('refuse items the template has no column for, a form template, and documents nobody may create', async () => {
      const a = await c.book();
      const spec = c.specialists[0]!.token;
      const n = (await docs(c.org.id)).rows[0]!.n;
      const bad = assertError(
        await c.call('POST', `/v1/appointments/${a.id}/documents`, spec, { pdf_template_id: pdfPrescription.id, items: [{ price: '1' }] }),
        400,
        'validation_error',
      );
      assert.match(bad.fields['items[0]'], /price/);
      assertError(
        await c.call('POST', `/v1/appointments/${a.id}/documents`, spec, { pdf_template_id: pdfFormTemplate.id }),
        400,
        'validation_error',
      );
      assertError(
        await c.call('POST', `/v1/appointments/${a.id}/documents`, c.support, { pdf_template_id: pdfPrescription.id }),
        403,
        'forbidden',
      );
      // The other specialist does not see this appointment (appointments.view_own).
      assertError(
        await c.call('POST', `/v1/appointments/${a.id}/documents`, c.specialists[1]!.token, { pdf_template_id: pdfPrescription.id }),
        404,
        'not_found',
      );
      assert.equal((await docs(c.org.id)).rows[0]!.n, n);
    });
  });

  describe('long documents', () => {
    it('render on the worker with visible progress; short ones inline', async () => {
      const w = await startTestApp({ env: { DOCUMENT_INLINE_MAX_ROWS: '1' } });
      try {
        const k = await setUpClinic(w, 'long');
        const f = dataOf(
          await k.call('POST', '/v1/custom-fields', k.admin, { entity_type: 'form', key: 'a', label: 'A', field_type: 'text' }),
          201,
        );
        const g = dataOf(
          await k.call('POST', '/v1/custom-fields', k.admin, { entity_type: 'form', key: 'b', label: 'B', field_type: 'text' }),
          201,
        );
        const ft = dataOf(
          await k.call('POST', '/v1/form-templates', k.admin, {
            name: 'Long',
            fields: [{ custom_field_id: f.id }, { custom_field_id: g.id }],
          }),
          201,
        );
        const pt = dataOf(await k.call('POST', '/v1/pdf-templates', k.admin, { name: 'Long', kind: 'form', layout: formLayout }), 201);
        const form = dataOf(
          await k.call('POST', '/v1/forms', k.admin, { form_template_id: ft.id, patient_id: k.patient.id, values: { a: 'x', b: 'y' } }),
          201,
        );
        const queued = dataOf(await k.call('POST', `/v1/forms/${form.id}/render`, k.admin, { pdf_template_id: pt.id }), 201);
        assert.equal(queued.status, 'queued');
        assert.equal(queued.progress, 0);
        assertError(await k.call('GET', `/v1/documents/${queued.id}/download`, k.admin), 409, 'document_not_ready');
        const events = await w.db.query(`select data from domain_events where type = 'document.render_requested' and data->>'id' = $1`, [
          queued.id,
        ]);
        assert.equal(events.rows.length, 1);
        const engine = createPdfEngine({ maxPages: 50, timeoutMs: 60_000 });
        try {
          const done = await renderQueued({ db: w.db, assets: w.rt.assets, logger: w.rt.logger, engine }, k.org.id, queued.id);
          assert.equal(done.status, 'ready');
          // At least once: a second delivery of the event leaves the ready document as it is.
          const again = await renderQueued({ db: w.db, assets: w.rt.assets, logger: w.rt.logger, engine }, k.org.id, queued.id);
          assert.equal(again.asset_key, done.asset_key);
        } finally {
          await engine.close();
        }
        const ready = dataOf(await k.call('GET', `/v1/documents/${queued.id}`, k.admin));
        assert.equal(ready.status, 'ready');
        assert.equal(ready.progress, 100);
        pdfPicture(await fetchFrom(w, dataOf(await k.call('GET', `/v1/documents/${queued.id}/download`, k.admin)).url), 'kind-form-worker');
      } finally {
        await w.close();
      }
    });
  });

  describe('the worker', () => {
    it('renders a queued document from its event (pg-boss on this database), as the worker process does', async () => {
      const w = await startTestApp({ env: { DOCUMENT_INLINE_MAX_ROWS: '0', WORKER_DISPATCH_INTERVAL_MS: '20' } });
      const worker = await startWorker(w.rt);
      try {
        const k = await setUpClinic(w, 'worker');
        const f = dataOf(
          await k.call('POST', '/v1/custom-fields', k.admin, { entity_type: 'form', key: 'a', label: 'A', field_type: 'text' }),
          201,
        );
        const ft = dataOf(await k.call('POST', '/v1/form-templates', k.admin, { name: 'W', fields: [{ custom_field_id: f.id }] }), 201);
        const pt = dataOf(await k.call('POST', '/v1/pdf-templates', k.admin, { name: 'W', kind: 'form', layout: formLayout }), 201);
        const form = dataOf(
          await k.call('POST', '/v1/forms', k.admin, { form_template_id: ft.id, patient_id: k.patient.id, values: { a: 'x' } }),
          201,
        );
        const queued = dataOf(await k.call('POST', `/v1/forms/${form.id}/render`, k.admin, { pdf_template_id: pt.id }), 201);
        assert.equal(queued.status, 'queued');
        let d = queued;
        for (let i = 0; i < 1000 && d.status !== 'ready' && d.status !== 'failed'; i++) {
          await new Promise((r) => setTimeout(r, 20));
          d = dataOf(await k.call('GET', `/v1/documents/${queued.id}`, k.admin));
        }
        assert.equal(d.status, 'ready', JSON.stringify(d));
        assert.equal(d.progress, 100);
        assert.ok(d.page_count >= 1);
      } finally {
        await worker.close();
        await w.close();
      }
    });
  });

  describe('GDPR', () => {
    async function waitExport(token: string, org: string | undefined, body: unknown) {
      const queued = dataOf(await t.call('POST', '/v1/gdpr/export', { token, body, ...(org ? { org } : {}) }), 202);
      for (let i = 0; i < 300; i++) {
        const job = dataOf(await t.call('GET', `/v1/gdpr/exports/${queued.id}`, { token, ...(org ? { org } : {}) }));
        if (job.status === 'done') return JSON.parse((await t.call('GET', job.download_url, { token, ...(org ? { org } : {}) })).body);
        assert.notEqual(job.status, 'failed', JSON.stringify(job));
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('export did not finish');
    }

    it('exports the documents (the person: those published to it) and erasure keeps those of signed forms and published ones', async () => {
      const person = c.otherPatient;
      const spec = c.specialists[0]!.token;
      const form = async () =>
        dataOf(
          await c.call('POST', '/v1/forms', spec, { form_template_id: formTemplateId, patient_id: person.id, values: { pain: 5 } }),
          201,
        ).id;
      const signedForm = await form();
      dataOf(await t.call('POST', `/v1/forms/${signedForm}/sign`, { token: person.token, org: c.org.id }));
      const render = async (id: string) =>
        dataOf(await c.call('POST', `/v1/forms/${id}/render`, spec, { pdf_template_id: pdfFormTemplate.id }), 201);
      const signedDoc = await render(signedForm);
      const unsignedDoc = await render(await form());
      const a = await c.book({ patient: person });
      const make = async (text: string) =>
        dataOf(await c.call('POST', `/v1/appointments/${a.id}/documents`, spec, { pdf_template_id: pdfPrescription.id, body: text }), 201);
      const issued = await make('issued');
      dataOf(await c.call('POST', `/v1/documents/${issued.id}/publish`, spec));
      const draft = await make('draft');
      const keyOf = async (id: string) =>
        (await t.db.query<{ asset_key: string }>('select asset_key from documents where id = $1', [id])).rows[0]!.asset_key;
      const draftKey = await keyOf(draft.id);
      const unsignedKey = await keyOf(unsignedDoc.id);

      const clinic = await waitExport(c.admin, c.org.id, { patient_id: person.id });
      assert.deepEqual(clinic.documents.map((d: any) => d.id).sort(), [signedDoc.id, unsignedDoc.id, issued.id, draft.id].sort());
      const own = await waitExport(person.token, undefined, {});
      assert.deepEqual(
        own.documents.map((d: any) => d.id),
        [issued.id],
      );

      dataOf(await c.call('POST', '/v1/gdpr/erase', c.admin, { patient_id: person.id }));
      const left = await t.db.query<{ id: string }>('select id from documents where patient_id = $1', [person.id]);
      assert.deepEqual(left.rows.map((r) => r.id).sort(), [signedDoc.id, issued.id].sort());
      assert.equal(await t.rt.assets.get(draftKey), null, 'the erased document object is deleted after commit');
      assert.equal(await t.rt.assets.get(unsignedKey), null);
      assert.ok(await t.rt.assets.head(await keyOf(signedDoc.id)), 'a retained document keeps its PDF');
      const entry = await t.db.query<{ data: any }>(
        `select data from audit_logs where action = 'gdpr.erased' and organization_id = $1 order by created_at desc limit 1`,
        [c.org.id],
      );
      assert.equal(entry.rows[0]!.data.documents_removed, 2);
      assert.deepEqual(entry.rows[0]!.data.documents_retained.sort(), [signedDoc.id, issued.id].sort());
    });
  });

  describe('letterhead', () => {
    const png = (w: number, h: number) => {
      const b = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
      b.writeUInt32BE(w, 16);
      b.writeUInt32BE(h, 20);
      return b;
    };
    const upload = (bytes: Buffer, type = 'image/png') => {
      const boundary = 'lh0123456789';
      const payload = Buffer.concat([
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="logo.png"\r\nContent-Type: ${type}\r\n\r\n`),
        bytes,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      return t.app.inject({
        method: 'PUT',
        url: '/v1/document-letterhead/logo',
        payload,
        headers: {
          authorization: `Bearer ${c.admin}`,
          'x-organization-id': c.org.id,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
      });
    };
    const logoObjects = async () => (await t.rt.assets.list(`orgs/${c.org.id}/letterhead/`)).length;

    it('takes name, address and registration numbers; an oversized logo is refused and nothing is stored', async () => {
      const lh = dataOf(
        await c.call('PUT', '/v1/document-letterhead', c.admin, {
          name: 'Clinica Sfânta Ană',
          address_lines: ['Strada Țăranului 12', 'București'],
          registration_numbers: ['CUI RO1234567', 'J40/123/2020'],
        }),
      );
      assert.equal(lh.logo, null);
      assertError(await upload(Buffer.concat([png(10, 10), Buffer.alloc(5000)])), 413, 'file_too_large');
      assertError(await upload(png(5000, 10)), 413, 'image_too_large');
      assertError(await upload(Buffer.from('GIF89a'), 'image/gif'), 415, 'unsupported_media_type');
      assert.equal(await logoObjects(), 0);
      assert.equal(dataOf(await c.call('GET', '/v1/document-letterhead', c.admin)).logo, null);
      const withLogo = dataOf(await upload(png(1, 1)));
      assert.equal(withLogo.logo.content_type, 'image/png');
      assert.equal(await logoObjects(), 1);
      // A new logo replaces the old object.
      dataOf(await upload(png(1, 1)));
      assert.equal(await logoObjects(), 1);
      const a = await c.book();
      const summary = dataOf(
        await c.call('POST', '/v1/pdf-templates', c.admin, {
          name: 'Visit summary',
          kind: 'visit_summary',
          layout: {
            blocks: [
              { type: 'heading', text: '{{document.title}}' },
              { type: 'text', text: '{{document.body}}' },
            ],
          },
        }),
        201,
      );
      const doc = dataOf(
        await c.call('POST', `/v1/appointments/${a.id}/documents`, c.admin, {
          pdf_template_id: summary.id,
          body: 'Control peste două săptămâni.',
        }),
        201,
      );
      const pdf = await fetchPdf(dataOf(await c.call('GET', `/v1/documents/${doc.id}/download`, c.admin)).url);
      const text = pdfText(pdf);
      for (const s of ['Clinica Sfânta Ană', 'Strada Țăranului 12', 'CUI RO1234567']) assert.ok(text.includes(s), s);
      assert.match(pdf.toString('latin1'), /\/Subtype\s*\/Image/);
      pdfPicture(pdf, 'kind-visit-summary');
      // One picture of each remaining kind, for a reviewer (test-artifacts/documents/).
      for (const kind of ['report', 'receipt'] as const) {
        const layout =
          kind === 'receipt'
            ? {
                blocks: [
                  { type: 'heading', text: 'Chitanță {{document.id}}' },
                  {
                    type: 'fields',
                    rows: [
                      { label: 'Pacient', value: '{{patient.full_name}}' },
                      { label: 'Serviciu', value: '{{appointment.service}}' },
                    ],
                  },
                  {
                    type: 'items',
                    columns: [
                      { key: 'what', label: 'Descriere', width: 3 },
                      { key: 'amount', label: 'Sumă' },
                    ],
                  },
                  { type: 'text', text: '{{document.body}}', align: 'right', bold: true },
                ],
              }
            : {
                blocks: [
                  { type: 'heading', text: 'Raport medical' },
                  { type: 'text', text: '{{document.body}}' },
                  { type: 'divider' },
                  { type: 'text', text: '{{specialist.display_name}}, {{document.date}}', size: 'small', align: 'right' },
                ],
              };
        const tpl = dataOf(await c.call('POST', '/v1/pdf-templates', c.admin, { name: kind, kind, layout }), 201);
        const made = dataOf(
          await c.call('POST', `/v1/appointments/${a.id}/documents`, c.admin, {
            pdf_template_id: tpl.id,
            body: kind === 'receipt' ? 'Total: 150,00 RON' : 'Evoluție favorabilă. Mobilitate completă; fără durere la efort.',
            ...(kind === 'receipt' ? { items: [{ what: 'Ședință de fizioterapie', amount: '150,00 RON' }] } : {}),
          }),
          201,
        );
        const bytes = await fetchPdf(dataOf(await c.call('GET', `/v1/documents/${made.id}/download`, c.admin)).url);
        assert.match(pdfText(bytes), kind === 'receipt' ? /Ședință de fizioterapie/ : /Evoluție favorabilă/);
        pdfPicture(bytes, `kind-${kind}`);
      }
    });

    it('decodes a logo at upload: damaged, truncated or oversized images are refused; a damaged stored logo never fails a render', async () => {
      const w = 40;
      const h = 30;
      const pixels = Buffer.alloc(w * h * 4, 0x80);
      const good = PNG.sync.write(Object.assign(new PNG({ width: w, height: h }), { data: pixels }));
      const jpg = jpeg.encode({ width: w, height: h, data: pixels }, 80).data;
      const flipped = Buffer.from(good);
      flipped[good.length - 20] = flipped[good.length - 20]! ^ 0xff; // inside the image data: its CRC no longer matches
      dataOf(await upload(png(1, 1)));
      const before = await t.rt.assets.list(`orgs/${c.org.id}/letterhead/`);
      for (const bad of [good.subarray(0, good.length - 20), good.subarray(0, 30), flipped, jpg.subarray(0, jpg.length - 40)]) {
        const err = assertError(await upload(bad), 400, 'validation_error');
        assert.ok(err.fields.file, JSON.stringify(err));
      }
      // A header within the side bound that still declares 9 million pixels is refused before decoding.
      assertError(await upload(png(3000, 3000)), 413, 'image_too_large');
      assertError(await upload(Buffer.from('not an image at all')), 415, 'unsupported_media_type');
      assert.deepEqual(await t.rt.assets.list(`orgs/${c.org.id}/letterhead/`), before, 'nothing stored, the old logo kept');
      // The type is the content's: a JPEG sent as image/png is a JPEG.
      assert.equal(dataOf(await upload(jpg, 'image/png')).logo.content_type, 'image/jpeg');
      const lh = dataOf(await upload(good));
      assert.equal(lh.logo.content_type, 'image/png');

      // A logo stored before uploads were decoded: planted damaged in the asset store, it is left out of the
      // documents, which are made all the same.
      const [key] = await t.rt.assets.list(`orgs/${c.org.id}/letterhead/`);
      await t.rt.assets.put(key!, good.subarray(0, good.length - 20), { contentType: 'image/png' });
      const a = await c.book();
      const tpl = dataOf(
        await c.call('POST', '/v1/pdf-templates', c.admin, {
          name: 'With logo',
          kind: 'report',
          layout: { blocks: [{ type: 'text', text: '{{document.body}}' }] },
        }),
        201,
      );
      const warnings: unknown[][] = [];
      const logger = t.rt.logger as unknown as { warn: (...a: unknown[]) => void };
      const warn = logger.warn;
      logger.warn = (...a: unknown[]) => {
        warnings.push(a);
      };
      let doc: any;
      try {
        doc = dataOf(
          await c.call('POST', `/v1/appointments/${a.id}/documents`, c.admin, { pdf_template_id: tpl.id, body: 'Made without the logo.' }),
          201,
        );
      } finally {
        logger.warn = warn;
      }
      assert.equal(doc.status, 'ready', JSON.stringify(doc));
      assert.ok(
        warnings.some((w) => String(w[1]).includes('letterhead logo unreadable') && JSON.stringify(w[0]).includes(key!)),
        `the failure is logged: ${JSON.stringify(warnings)}`,
      );
      const pdf = await fetchPdf(dataOf(await c.call('GET', `/v1/documents/${doc.id}/download`, c.admin)).url);
      assert.match(pdfText(pdf), /Made without the logo\./);
      assert.doesNotMatch(pdf.toString('latin1'), /\/Subtype\s*\/Image/);
      dataOf(await upload(png(1, 1)));
    });

    it('a logo object that no letterhead names is swept once past the grace period; the named one stays', async () => {
      dataOf(await upload(png(1, 1)));
      const named = (await t.rt.assets.list(`orgs/${c.org.id}/letterhead/`))[0]!;
      // A second upload whose row change is lost leaves its object behind: drop the row's reference instead.
      await t.db.query(
        'update document_letterheads set logo_asset_key = null, logo_content_type = null, logo_sha256 = null where organization_id = $1',
        [c.org.id],
      );
      const deps = { db: t.db, assets: t.rt.assets, logger: t.rt.logger };
      assert.deepEqual(await sweepOrphanDocumentFiles(deps), [], 'nothing within the grace period');
      assert.deepEqual(await sweepOrphanDocumentFiles(deps, Date.now() + 2 * 3600_000), [named]);
      assert.deepEqual(await t.rt.assets.list(`orgs/${c.org.id}/letterhead/`), []);
    });
  });
});

async function fetchFrom(w: TestApp, url: string): Promise<Buffer> {
  const u = new URL(url);
  const res = await w.app.inject({ method: 'GET', url: u.pathname });
  assert.equal(res.statusCode, 200, res.body);
  return res.rawPayload;
}
