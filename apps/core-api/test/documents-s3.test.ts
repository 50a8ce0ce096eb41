import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startFakeS3 } from './fakes/s3.ts';
import { dataOf, startTestApp, type TestApp } from './helpers.ts';
import { setUpClinic } from './support/appointment-clinic.ts';

/*
 * Documents on the bucket store (ASSET_STORE=s3): the PDF is written to the bucket and
 * the download URL is an S3 presigned GET (the SDK's presigner), valid DOCUMENT_URL_TTL_SECONDS, which the
 * bucket serves without any other credential.
 */

const AKID = 'AKIADOCUMENTSTEST001';

describe('documents on the bucket store', () => {
  let s3: Awaited<ReturnType<typeof startFakeS3>>;
  let t: TestApp;
  before(async () => {
    s3 = await startFakeS3({ keys: [AKID], region: 'eu-central-1', buckets: ['clinic-docs'] });
    t = await startTestApp({
      env: {
        ASSET_STORE: 's3',
        ASSET_S3_BUCKET: 'clinic-docs',
        ASSET_S3_REGION: 'eu-central-1',
        ASSET_S3_ENDPOINT_URL: s3.url,
        ASSET_S3_ACCESS_KEY_ID: AKID,
        ASSET_S3_SECRET_ACCESS_KEY: 'documents-secret-access-key-0123456789',
        DOCUMENT_URL_TTL_SECONDS: '120',
      },
    });
  });
  after(async () => {
    await t?.close();
    await s3?.close();
  });

  it('stores the PDF in the bucket and answers a presigned URL the bucket serves', async () => {
    const c = await setUpClinic(t, 's3docs');
    const tpl = dataOf(
      await c.call('POST', '/v1/pdf-templates', c.admin, {
        name: 'Summary',
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
    const a = await c.book();
    const doc = dataOf(
      await c.call('POST', `/v1/appointments/${a.id}/documents`, c.admin, { pdf_template_id: tpl.id, body: 'Bucket' }),
      201,
    );
    assert.equal(doc.status, 'ready');
    const link = dataOf(await c.call('GET', `/v1/appointment-documents/${doc.id}/download`, c.admin));
    const url = new URL(link.url);
    assert.equal(url.origin, new URL(s3.url).origin);
    assert.equal(url.searchParams.get('X-Amz-Expires'), '120');
    assert.ok(url.searchParams.get('X-Amz-Signature'));
    assert.match(url.searchParams.get('response-content-disposition') ?? '', /^attachment; filename="Summary\.pdf"$/);
    const res = await fetch(link.url);
    assert.equal(res.status, 200);
    const pdf = Buffer.from(await res.arrayBuffer());
    assert.equal(createHash('sha256').update(pdf).digest('hex'), doc.sha256);
  });
});
