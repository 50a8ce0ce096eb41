import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, type TestApp, uniqueEmail } from './helpers.ts';

// Integers in request bodies that go into PostgreSQL `integer` columns are bounded in the schema: before,
// {"version": 2147483648} and {"version": 1e308} on the rollback routes passed validation and answered 500.
describe('integers out of range', () => {
  let t: TestApp;
  let admin: string;
  let orgId: string;
  let fieldId: string;
  let templateId: string;

  before(async () => {
    t = await startTestApp();
    orgId = (await t.createOrg()).id;
    admin = (await t.addMember(orgId, uniqueEmail('admin'), 'admin')).token;
    const field = dataOf(
      await t.call('POST', '/v1/custom-fields', {
        token: admin,
        org: orgId,
        body: { entity_type: 'form', key: 'allergies', label: 'Allergies', field_type: 'text' },
      }),
      201,
    );
    fieldId = field.id;
    const template = dataOf(
      await t.call('POST', '/v1/form-templates', {
        token: admin,
        org: orgId,
        body: { name: 'Intake', fields: [{ custom_field_id: fieldId }] },
      }),
      201,
    );
    templateId = template.id;
  });
  after(() => t?.close());

  for (const raw of ['2147483648', '1e308', '9007199254740993']) {
    it(`rollback with version ${raw}: 400 validation_error with fields.version, nothing changed`, async () => {
      for (const path of [`/v1/custom-fields/${fieldId}/rollback`, `/v1/form-templates/${templateId}/rollback`]) {
        const err = assertError(
          await t.call('POST', path, { token: admin, org: orgId, rawBody: `{"version":${raw}}` }),
          400,
          'validation_error',
        );
        assert.ok(err.fields?.version, JSON.stringify(err));
      }
      assert.equal(dataOf(await t.call('GET', `/v1/custom-fields/${fieldId}`, { token: admin, org: orgId })).published, true);
    });
  }

  it('the largest integer version is a plain 404 (no such version), not an error of the database', async () => {
    assertError(
      await t.call('POST', `/v1/custom-fields/${fieldId}/rollback`, { token: admin, org: orgId, body: { version: 2_147_483_647 } }),
      404,
      'not_found',
    );
  });

  it('a consent grant with purpose_version 2147483648 is 400 with fields, not 500', async () => {
    const res = await t.call('POST', '/v1/me/consents', {
      as: uniqueEmail('patient'),
      rawBody: '{"grants":[{"organization_id":null,"purpose_code":"platform_terms","purpose_version":2147483648,"source":"self_toggle"}]}',
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error.code, 'validation_error');
  });
});
