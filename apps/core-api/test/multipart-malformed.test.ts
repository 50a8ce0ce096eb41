import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/**
 * Malformed multipart on the upload route (POST /v1/forms/{id}/files) is the caller's error in the
 * spec's envelope, never a 500, and stores nothing: 400 invalid_body for a body that is not a
 * well-formed multipart message, 413 payload_too_large for more parts than the route takes.
 */
describe('malformed multipart uploads', () => {
  let t: TestApp;
  let org: string;
  let admin: string;
  let formId: string;

  before(async () => {
    t = await startTestApp();
    org = (await t.createOrg()).id;
    admin = (await t.addMember(org, uniqueEmail('mp-admin'), 'admin')).token;
    const patient = await t.addPatient(org, uniqueEmail('mp-patient'));
    const field = dataOf(
      await t.call('POST', '/v1/custom-fields', {
        token: admin,
        org,
        body: { entity_type: 'form', key: 'note', label: 'Note', field_type: 'text' },
      }),
      201,
    );
    const template = dataOf(
      await t.call('POST', '/v1/form-templates', { token: admin, org, body: { name: 'T', fields: [{ custom_field_id: field.id }] } }),
      201,
    );
    const patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!.id;
    formId = dataOf(
      await t.call('POST', '/v1/forms', { token: admin, org, body: { form_template_id: template.id, patient_id: patientId } }),
      201,
    ).id;
  });
  after(() => t?.close());

  const send = (contentType: string, payload: string | Buffer) =>
    t.app.inject({
      method: 'POST',
      url: `/v1/forms/${formId}/files`,
      payload,
      headers: { authorization: `Bearer ${admin}`, 'x-organization-id': org, 'content-type': contentType },
    });
  const B = 'XyZboundary';
  const filePart = (name = 'file', filename = 'a.pdf') =>
    `--${B}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4 x\r\n`;
  const field = (i: number) => `--${B}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv${i}\r\n`;

  const cases: [string, string, string | Buffer, number, string][] = [
    ['no boundary in the content type', 'multipart/form-data', `${filePart()}--${B}--\r\n`, 400, 'invalid_body'],
    ['an empty boundary', 'multipart/form-data; boundary=', `${filePart()}--${B}--\r\n`, 400, 'invalid_body'],
    ['a boundary that never appears', `multipart/form-data; boundary=${B}`, 'just some text', 400, 'invalid_body'],
    ['an empty body (no file)', `multipart/form-data; boundary=${B}`, '', 400, 'validation_error'],
    ['no closing boundary', `multipart/form-data; boundary=${B}`, filePart().slice(0, -2), 400, 'invalid_body'],
    ['a part cut inside its headers', `multipart/form-data; boundary=${B}`, `--${B}\r\nContent-Disposition: form-da`, 400, 'invalid_body'],
    [
      'too many fields',
      `multipart/form-data; boundary=${B}`,
      `${Array.from({ length: 50 }, (_, i) => field(i)).join('')}${filePart()}--${B}--\r\n`,
      413,
      'payload_too_large',
    ],
    ['binary garbage', `multipart/form-data; boundary=${B}`, Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x2d, 0x2d]), 400, 'invalid_body'],
  ];

  for (const [label, type, payload, status, code] of cases) {
    it(`${label}: ${status} ${code}, nothing stored`, async () => {
      const res = await send(type, payload);
      assert.equal(res.statusCode, status, res.body);
      assert.equal(res.json().error.code, code, res.body);
      const files = dataOf(await t.call('GET', `/v1/forms/${formId}/files`, { token: admin, org }));
      assert.deepEqual(files, []);
    });
  }
});
