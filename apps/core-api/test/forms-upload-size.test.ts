import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// Form files larger than the JSON body limit (BODY_LIMIT_BYTES, 1 MiB) are accepted up to
// FORM_FILE_MAX_BYTES, and an Idempotency-Key on POST /v1/forms is honoured inside the
// module's multipart scope.

describe('form files above the JSON body limit', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { FORM_FILE_MAX_BYTES: String(3 * 1024 * 1024) } });
  });
  after(() => t.close());

  it('a 2 MiB PDF is stored whole; 4 MiB is 413 file_too_large; POST /v1/forms replays by Idempotency-Key', async () => {
    const org = (await t.createOrg()).id;
    const admin = (await t.addMember(org, uniqueEmail('admin'), 'admin')).token;
    const patient = await t.addPatient(org, uniqueEmail('patient'));
    const patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!.id;
    const field = dataOf(
      await t.call('POST', '/v1/custom-fields', {
        token: admin,
        org,
        body: { entity_type: 'form', key: 'q', label: 'Q', field_type: 'text' },
      }),
      201,
    );
    const tpl = dataOf(
      await t.call('POST', '/v1/form-templates', { token: admin, org, body: { name: 'T', fields: [{ custom_field_id: field.id }] } }),
      201,
    );
    const body = { form_template_id: tpl.id, patient_id: patientId };
    const first = await t.call('POST', '/v1/forms', { token: admin, org, body, headers: { 'idempotency-key': 'form-create-1' } });
    const again = await t.call('POST', '/v1/forms', { token: admin, org, body, headers: { 'idempotency-key': 'form-create-1' } });
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.body, first.body);
    const form = first.json().data;
    const send = (size: number) => {
      const boundary = 'clinicbig';
      const bytes = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(size - 9, 0x20)]);
      const payload = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
        ),
        bytes,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      return t.app.inject({
        method: 'POST',
        url: `/v1/forms/${form.id}/files`,
        payload,
        headers: {
          authorization: `Bearer ${admin}`,
          'x-organization-id': org,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
      });
    };
    const ok = await send(2 * 1024 * 1024);
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(ok.json().data.size_bytes, 2 * 1024 * 1024);
    const big = await send(4 * 1024 * 1024);
    assert.equal(big.statusCode, 413, big.body);
    assert.equal(big.json().error.code, 'file_too_large');
    const { rows } = await t.db.query('select count(*)::int as n from form_files where form_id = $1', [form.id]);
    assert.equal((rows[0] as any).n, 1);
  });
});
