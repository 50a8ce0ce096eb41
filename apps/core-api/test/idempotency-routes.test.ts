import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

/**
 * Idempotency-Key (spec 4.1) on the POSTs that create something or act outside: a GDPR export, a form
 * file, a webhook secret rotation (the webhook re-send is in webhooks-delivery.test.ts). The same key
 * replays the first 2xx answer and does the work once; the same key with another body is 422.
 */
describe('Idempotency-Key on exports, form files and secret rotation', () => {
  let t: TestApp;
  let org: string;
  let admin: string;
  let patient: { token: string; userId: string };

  before(async () => {
    t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', FORM_FILE_MAX_BYTES: String(512 * 1024) } });
    org = (await t.createOrg()).id;
    admin = (await t.addMember(org, uniqueEmail('idem-admin'), 'admin')).token;
    patient = await t.addPatient(org, uniqueEmail('idem-patient'));
  });
  after(() => t?.close());

  const count = async (sql: string, params: unknown[]) => (await t.db.query<{ n: number }>(sql, params)).rows[0]!.n;

  it('POST /v1/gdpr/export: a retry gets the same job; one job exists; another body under the key is 422', async () => {
    const headers = { 'idempotency-key': 'export-once-1' };
    const first = await t.call('POST', '/v1/gdpr/export', { token: patient.token, body: {}, headers });
    const job = dataOf(first, 202);
    const again = await t.call('POST', '/v1/gdpr/export', { token: patient.token, body: {}, headers });
    assert.equal(again.statusCode, 202);
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.json().data.id, job.id);
    assert.equal(
      await count(`select count(*)::int as n from jobs where kind = 'gdpr_export' and requested_by_principal_id = $1`, [patient.userId]),
      1,
    );
    assertError(
      await t.call('POST', '/v1/gdpr/export', { token: patient.token, body: { user_id: patient.userId }, headers }),
      422,
      'idempotency_key_reused',
    );
  });

  it('POST rotate-secret: a retry gets the same new secret instead of rotating again', async () => {
    const sub = dataOf(
      await t.call('POST', '/v1/webhook-subscriptions', {
        token: admin,
        org,
        body: { url: 'https://127.0.0.1:9/hook', event_types: ['member.added'] },
      }),
      201,
    );
    const url = `/v1/webhook-subscriptions/${sub.id}/rotate-secret`;
    const headers = { 'idempotency-key': `rotate-${sub.id}` };
    const first = dataOf(await t.call('POST', url, { token: admin, org, body: { overlap_seconds: 60 }, headers }));
    const again = await t.call('POST', url, { token: admin, org, body: { overlap_seconds: 60 }, headers });
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.json().data.signing_secret, first.signing_secret);
    // The stored secret is the one handed out: a second rotation would have replaced it.
    const rotations = await count(
      `select count(*)::int as n from audit_logs where action = 'webhook_subscription.secret_rotated' and entity_id = $1`,
      [sub.id],
    );
    assert.equal(rotations, 1);
    assertError(await t.call('POST', url, { token: admin, org, body: { overlap_seconds: 0 }, headers }), 422, 'idempotency_key_reused');
  });

  it('POST /v1/forms/{id}/files: a retried upload (another boundary, a large file) gets the first file; one file is stored', async () => {
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
    const form = dataOf(
      await t.call('POST', '/v1/forms', { token: admin, org, body: { form_template_id: template.id, patient_id: patientId } }),
      201,
    );
    // Larger than any stream buffer: the upload must not stall behind the idempotency hook.
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(300 * 1024, 0x20), Buffer.from('\n%%EOF\n')]);
    const upload = (boundary: string) => {
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.pdf"\r\nContent-Type: application/pdf\r\n\r\n`;
      return t.app.inject({
        method: 'POST',
        url: `/v1/forms/${form.id}/files`,
        payload: Buffer.concat([Buffer.from(head), pdf, Buffer.from(`\r\n--${boundary}--\r\n`)]),
        headers: {
          authorization: `Bearer ${admin}`,
          'x-organization-id': org,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'idempotency-key': `upload-${form.id}`,
        },
      });
    };
    const first = await upload('----first-attempt');
    assert.equal(first.statusCode, 201, first.body);
    const again = await upload('----second-attempt');
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotency-replayed'], 'true');
    assert.equal(again.json().data.id, first.json().data.id);
    assert.equal(dataOf(await t.call('GET', `/v1/forms/${form.id}/files`, { token: admin, org })).length, 1);
  });

  it('acting POSTs (publish, rollback, sign, withdraw): a retry with the key replays the first answer instead of a 409 or 404', async () => {
    const replayed = async (url: string, token: string, headers: Record<string, string>, body: unknown = undefined) => {
      const first = await t.call('POST', url, { token, org, body, headers });
      assert.equal(first.statusCode, 200, first.body);
      const again = await t.call('POST', url, { token, org, body, headers });
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.headers['idempotency-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
      return first;
    };
    const field = dataOf(
      await t.call('POST', '/v1/custom-fields', {
        token: admin,
        org,
        body: { entity_type: 'form', key: 'mood', label: 'Mood', field_type: 'text' },
      }),
      201,
    );
    dataOf(await t.call('PATCH', `/v1/custom-fields/${field.id}`, { token: admin, org, body: { label: 'Mood today' } }));
    // Publishing twice without the key is 409 already_published; with it, the first answer again.
    await replayed(`/v1/custom-fields/${field.id}/publish`, admin, { 'idempotency-key': `publish-${field.id}` });
    assert.equal(dataOf(await t.call('GET', `/v1/custom-fields/${field.id}/versions`, { token: admin, org })).length, 2);
    await replayed(`/v1/custom-fields/${field.id}/rollback`, admin, { 'idempotency-key': `rollback-${field.id}` }, { version: 1 });

    const template = dataOf(
      await t.call('POST', '/v1/form-templates', { token: admin, org, body: { name: 'Once', fields: [{ custom_field_id: field.id }] } }),
      201,
    );
    const patientId = (await t.db.query<{ id: string }>('select id from patients where user_id = $1', [patient.userId])).rows[0]!.id;
    const form = dataOf(
      await t.call('POST', '/v1/forms', { token: admin, org, body: { form_template_id: template.id, patient_id: patientId } }),
      201,
    );
    const headers = { 'idempotency-key': `sign-${form.id}` };
    await replayed(`/v1/forms/${form.id}/sign`, patient.token, headers);
    assertError(await t.call('POST', `/v1/forms/${form.id}/sign`, { token: patient.token, org }), 409, 'already_signed');

    const su = await t.superadmin();
    dataOf(
      await t.call('POST', '/v1/admin/consent-purposes/marketing_email/versions', {
        token: su,
        body: { body_translations: { en: 'Offers by email' } },
      }),
      201,
    );
    const [grant] = dataOf(
      await t.call('POST', '/v1/me/consents', {
        token: patient.token,
        body: { grants: [{ organization_id: org, purpose_code: 'marketing_email', purpose_version: 1, source: 'self_toggle' }] },
      }),
      201,
    );
    await replayed(`/v1/me/consents/${grant.id}/withdraw`, patient.token, { 'idempotency-key': `withdraw-${grant.id}` }, {});
    assertError(await t.call('POST', `/v1/me/consents/${grant.id}/withdraw`, { token: patient.token, body: {} }), 404, 'not_found');
  });
});
