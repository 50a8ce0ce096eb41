import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseComposerConfig } from '@clinic/composer';
import { parseTelemetryConfig } from '@clinic/telemetry';
import { ConfigError, parseConfig } from '../src/config.ts';
import { startFakeS3 } from './fakes/s3.ts';
import { assertError, dataOf, startTestApp, uniqueEmail, type TestApp } from './helpers.ts';

// The asset store choice: ASSET_STORE=s3 puts the core API's files (here: form files) in
// the bucket through the real AWS SDK client, at the configured endpoint; the composer and telemetry
// read the same settings. The store is built once, in platform/runtime.ts.

const AKID = 'AKIAASSETWIRINGTEST1';
const SECRET = 'wiring-secret-access-key-0123456789abcdef';
const PDF = Buffer.from('%PDF-1.7\nhello from a bucket\n');

describe('ASSET_STORE=s3 in the core API', () => {
  let s3: Awaited<ReturnType<typeof startFakeS3>>;
  let t: TestApp;
  before(async () => {
    s3 = await startFakeS3({ keys: [AKID], region: 'eu-central-1', buckets: ['clinic-files'] });
    t = await startTestApp({
      env: {
        ASSET_STORE: 's3',
        ASSET_S3_BUCKET: 'clinic-files',
        ASSET_S3_REGION: 'eu-central-1',
        ASSET_S3_ENDPOINT_URL: s3.url,
        ASSET_S3_ACCESS_KEY_ID: AKID,
        ASSET_S3_SECRET_ACCESS_KEY: SECRET,
        ASSET_S3_PREFIX: 'test-deployment',
      },
    });
  });
  after(async () => {
    await t?.close();
    await s3?.close();
  });

  it('form files are written to, served from and removed from the bucket', async () => {
    assert.equal(t.rt.assets.kind, 's3');
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
    const form = dataOf(
      await t.call('POST', '/v1/forms', { token: admin, org, body: { form_template_id: tpl.id, patient_id: patientId } }),
      201,
    );

    const boundary = 'clinics3';
    const payload = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
      ),
      PDF,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const headers = { authorization: `Bearer ${admin}`, 'x-organization-id': org };
    const up = await t.app.inject({
      method: 'POST',
      url: `/v1/forms/${form.id}/files`,
      payload,
      headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    const file = dataOf(up, 201);

    const key = `test-deployment/orgs/${org}/forms/${form.id}/${file.id}`;
    const stored = s3.buckets.get('clinic-files')!.get(key);
    assert.ok(stored, `object ${key} in the bucket`);
    assert.deepEqual(stored.body, PDF);
    assert.equal(stored.type, 'application/pdf');

    const down = await t.app.inject({ method: 'GET', url: `/v1/forms/${form.id}/files/${file.id}`, headers });
    assert.equal(down.statusCode, 200, down.body);
    assert.deepEqual(down.rawPayload, PDF);

    // The object vanishing behind the API's back is a 404, not a 500 and not an empty file.
    s3.buckets.get('clinic-files')!.delete(key);
    assertError(await t.app.inject({ method: 'GET', url: `/v1/forms/${form.id}/files/${file.id}`, headers }), 404, 'not_found');
    s3.buckets.get('clinic-files')!.set(key, stored);

    const del = await t.app.inject({ method: 'DELETE', url: `/v1/forms/${form.id}/files/${file.id}`, headers });
    assert.equal(del.statusCode, 204, del.body);
    assert.equal(s3.buckets.get('clinic-files')!.has(key), false);
  });
});

describe('asset settings in every service', () => {
  const s3 = { ASSET_STORE: 's3', ASSET_S3_BUCKET: 'clinic-files', ASSET_S3_REGION: 'eu-central-1' };

  it('the core API, the composer and telemetry read the same ASSET_* settings to the same store', () => {
    const core = parseConfig({ NODE_ENV: 'test', ...s3, ASSET_S3_FORCE_PATH_STYLE: 'true' }).assetStore;
    const composer = parseComposerConfig({ NODE_ENV: 'test', ...s3, ASSET_S3_FORCE_PATH_STYLE: 'true' }).assetStore;
    const telemetry = parseTelemetryConfig({
      ...s3,
      ASSET_S3_FORCE_PATH_STYLE: 'true',
      DATABASE_URL: 'postgres://x',
      AUTH_JWKS_URL: 'https://idp/jwks',
      AUTH_ISSUER: 'https://idp',
    }).assetStore;
    assert.deepEqual(core, {
      kind: 's3',
      bucket: 'clinic-files',
      region: 'eu-central-1',
      endpointUrl: null,
      forcePathStyle: true,
      credentials: null,
      keyPrefix: '',
    });
    assert.deepEqual(composer, core);
    assert.deepEqual(telemetry, core);
    assert.deepEqual(parseConfig({ NODE_ENV: 'test' }).assetStore, { kind: 'local' });
  });

  it('half a configuration stops start-up with a message naming the setting', () => {
    assert.throws(
      () => parseConfig({ ASSET_STORE: 's3', ASSET_S3_REGION: 'eu-central-1' }),
      (e: Error) => e instanceof ConfigError && /ASSET_S3_BUCKET/.test(e.message),
    );
    assert.throws(
      () => parseConfig({ ASSET_S3_BUCKET: 'clinic-files' }),
      (e: Error) => e instanceof ConfigError && /ASSET_STORE is local/.test(e.message),
    );
    assert.throws(() => parseConfig({ ASSET_STORE: 'ftp' }), ConfigError);
    assert.throws(() => parseComposerConfig({ ...s3, ASSET_S3_ACCESS_KEY_ID: AKID }), /or neither/);
    assert.throws(
      () =>
        parseTelemetryConfig({
          ...s3,
          ASSET_S3_ENDPOINT_URL: 'http://minio:9000',
          NODE_ENV: 'production',
          DATABASE_URL: 'x',
          AUTH_JWKS_URL: 'x',
          AUTH_ISSUER: 'x',
        }),
      /https when NODE_ENV=production/,
    );
  });
});
