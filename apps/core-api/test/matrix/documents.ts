import { randomBytes } from 'node:crypto';
import { freshTemplate } from './custom-fields.ts';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * PDF templates, the letterhead and documents. Every request names the organization in
 * X-Organization-ID. Default grants of migration 0100: admin holds every pdf_templates.* and documents.*
 * code; specialist pdf_templates.view_published and .render, documents.view_org, .create and .publish;
 * customer_support pdf_templates.view_published only. Patients hold no code: they read their own
 * documents once published (ownership, documents.view_own_published), and nothing of templates.
 * - Documents read here are the patient caller's, published, so the patient gets 200.
 * - The appointment belongs to a specialist made here, not the specialist caller, whose
 *   appointments.view_own hides it: 404 when it makes a document for it.
 * - putDocumentLetterheadLogo: the harness sends JSON, so a caller past the gate gets 400 (not
 *   multipart); documents.test.ts uploads real logos.
 */

const hex = () => randomBytes(5).toString('hex');
const as = (f: Fixture, p: Prepared = {}): Prepared => ({ ...p, headers: { 'x-organization-id': f.orgId, ...p.headers } });
const row = (r: Partial<Row>): Row => ({
  admin: 403,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: 403,
  anonymous: 401,
  ...r,
});
const ok = async (res: { statusCode: number; body: string; json: () => any }) => {
  if (res.statusCode >= 300) throw new Error(`documents fixture failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
};
const su = (f: Fixture, method: string, url: string, body?: unknown) =>
  f.t.call(method, url, { token: f.tokens.superadmin, org: f.orgId, ...(body !== undefined ? { body } : {}) });

const FORM_LAYOUT = { blocks: [{ type: 'heading', text: '{{form.title}}' }, { type: 'answers' }, { type: 'signature' }] };
const NOTE_LAYOUT = {
  blocks: [
    { type: 'heading', text: '{{document.title}}' },
    { type: 'text', text: '{{document.body}}' },
  ],
};

const freshPdfTemplate = async (f: Fixture, kind = 'form') =>
  (
    await ok(
      await su(f, 'POST', '/v1/pdf-templates', { name: `Matrix ${hex()}`, kind, layout: kind === 'form' ? FORM_LAYOUT : NOTE_LAYOUT }),
    )
  ).id as string;

interface Setting {
  formTemplateId: string;
  pdfForm: string;
  pdfNote: string;
  appointmentId: string;
  formDoc: string;
  appointmentDoc: string;
}

const freshForm = async (f: Fixture, s: Pick<Setting, 'formTemplateId'>) =>
  (await ok(await su(f, 'POST', '/v1/forms', { form_template_id: s.formTemplateId, patient_id: f.patientRecordId }))).id as string;

async function makeSetting(f: Fixture): Promise<Setting> {
  const member = await f.setup('POST', `/v1/organizations/${f.orgId}/members`, {
    email: `docs-spec-${hex()}@example.test`,
    role_code: 'specialist',
  });
  const location = await f.setup('POST', `/v1/organizations/${f.orgId}/locations`, { name: `Docs ${hex()}`, timezone: 'UTC' });
  const specialist = await ok(
    await su(f, 'POST', '/v1/specialists', {
      user_id: member.user_id,
      display_name: `Dr Docs ${hex()}`,
      bookable_online: true,
      location_ids: [location.id],
    }),
  );
  await ok(
    await su(f, 'PUT', `/v1/specialists/${specialist.id}/availability`, {
      rules: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ location_id: location.id, weekday, start: '06:00', end: '22:00' })),
    }),
  );
  const service = await ok(
    await su(f, 'POST', '/v1/services', {
      name: `Docs ${hex()}`,
      duration_minutes: 30,
      price_minor: 1000,
      currency: 'EUR',
      mode: 'in_person',
      is_public: true,
      slot_interval_minutes: 30,
      location_ids: [location.id],
      specialist_ids: [specialist.id],
    }),
  );
  const day = 86_400_000;
  const from = new Date(Date.now() + 2 * day).toISOString().slice(0, 10);
  const to = new Date(Date.now() + 12 * day).toISOString().slice(0, 10);
  const free = await ok(
    await f.t.call('GET', `/v1/public/availability?organization=${f.orgId}&service_id=${service.id}&from=${from}&to=${to}&time_zone=UTC`),
  );
  const appointment = await ok(
    await su(f, 'POST', '/v1/appointments', {
      service_id: service.id,
      specialist_id: specialist.id,
      start: (free.slots as { start: string }[])[0]!.start,
      patient_id: f.patientRecordId,
    }),
  );
  const formTemplateId = await freshTemplate(f);
  const pdfForm = await freshPdfTemplate(f);
  const pdfNote = await freshPdfTemplate(f, 'visit_summary');
  const formDoc = (
    await ok(await su(f, 'POST', `/v1/forms/${await freshForm(f, { formTemplateId })}/render`, { pdf_template_id: pdfForm }))
  ).id;
  const appointmentDoc = (
    await ok(await su(f, 'POST', `/v1/appointments/${appointment.id}/documents`, { pdf_template_id: pdfNote, body: 'Matrix' }))
  ).id;
  for (const id of [formDoc, appointmentDoc]) await ok(await su(f, 'POST', `/v1/documents/${id}/publish`));
  return { formTemplateId, pdfForm, pdfNote, appointmentId: appointment.id, formDoc, appointmentDoc };
}

const settings = new WeakMap<Fixture, Promise<Setting>>();
const setting = (f: Fixture) => {
  let p = settings.get(f);
  if (!p) {
    p = makeSetting(f);
    settings.set(f, p);
  }
  return p;
};

const readers = { admin: 200, specialist: 200, customer_support: 200, superadmin: 200 };
const managers = { admin: 200, superadmin: 200 };
const documentReaders = { admin: 200, specialist: 200, patient: 200, superadmin: 200 };

export const entries: Fragment = {
  listPdfTemplatePlaceholders: {
    row: row(readers),
    request: { method: 'GET', path: '/v1/pdf-templates/placeholders', prepare: (f) => as(f) },
  },
  createPdfTemplate: {
    row: row({ admin: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/pdf-templates',
      prepare: (f) => as(f, { body: { name: `Matrix ${hex()}`, kind: 'report', layout: NOTE_LAYOUT } }),
    },
  },
  listPdfTemplates: { row: row(readers), request: { method: 'GET', path: '/v1/pdf-templates', prepare: (f) => as(f) } },
  getPdfTemplate: {
    row: row(readers),
    request: { method: 'GET', path: '/v1/pdf-templates/{id}', prepare: async (f) => as(f, { params: { id: (await setting(f)).pdfForm } }) },
  },
  updatePdfTemplate: {
    row: row(managers),
    request: {
      method: 'PATCH',
      path: '/v1/pdf-templates/{id}',
      prepare: async (f) => as(f, { params: { id: await freshPdfTemplate(f) }, body: { name: `Renamed ${hex()}` } }),
    },
  },
  deletePdfTemplate: {
    row: row({ admin: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/pdf-templates/{id}',
      prepare: async (f) => as(f, { params: { id: await freshPdfTemplate(f) } }),
    },
  },
  publishPdfTemplate: {
    row: row(managers),
    request: {
      method: 'POST',
      path: '/v1/pdf-templates/{id}/publish',
      prepare: async (f) => {
        const id = await freshPdfTemplate(f);
        await ok(await su(f, 'PATCH', `/v1/pdf-templates/${id}`, { name: `Draft ${hex()}` }));
        return as(f, { params: { id } });
      },
    },
  },
  rollbackPdfTemplate: {
    row: row(managers),
    request: {
      method: 'POST',
      path: '/v1/pdf-templates/{id}/rollback',
      prepare: async (f) => as(f, { params: { id: await freshPdfTemplate(f) }, body: { version: 1 } }),
    },
  },
  listPdfTemplateVersions: {
    row: row(readers),
    request: {
      method: 'GET',
      path: '/v1/pdf-templates/{id}/versions',
      prepare: async (f) => as(f, { params: { id: (await setting(f)).pdfForm } }),
    },
  },
  getPdfTemplateVersion: {
    row: row(readers),
    request: {
      method: 'GET',
      path: '/v1/pdf-templates/{id}/versions/{version}',
      prepare: async (f) => as(f, { params: { id: (await setting(f)).pdfForm, version: '1' } }),
    },
  },
  getDocumentLetterhead: { row: row(readers), request: { method: 'GET', path: '/v1/document-letterhead', prepare: (f) => as(f) } },
  putDocumentLetterhead: {
    row: row(managers),
    request: {
      method: 'PUT',
      path: '/v1/document-letterhead',
      prepare: (f) => as(f, { body: { name: `Clinic ${hex()}`, address_lines: ['Street 1'] } }),
    },
  },
  putDocumentLetterheadLogo: {
    row: row({ admin: 400, superadmin: 400 }),
    request: { method: 'PUT', path: '/v1/document-letterhead/logo', prepare: (f) => as(f, { body: {} }) },
  },
  renderForm: {
    row: row({ admin: 201, specialist: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/forms/{id}/render',
      prepare: async (f) => {
        const s = await setting(f);
        return as(f, { params: { id: await freshForm(f, s) }, body: { pdf_template_id: s.pdfForm } });
      },
    },
  },
  listFormDocuments: {
    row: row(documentReaders),
    request: {
      method: 'GET',
      path: '/v1/forms/{id}/documents',
      prepare: async (f) => {
        const s = await setting(f);
        const form = (await f.t.db.query<{ form_id: string }>('select form_id from documents where id = $1', [s.formDoc])).rows[0]!.form_id;
        return as(f, { params: { id: form } });
      },
    },
  },
  createAppointmentDocument: {
    row: row({ admin: 201, specialist: 404, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/appointments/{id}/documents',
      prepare: async (f) => {
        const s = await setting(f);
        return as(f, { params: { id: s.appointmentId }, body: { pdf_template_id: s.pdfNote, body: `Note ${hex()}` } });
      },
    },
  },
  listAppointmentDocuments: {
    row: row(documentReaders),
    request: {
      method: 'GET',
      path: '/v1/appointments/{id}/documents',
      prepare: async (f) => as(f, { params: { id: (await setting(f)).appointmentId } }),
    },
  },
  getDocument: {
    row: row(documentReaders),
    request: { method: 'GET', path: '/v1/documents/{id}', prepare: async (f) => as(f, { params: { id: (await setting(f)).formDoc } }) },
  },
  publishDocument: {
    row: row({ admin: 200, specialist: 200, superadmin: 200 }),
    request: {
      method: 'POST',
      path: '/v1/documents/{id}/publish',
      prepare: async (f) => as(f, { params: { id: (await setting(f)).appointmentDoc } }),
    },
  },
  getDocumentDownload: {
    row: row(documentReaders),
    request: {
      method: 'GET',
      path: '/v1/documents/{id}/download',
      prepare: async (f) => as(f, { params: { id: (await setting(f)).formDoc } }),
    },
  },
  getAppointmentDocumentDownload: {
    row: row(documentReaders),
    request: {
      method: 'GET',
      path: '/v1/appointment-documents/{id}/download',
      prepare: async (f) => as(f, { params: { id: (await setting(f)).appointmentDoc } }),
    },
  },
};
