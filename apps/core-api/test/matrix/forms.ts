import { randomBytes } from 'node:crypto';
import { freshTemplate } from './custom-fields.ts';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Forms (spec 2.10, 3.5, 5.8). Every request names the organization in X-Organization-ID.
 * Forms belong to the patient caller's record. Default grants (migration 0024): admin holds every
 * forms.* staff code; specialist forms.view_org, create, fill_org, sign; customer_support none.
 * The patient acts by ownership (spec 2.7, 5.8): it reads, fills, signs and attaches files to its own
 * form, but neither creates nor deletes forms (forms.create, forms.delete_unsigned are staff codes).
 * addFormFile: the harness sends JSON bodies only, so a caller who passes the gate gets 400 (no
 * multipart file); forms.test.ts uploads real files. Cells that change a form get a fresh one.
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

const templates = new WeakMap<Fixture, Promise<string>>();
const templateOf = (f: Fixture) => {
  let p = templates.get(f);
  if (!p) {
    p = freshTemplate(f);
    templates.set(f, p);
  }
  return p;
};
const freshForm = async (f: Fixture) =>
  (
    await f.t.call('POST', '/v1/forms', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { form_template_id: await templateOf(f), patient_id: f.patientRecordId },
    })
  ).json().data.id as string;

const PDF = Buffer.from('%PDF-1.4\n%matrix\n');
async function freshFile(f: Fixture): Promise<{ form: string; file: string }> {
  const form = await freshForm(f);
  const boundary = `matrix${hex()}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="m.pdf"\r\nContent-Type: application/pdf\r\n\r\n`),
    PDF,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await f.t.app.inject({
    method: 'POST',
    url: `/v1/forms/${form}/files`,
    payload,
    headers: {
      authorization: `Bearer ${f.tokens.superadmin}`,
      'x-organization-id': f.orgId,
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
  });
  if (res.statusCode !== 201) throw new Error(`fixture upload failed: ${res.statusCode} ${res.body}`);
  return { form, file: res.json().data.id };
}

const shared = new WeakMap<Fixture, Promise<{ form: string; file: string }>>();
const sharedFile = (f: Fixture) => {
  let p = shared.get(f);
  if (!p) {
    p = freshFile(f);
    shared.set(f, p);
  }
  return p;
};

const viewers = { admin: 200, specialist: 200, patient: 200, superadmin: 200 };

export const entries: Fragment = {
  createForm: {
    row: row({ admin: 201, specialist: 201, superadmin: 201 }),
    request: {
      method: 'POST',
      path: '/v1/forms',
      prepare: async (f) => as(f, { body: { form_template_id: await templateOf(f), patient_id: f.patientRecordId } }),
    },
  },
  listForms: { row: row(viewers), request: { method: 'GET', path: '/v1/forms', prepare: (f) => as(f) } },
  getForm: {
    row: row(viewers),
    request: { method: 'GET', path: '/v1/forms/{id}', prepare: async (f) => as(f, { params: { id: (await sharedFile(f)).form } }) },
  },
  fillForm: {
    row: row(viewers),
    request: {
      method: 'PATCH',
      path: '/v1/forms/{id}',
      prepare: async (f) => as(f, { params: { id: await freshForm(f) }, body: { values: {} } }),
    },
  },
  signForm: {
    row: row(viewers),
    request: { method: 'POST', path: '/v1/forms/{id}/sign', prepare: async (f) => as(f, { params: { id: await freshForm(f) } }) },
  },
  deleteForm: {
    row: row({ admin: 204, superadmin: 204 }),
    request: { method: 'DELETE', path: '/v1/forms/{id}', prepare: async (f) => as(f, { params: { id: await freshForm(f) } }) },
  },
  addFormFile: {
    row: row({ admin: 400, specialist: 400, patient: 400, superadmin: 400 }),
    request: {
      method: 'POST',
      path: '/v1/forms/{id}/files',
      prepare: async (f) => as(f, { params: { id: (await sharedFile(f)).form }, body: {} }),
    },
  },
  listFormFiles: {
    row: row(viewers),
    request: { method: 'GET', path: '/v1/forms/{id}/files', prepare: async (f) => as(f, { params: { id: (await sharedFile(f)).form } }) },
  },
  downloadFormFile: {
    row: row(viewers),
    request: {
      method: 'GET',
      path: '/v1/forms/{id}/files/{fileId}',
      prepare: async (f) => {
        const s = await sharedFile(f);
        return as(f, { params: { id: s.form, fileId: s.file } });
      },
    },
  },
  deleteFormFile: {
    row: row({ admin: 204, specialist: 204, patient: 204, superadmin: 204 }),
    request: {
      method: 'DELETE',
      path: '/v1/forms/{id}/files/{fileId}',
      prepare: async (f) => {
        const s = await freshFile(f);
        return as(f, { params: { id: s.form, fileId: s.file } });
      },
    },
  },
};
