import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
// The S3 wire-format server the provider health checks use: a real HTTP server on loopback, reached
// by the real AWS SDK client through the configured endpoint URL.
import { startFakeS3 } from '../../../apps/core-api/test/fakes/s3.ts';
import {
  AssetSettingsError,
  assetStoreSettings,
  createAssetStore,
  createLocalAssetStore,
  createS3AssetStore,
  describeAssetStore,
  InvalidAssetKeyError,
  MIN_PART_BYTES,
  readAll,
  type AssetStore,
} from '../src/index.ts';

const AKID = 'AKIAASSETSTORETEST01';
const SECRET = 'assets-secret-key-never-logged-0123456789';
const BUCKET = 'clinic-assets';

/** What every store must do alike; run against the folder and the bucket. */
async function contract(store: AssetStore) {
  await store.put('squat/manifest.json', Buffer.from('{"a":1}'), { contentType: 'application/json' });
  await store.put('squat/audio/en/intro-vo-1.mp3', Readable.from([Buffer.from('ab'), Buffer.from('c')]), { contentType: 'audio/mpeg' });
  await store.put('lunge/manifest.json', Buffer.from('{}'));
  assert.deepEqual(await store.head('squat/manifest.json'), { size: 7, contentType: 'application/json' });
  assert.deepEqual(await store.head('squat/audio/en/intro-vo-1.mp3'), { size: 3, contentType: 'audio/mpeg' });
  assert.equal((await readAll((await store.get('squat/manifest.json'))!)).toString(), '{"a":1}');
  assert.equal((await readAll((await store.get('squat/audio/en/intro-vo-1.mp3'))!)).toString(), 'abc');
  assert.deepEqual(await store.list('squat/'), ['squat/audio/en/intro-vo-1.mp3', 'squat/manifest.json']);
  assert.deepEqual(await store.list(''), ['lunge/manifest.json', 'squat/audio/en/intro-vo-1.mp3', 'squat/manifest.json']);
  assert.deepEqual(await store.list('nothing/'), []);
  // Overwrite is whole: the new bytes, never a mix.
  await store.put('squat/manifest.json', Buffer.from('{"b":22}'), { contentType: 'application/json' });
  assert.equal((await readAll((await store.get('squat/manifest.json'))!)).toString(), '{"b":22}');
  await store.delete('squat/manifest.json');
  assert.equal(await store.get('squat/manifest.json'), null);
  assert.equal(await store.head('squat/manifest.json'), null);
  await store.delete('squat/manifest.json'); // missing: no error
  for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a//b', 'sp ace', '']) {
    await assert.rejects(store.put(bad, Buffer.from('x')), InvalidAssetKeyError, bad);
    await assert.rejects(store.get(bad), InvalidAssetKeyError, bad);
  }
  await assert.rejects(store.list('../'), InvalidAssetKeyError);
}

