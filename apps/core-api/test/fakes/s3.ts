import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sigv4Credential } from './aws-auth.ts';

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * A local server speaking the S3 REST/XML wire format, path style (`/<bucket>/<key>`): HEAD bucket,
 * PUT/GET/HEAD/DELETE object and ListObjectsV2. Objects live in memory.
 */
export async function startFakeS3(opts: { keys: string[]; region: string; buckets: string[] }) {
  const state = { keys: new Set(opts.keys), region: opts.region, buckets: new Map(opts.buckets.map((b) => [b, new Map<string, { body: Buffer; type: string | null }>()])), requests: 0 };
  const server = createServer(async (req, res) => {
    state.requests++;
    const error = (status: number, code: string, message: string) => {
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(req.method === 'HEAD' ? undefined : xml(`<Error><Code>${code}</Code><Message>${esc(message)}</Message></Error>`));
    };
    const body = await readBody(req);
    const cred = sigv4Credential(req);
    if (!cred || !state.keys.has(cred.accessKeyId)) return error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
    const url = new URL(req.url ?? '/', 'http://x');
    const [, bucketName, ...rest] = url.pathname.split('/');
    const key = rest.map(decodeURIComponent).join('/');
    const bucket = state.buckets.get(decodeURIComponent(bucketName ?? ''));
    if (!bucket) return error(404, 'NoSuchBucket', 'The specified bucket does not exist');
    if (!key) {
      if (req.method === 'HEAD') return void res.writeHead(200, { 'x-amz-bucket-region': state.region }).end();
      if (req.method === 'GET' && url.searchParams.get('list-type') === '2') {
        const prefix = url.searchParams.get('prefix') ?? '';
        const keys = [...bucket.keys()].filter((k) => k.startsWith(prefix)).sort();
        const contents = keys.map((k) => `<Contents><Key>${esc(k)}</Key><Size>${bucket.get(k)!.body.length}</Size></Contents>`).join('');
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(xml(`<ListBucketResult><Name>${esc(bucketName!)}</Name><Prefix>${esc(prefix)}</Prefix><KeyCount>${keys.length}</KeyCount><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`));
      }
      return error(405, 'MethodNotAllowed', 'not supported by the fake');
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
  return Object.assign(state, { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
}
