import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MISSING_UUID, startTestApp, type TestApp } from './helpers.ts';
import { clinicRows } from './support/clinic-rows.ts';

/*
 * A list under a parent (`/v1/<parent>/{id}/<children>`) answers 404 when the parent is unknown or belongs to
 * another clinic, as reading the parent itself does, never 200 with an empty page. The routes come from the
 * OpenAPI document, so a new nested list is covered or fails here until its parent's table is named.
 */

/** The parent's table of each nested list, by its path. */
const PARENTS: Record<string, string> = {
  '/v1/treatment-plans/{id}/versions': 'treatment_plans',
  '/v1/organizations/{org_id}/patients/{patient_id}/consents': 'patients',
  '/v1/webhook-subscriptions/{uid}/events': 'webhook_subscriptions',
  '/v1/segments/{id}/members': 'segments',
  '/v1/custom-fields/{id}/versions': 'custom_fields',
  '/v1/form-templates/{id}/versions': 'form_templates',
  '/v1/forms/{id}/files': 'forms',
  '/v1/pdf-templates/{id}/versions': 'pdf_templates',
  '/v1/forms/{id}/documents': 'forms',
  '/v1/appointments/{id}/documents': 'appointments',
  '/v1/patients/{id}/caregivers': 'patients',
  '/v1/appointments/{id}/files': 'appointments',
  '/v1/appointments/{id}/reviews': 'appointments',
  '/v1/service-plans/{id}/products': 'service_plans',
};
/** Nested lists whose parent is the organization itself (its access rules, spec 4.1) or the console's (break-glass). */
const ORGANIZATION_PARENT = /^\/v1\/(organizations\/\{id\}|console\/organizations\/\{org_id\})\/[a-z-]+$/;

describe('lists under a parent the caller cannot see are 404', () => {
  let t: TestApp;
  let spec: any;
  let orgA: string;
  let adminA: string;
  let theirs: Record<string, string>;

  before(async () => {
    t = await startTestApp();
    spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    orgA = (await t.createOrg({ name: 'Lists A' })).id;
    const orgB = (await t.createOrg({ name: 'Lists B' })).id;
    adminA = (await clinicRows(t, orgA)).admin.token;
    theirs = (await clinicRows(t, orgB)).rows;
  });
  after(async () => t?.close());

  const nestedLists = () =>
    Object.entries<any>(spec.paths)
      .filter(([path, ms]) => ms.get && /\}\/[a-z-]+$/.test(path))
      .filter(([, ms]) => {
        let r = ms.get.responses?.['200']?.content?.['application/json']?.schema ?? {};
        while (r.$ref) r = spec.components.schemas[r.$ref.split('/').pop()];
        return r.properties?.data?.type === 'array';
      })
      .map(([path]) => path);

  it('every nested list is in the table', () => {
    const missing = nestedLists().filter((p) => !PARENTS[p] && !ORGANIZATION_PARENT.test(p));
    assert.deepEqual(missing, [], 'name the parent table of these nested lists');
  });

  it("answers 404 for an unknown parent and for another clinic's", async () => {
    const wrong: string[] = [];
    for (const path of Object.keys(PARENTS)) {
      for (const [what, id] of [
        ['unknown', MISSING_UUID],
        ['other clinic', theirs[PARENTS[path]!]!],
      ] as const) {
        const url = path.replace('{org_id}', orgA).replace(/\{[a-z_]+\}/, id);
        const res = await t.call('GET', url, { token: adminA, org: orgA });
        if (res.statusCode !== 404 || res.json().error?.code?.endsWith('not_found') !== true)
          wrong.push(`${what} ${url}: ${res.statusCode} ${res.body.slice(0, 160)}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
