import type { IncomingMessage } from 'node:http';

/**
 * The access key and region of a SigV4 Authorization header
 * (`AWS4-HMAC-SHA256 Credential=AKID/20260101/eu-central-1/ses/aws4_request, ...`), or of a presigned URL's
 * `X-Amz-Credential` query parameter. The fakes accept a request when its key id is one they know and the
 * region is theirs; they do not recompute signatures.
 */
export function sigv4Credential(req: IncomingMessage): { accessKeyId: string; region: string; service: string } | null {
  const presigned = new URL(req.url ?? '/', 'http://x').searchParams.get('X-Amz-Credential');
  const credential = req.headers.authorization ? String(req.headers.authorization) : presigned ? `Credential=${presigned}` : '';
  const m = /Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(credential);
  return m ? { accessKeyId: m[1]!, region: m[2]!, service: m[3]! } : null;
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
