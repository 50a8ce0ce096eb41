import { randomBytes } from 'node:crypto';
import type { Fixture, Fragment, Prepared, Row } from './types.ts';

/*
 * Custom fields and form templates (spec 2.10, 3.1, 4.8, 9.6). No organization in the path:
 * every request names the organization under test in X-Organization-ID (spec 4.1).
 * - Writes of custom fields need custom_fields.manage (migration 0020; granted to admin only, 0024).
 * - Reading field definitions is for any staff member (a membership row) and superadmins; patients
 *   see fields only inside their forms, so patient, non-member and other_org_admin get 403.
 * - Form templates: form_templates.view (admin, specialist, customer_support) reads;
 *   form_templates.manage (admin) writes.
 * Cells that change a shared resource get a fresh one (publish needs a draft, delete a live row).
 */

const hex = () => randomBytes(5).toString('hex');
const org = (f: Fixture) => ({ 'x-organization-id': f.orgId });
const as = (f: Fixture, p: Prepared = {}): Prepared => ({ ...p, headers: { ...org(f), ...p.headers } });

const freshField = async (f: Fixture, entity = 'form') =>
  (
    await f.t.call('POST', '/v1/custom-fields', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { entity_type: entity, key: `m_${hex()}`, label: 'Matrix', field_type: 'text' },
    })
  ).json().data.id as string;
const freshDraftField = async (f: Fixture) => {
  const id = await freshField(f);
  await f.t.call('PATCH', `/v1/custom-fields/${id}`, { token: f.tokens.superadmin, org: f.orgId, body: { label: 'Draft' } });
  return id;
};
export const freshTemplate = async (f: Fixture) =>
  (
    await f.t.call('POST', '/v1/form-templates', {
      token: f.tokens.superadmin,
      org: f.orgId,
      body: { name: `Matrix ${hex()}`, fields: [{ custom_field_id: await freshField(f) }] },
    })
  ).json().data.id as string;
const freshDraftTemplate = async (f: Fixture) => {
  const id = await freshTemplate(f);
  await f.t.call('PATCH', `/v1/form-templates/${id}`, { token: f.tokens.superadmin, org: f.orgId, body: { name: `Draft ${hex()}` } });
  return id;
};

// Cached per fixture: resources that no cell changes.
const shared = new WeakMap<Fixture, { field: string; template: string }>();
async function sharedOf(f: Fixture) {
  let s = shared.get(f);
  if (!s) {
    s = { field: await freshField(f), template: await freshTemplate(f) };
    shared.set(f, s);
  }
  return s;
}

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
const manageField = (s: number) => row({ admin: s, superadmin: s });
const staff = row({ admin: 200, specialist: 200, customer_support: 200, superadmin: 200 });

export const entries: Fragment = {
  createCustomField: {
    row: manageField(201),
    request: {
      method: 'POST',
      path: '/v1/custom-fields',
      prepare: (f) => as(f, { body: { entity_type: 'patient', key: `m_${hex()}`, label: 'Matrix', field_type: 'text' } }),
    },
  },
  listCustomFields: { row: staff, request: { method: 'GET', path: '/v1/custom-fields', prepare: (f) => as(f) } },
  getCustomField: {
    row: staff,
    request: { method: 'GET', path: '/v1/custom-fields/{id}', prepare: async (f) => as(f, { params: { id: (await sharedOf(f)).field } }) },
  },
  updateCustomField: {
    row: manageField(200),
    request: {
      method: 'PATCH',
      path: '/v1/custom-fields/{id}',
      prepare: async (f) => as(f, { params: { id: await freshField(f) }, body: { label: `L ${hex()}` } }),
    },
  },
  deleteCustomField: {
    row: manageField(204),
    request: { method: 'DELETE', path: '/v1/custom-fields/{id}', prepare: async (f) => as(f, { params: { id: await freshField(f) } }) },
  },
  publishCustomField: {
    row: manageField(200),
    request: {
      method: 'POST',
      path: '/v1/custom-fields/{id}/publish',
      prepare: async (f) => as(f, { params: { id: await freshDraftField(f) } }),
    },
  },
  rollbackCustomField: {
    row: manageField(200),
    request: {
      method: 'POST',
      path: '/v1/custom-fields/{id}/rollback',
      prepare: async (f) => as(f, { params: { id: await freshField(f) }, body: { version: 1 } }),
    },
  },
  listCustomFieldVersions: {
    row: staff,
    request: {
      method: 'GET',
      path: '/v1/custom-fields/{id}/versions',
      prepare: async (f) => as(f, { params: { id: (await sharedOf(f)).field } }),
    },
  },
  getCustomFieldVersion: {
    row: staff,
    request: {
      method: 'GET',
      path: '/v1/custom-fields/{id}/versions/{version}',
      prepare: async (f) => as(f, { params: { id: (await sharedOf(f)).field, version: '1' } }),
    },
  },

  createFormTemplate: {
    row: manageField(201),
    request: {
      method: 'POST',
      path: '/v1/form-templates',
      prepare: async (f) => as(f, { body: { name: `T ${hex()}`, fields: [{ custom_field_id: (await sharedOf(f)).field }] } }),
    },
  },
  listFormTemplates: { row: staff, request: { method: 'GET', path: '/v1/form-templates', prepare: (f) => as(f) } },
  getFormTemplate: {
    row: staff,
    request: {
      method: 'GET',
      path: '/v1/form-templates/{id}',
      prepare: async (f) => as(f, { params: { id: (await sharedOf(f)).template } }),
    },
  },
  updateFormTemplate: {
    row: manageField(200),
    request: {
      method: 'PATCH',
      path: '/v1/form-templates/{id}',
      prepare: async (f) => as(f, { params: { id: await freshTemplate(f) }, body: { name: `N ${hex()}` } }),
    },
  },
  deleteFormTemplate: {
    row: manageField(204),
    request: { method: 'DELETE', path: '/v1/form-templates/{id}', prepare: async (f) => as(f, { params: { id: await freshTemplate(f) } }) },
  },
  publishFormTemplate: {
    row: manageField(200),
    request: {
      method: 'POST',
      path: '/v1/form-templates/{id}/publish',
      prepare: async (f) => as(f, { params: { id: await freshDraftTemplate(f) } }),
    },
  },
  rollbackFormTemplate: {
    row: manageField(200),
    request: {
      method: 'POST',
      path: '/v1/form-templates/{id}/rollback',
      prepare: async (f) => as(f, { params: { id: await freshTemplate(f) }, body: { version: 1 } }),
    },
  },
  listFormTemplateVersions: {
    row: staff,
    request: {
      method: 'GET',
      path: '/v1/form-templates/{id}/versions',
      prepare: async (f) => as(f, { params: { id: (await sharedOf(f)).template } }),
    },
  },
  getFormTemplateVersion: {
    row: staff,
    request: {
      method: 'GET',
      path: '/v1/form-templates/{id}/versions/{version}',
      prepare: async (f) => as(f, { params: { id: (await sharedOf(f)).template, version: '1' } }),
    },
  },
};