describe('S3 asset store through the AWS SDK against a local S3 wire-format server', () => {
  let s3: Awaited<ReturnType<typeof startFakeS3>>;
  const stores: AssetStore[] = [];
  const open = (o: Partial<Parameters<typeof createS3AssetStore>[0]> = {}) => {
    const store = createS3AssetStore({
      bucket: BUCKET,
      region: 'eu-central-1',
      endpointUrl: s3.url,
      forcePathStyle: true,
      credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
      ...o,
    });
    stores.push(store);
    return store;
  };
  before(async () => {
    s3 = await startFakeS3({ keys: [AKID], region: 'eu-central-1', buckets: [BUCKET, 'other-bucket'], listPageSize: 2 });
  });
  after(async () => {
    for (const s of stores) s.close?.();
    await s3.close();
  });

  it('keeps the same contract as the folder store (put, head, get, list, overwrite, delete, key rules)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'assets-contract-'));
    try {
      await contract(createLocalAssetStore(root));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    const before = s3.requests;
    await contract(open({ keyPrefix: 'contract/' }));
    assert.ok(s3.requests > before, 'the S3 store went over HTTP');
    // The bytes are really in the bucket, under the key as given, with the content type.
    const obj = s3.buckets.get(BUCKET)!.get('contract/squat/audio/en/intro-vo-1.mp3')!;
    assert.equal(obj.body.toString(), 'abc');
    assert.equal(obj.type, 'audio/mpeg');
  });

  it('refuses bad keys before any request', async () => {
    const store = open();
    const n = s3.requests;
    await assert.rejects(store.put('../escape', Buffer.from('x')), InvalidAssetKeyError);
    await assert.rejects(store.delete('a/../../b'), InvalidAssetKeyError);
    assert.equal(s3.requests, n);
  });

  it('lists every key across pages (continuation tokens), sorted', async () => {
    const store = open({ keyPrefix: 'paged/' });
    const keys = Array.from({ length: 7 }, (_, i) => `p/k${i}`);
    for (const k of [...keys].reverse()) await store.put(k, Buffer.from(k));
    const n = s3.requests;
    assert.deepEqual(await store.list('p/'), keys);
    assert.equal(s3.requests - n, 4, 'seven keys in pages of two: four list requests');
  });

  it('uploads a stream of unknown length in parts (memory: one part) and a small one as a single PUT', async () => {
    const store = open({ partSizeBytes: MIN_PART_BYTES });
    // 12 MiB + 5 bytes in odd 64 KiB-ish chunks: three parts (5 MiB, 5 MiB, the rest).
    const total = 2 * MIN_PART_BYTES + 2 * 1024 * 1024 + 5;
    const hash = createHash('sha256');
    async function* chunks() {
      let sent = 0;
      let i = 0;
      while (sent < total) {
        const size = Math.min(65_537 + (i++ % 7) * 1000, total - sent);
        const c = Buffer.alloc(size, i % 251);
        hash.update(c);
        sent += size;
        yield c;
      }
    }
    const info = await store.put('video/big.mp4', Readable.from(chunks()), { contentType: 'video/mp4' });
    assert.deepEqual(info, { size: total, contentType: 'video/mp4' });
    const stored = s3.buckets.get(BUCKET)!.get('video/big.mp4')!;
    assert.equal(stored.body.length, total);
    assert.equal(createHash('sha256').update(stored.body).digest('hex'), hash.digest('hex'));
    assert.equal(stored.type, 'video/mp4');
    assert.equal(s3.uploads.size, 0, 'the multipart upload was completed');
    assert.deepEqual(await store.head('video/big.mp4'), { size: total, contentType: 'video/mp4' });

    const n = s3.requests;
    await store.put('video/small.txt', Readable.from([Buffer.from('tiny')]));
    assert.equal(s3.requests - n, 1, 'a stream that fits one part is one PUT');
    assert.equal(s3.buckets.get(BUCKET)!.get('video/small.txt')!.body.toString(), 'tiny');
  });

  it('a stream that fails midway leaves no object and aborts its multipart upload', async () => {
    const store = open({ partSizeBytes: MIN_PART_BYTES });
    async function* failing() {
      yield Buffer.alloc(MIN_PART_BYTES + 10, 1);
      throw new Error('client went away');
    }
    await assert.rejects(store.put('video/broken.mp4', Readable.from(failing())), /client went away/);
    assert.equal(await store.head('video/broken.mp4'), null);
    assert.equal(s3.uploads.size, 0, 'the upload was aborted');
  });

  it('a key prefix namespaces the deployment inside a shared bucket', async () => {
    const staging = open({ keyPrefix: 'staging/' });
    const prod = open({ keyPrefix: 'prod' });
    await staging.put('orgs/x/file', Buffer.from('s'));
    await prod.put('orgs/x/file', Buffer.from('p'));
    assert.ok(s3.buckets.get(BUCKET)!.has('staging/orgs/x/file'));
    assert.ok(s3.buckets.get(BUCKET)!.has('prod/orgs/x/file'));
    assert.deepEqual(await staging.list('orgs/'), ['orgs/x/file']);
    assert.equal((await readAll((await prod.get('orgs/x/file'))!)).toString(), 'p');
    assert.throws(() => open({ keyPrefix: '../up/' }), InvalidAssetKeyError);
  });

  it('faults are errors, not "missing": unknown access key, missing bucket', async () => {
    const wrongKey = open({ credentials: { accessKeyId: 'AKIAUNKNOWNKEY000001', secretAccessKey: SECRET } });
    await assert.rejects(wrongKey.get('lunge/manifest.json'), (err: Error) => err.name === 'InvalidAccessKeyId');
    await assert.rejects(wrongKey.put('lunge/x', Buffer.from('x')), (err: Error) => err.name === 'InvalidAccessKeyId');
    await assert.rejects(wrongKey.list(''), (err: Error) => err.name === 'InvalidAccessKeyId');
    const noBucket = open({ bucket: 'no-such-bucket' });
    await assert.rejects(noBucket.get('lunge/manifest.json'), (err: Error) => err.name === 'NoSuchBucket');
    await assert.rejects(noBucket.list(''), (err: Error) => err.name === 'NoSuchBucket');
  });

  it('createAssetStore builds the bucket from ASSET_* settings, and the folder without them', async () => {
    const settings = assetStoreSettings(
      {
        ASSET_STORE: 's3',
        ASSET_S3_BUCKET: 'other-bucket',
        ASSET_S3_REGION: 'eu-central-1',
        ASSET_S3_ENDPOINT_URL: s3.url,
        ASSET_S3_ACCESS_KEY_ID: AKID,
        ASSET_S3_SECRET_ACCESS_KEY: SECRET,
      },
      { production: false },
    );
    assert.equal(settings.kind, 's3');
    assert.equal(settings.kind === 's3' && settings.forcePathStyle, true, 'path style by default with an endpoint URL');
    const store = createAssetStore(settings, '/unused');
    stores.push(store);
    assert.equal(store.kind, 's3');
    await store.put('from-settings.txt', Buffer.from('ok'), { contentType: 'text/plain' });
    assert.equal(s3.buckets.get('other-bucket')!.get('from-settings.txt')!.body.toString(), 'ok');
    assert.ok(!JSON.stringify(describeAssetStore(settings, '/unused')).includes(SECRET));

    const root = await mkdtemp(join(tmpdir(), 'assets-settings-'));
    try {
      const local = createAssetStore(assetStoreSettings({}, { production: true }), root);
      assert.equal(local.kind, 'local');
      await local.put('a.txt', Buffer.from('x'));
      assert.deepEqual(await local.list(''), ['a.txt']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('ASSET_* settings', () => {
  const s3 = { ASSET_STORE: 's3', ASSET_S3_BUCKET: 'clinic-assets', ASSET_S3_REGION: 'eu-central-1' };
  const refuses = (values: Record<string, unknown>, pattern: RegExp, production = false) =>
    assert.throws(
      () => assetStoreSettings(values, { production }),
      (err: Error) => err instanceof AssetSettingsError && pattern.test(err.message),
    );

  it('defaults to the folder; s3 with only bucket and region uses AWS and its default credential chain', () => {
    assert.deepEqual(assetStoreSettings({}, { production: false }), { kind: 'local' });
    assert.deepEqual(assetStoreSettings(s3, { production: true }), {
      kind: 's3',
      bucket: 'clinic-assets',
      region: 'eu-central-1',
      endpointUrl: null,
      forcePathStyle: false,
      credentials: null,
      keyPrefix: '',
    });
    const full = assetStoreSettings(
      {
        ...s3,
        ASSET_S3_ENDPOINT_URL: 'https://minio.internal:9000',
        ASSET_S3_FORCE_PATH_STYLE: 'false',
        ASSET_S3_ACCESS_KEY_ID: AKID,
        ASSET_S3_SECRET_ACCESS_KEY: SECRET,
        ASSET_S3_PREFIX: 'staging',
      },
      { production: true },
    );
    assert.deepEqual(full, {
      kind: 's3',
      bucket: 'clinic-assets',
      region: 'eu-central-1',
      endpointUrl: 'https://minio.internal:9000',
      forcePathStyle: false,
      credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
      keyPrefix: 'staging/',
    });
    // Booleans as TypeBox converts them work as well as raw strings (the telemetry config).
    assert.equal(
      (assetStoreSettings({ ...s3, ASSET_S3_FORCE_PATH_STYLE: true }, { production: false }) as { forcePathStyle: boolean }).forcePathStyle,
      true,
    );
  });

  it('refuses half a configuration instead of writing files somewhere else', () => {
    refuses({ ASSET_STORE: 'gcs' }, /ASSET_STORE must be local or s3/);
    refuses({ ASSET_S3_BUCKET: 'clinic-assets' }, /ASSET_S3_BUCKET set but ASSET_STORE is local/);
    refuses({ ASSET_STORE: 's3', ASSET_S3_REGION: 'eu-central-1' }, /needs ASSET_S3_BUCKET/);
    refuses({ ...s3, ASSET_S3_BUCKET: 'Bad_Bucket' }, /needs ASSET_S3_BUCKET/);
    refuses({ ASSET_STORE: 's3', ASSET_S3_BUCKET: 'clinic-assets' }, /needs ASSET_S3_REGION/);
    refuses({ ...s3, ASSET_S3_ACCESS_KEY_ID: AKID }, /both ASSET_S3_ACCESS_KEY_ID and ASSET_S3_SECRET_ACCESS_KEY, or neither/);
    refuses({ ...s3, ASSET_S3_SECRET_ACCESS_KEY: SECRET }, /or neither/);
    refuses({ ...s3, ASSET_S3_ENDPOINT_URL: 'not a url' }, /not a URL/);
    refuses({ ...s3, ASSET_S3_ENDPOINT_URL: 'ftp://x' }, /http\(s\)/);
    refuses({ ...s3, ASSET_S3_ENDPOINT_URL: 'https://key:secret@minio.internal' }, /must not carry credentials/);
    refuses({ ...s3, ASSET_S3_ENDPOINT_URL: 'http://minio.internal:9000' }, /https when NODE_ENV=production/, true);
    refuses({ ...s3, ASSET_S3_FORCE_PATH_STYLE: 'yes' }, /true or false/);
    refuses({ ...s3, ASSET_S3_PREFIX: '../other' }, /ASSET_S3_PREFIX/);
    // Plain http is fine outside production (a MinIO container, a local wire-format server).
    assert.equal(assetStoreSettings({ ...s3, ASSET_S3_ENDPOINT_URL: 'http://minio:9000' }, { production: false }).kind, 's3');
  });
});
