import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sigv4Credential } from './aws-auth.ts';

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * A local server speaking the S3 REST/XML wire format, path style (`/<bucket>/<key>`): HEAD bucket,
 * PUT/GET/HEAD/DELETE object, ListObjectsV2 with max-keys and continuation tokens, and multipart
 * uploads (create, upload part, complete, abort). Objects live in memory. Shared by the provider
 * health check tests and the S3 asset store's tests (packages/assets/test/s3.test.ts).
 */
export async function startFakeS3(opts: {
  keys: string[];
  region: string;
  buckets: string[] /** S3 may return fewer keys than asked; tests page with few. */;
  listPageSize?: number;
}) {
  const state = {
    keys: new Set(opts.keys),
    region: opts.region,
    buckets: new Map(opts.buckets.map((b) => [b, new Map<string, { body: Buffer; type: string | null }>()])),
    requests: 0,
    /** The access key of the last signed request: which credentials a client used. */
    lastKeyId: null as string | null,
    uploads: new Map<string, { key: string; type: string | null; parts: Map<number, Buffer> }>(),
    uploadSeq: 0,
  };
  const server = createServer(async (req, res) => {
    state.requests++;
    const error = (status: number, code: string, message: string) => {
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(req.method === 'HEAD' ? undefined : xml(`<Error><Code>${code}</Code><Message>${esc(message)}</Message></Error>`));
    };
    const body = await readBody(req);
    const cred = sigv4Credential(req);
    if (!cred || !state.keys.has(cred.accessKeyId))
      return error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
    state.lastKeyId = cred.accessKeyId;
    const url = new URL(req.url ?? '/', 'http://x');
    const [, bucketName, ...rest] = url.pathname.split('/');
    const key = rest.map(decodeURIComponent).join('/');
    const bucket = state.buckets.get(decodeURIComponent(bucketName ?? ''));
    if (!bucket) return error(404, 'NoSuchBucket', 'The specified bucket does not exist');
    if (!key) {
      if (req.method === 'HEAD') return void res.writeHead(200, { 'x-amz-bucket-region': state.region }).end();
      if (req.method === 'GET' && url.searchParams.get('list-type') === '2') {
        const prefix = url.searchParams.get('prefix') ?? '';
        const max = Math.min(Number(url.searchParams.get('max-keys') ?? 1000), opts.listPageSize ?? 1000);
        // The continuation token is the last key of the previous page (opaque to clients, as in S3).
        const after = url.searchParams.get('continuation-token');
        const all = [...bucket.keys()].filter((k) => k.startsWith(prefix) && (after === null || k > after)).sort();
        const keys = all.slice(0, max);
        const truncated = all.length > keys.length;
        const next = truncated ? `<NextContinuationToken>${esc(keys[keys.length - 1]!)}</NextContinuationToken>` : '';
        const contents = keys.map((k) => `<Contents><Key>${esc(k)}</Key><Size>${bucket.get(k)!.body.length}</Size></Contents>`).join('');
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          xml(
            `<ListBucketResult><Name>${esc(bucketName!)}</Name><Prefix>${esc(prefix)}</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${next}${contents}</ListBucketResult>`,
          ),
        );
      }
      return error(405, 'MethodNotAllowed', 'not supported by the fake');
    }
    const uploadId = url.searchParams.get('uploadId');
    if (req.method === 'POST' && url.searchParams.has('uploads')) {
      const id = `upload-${++state.uploadSeq}`;
      state.uploads.set(id, { key, type: (req.headers['content-type'] as string | undefined) ?? null, parts: new Map() });
      res.writeHead(200, { 'content-type': 'application/xml' });
      return res.end(
        xml(
          `<InitiateMultipartUploadResult><Bucket>${esc(bucketName!)}</Bucket><Key>${esc(key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
        ),
      );
    }
    if (uploadId !== null) {
      const upload = state.uploads.get(uploadId);
      if (!upload || upload.key !== key) return error(404, 'NoSuchUpload', 'The specified upload does not exist.');
      if (req.method === 'PUT') {
        const n = Number(url.searchParams.get('partNumber'));
        upload.parts.set(n, body);
        return void res.writeHead(200, { etag: `"part-${n}"` }).end();
      }
      if (req.method === 'DELETE') {
        state.uploads.delete(uploadId);
        return void res.writeHead(204).end();
      }
      if (req.method === 'POST') {
        // Parts are joined in the order the completion lists them, as S3 does.
        const listed = [...body.toString('utf8').matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
        if (listed.length === 0 || listed.some((n) => !upload.parts.has(n)))
          return error(400, 'InvalidPart', 'One or more of the specified parts could not be found.');
        bucket.set(key, { body: Buffer.concat(listed.map((n) => upload.parts.get(n)!)), type: upload.type });
        state.uploads.delete(uploadId);
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          xml(
            `<CompleteMultipartUploadResult><Bucket>${esc(bucketName!)}</Bucket><Key>${esc(key)}</Key><ETag>"fake"</ETag></CompleteMultipartUploadResult>`,
          ),
        );
      }
    }
    const obj = bucket.get(key);
    switch (req.method) {
      case 'PUT':
        bucket.set(key, { body, type: (req.headers['content-type'] as string | undefined) ?? null });
        return void res.writeHead(200, { etag: '"fake"' }).end();
      case 'GET':
      case 'HEAD':
        if (!obj) return error(404, 'NoSuchKey', 'The specified key does not exist.');
        res.writeHead(200, { 'content-length': obj.body.length, ...(obj.type ? { 'content-type': obj.type } : {}), etag: '"fake"' });
        return void res.end(req.method === 'GET' ? obj.body : undefined);
      case 'DELETE':
        bucket.delete(key);
        return void res.writeHead(204).end();
      default:
        return error(405, 'MethodNotAllowed', 'not supported by the fake');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
