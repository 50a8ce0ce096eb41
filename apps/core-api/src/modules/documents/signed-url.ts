import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * Download links of documents on the folder store (docs/documents.md): the API serves
 * `/v1/public/documents/<id>/<expires>/<signature>/<file name>`, where the signature is
 * HMAC-SHA256(key, "document:<id>:<expires>") in base64url. It is bound to the path (the id and the
 * expiry it covers are the path's own segments), carries no query string, and the access log redacts the
 * signature segment (packages/http-kit/src/logging.ts). The key is derived from MASTER_KEYS; links
 * signed before a rotation stay valid until they expire.
 */

export const SIGNED_PATH_PREFIX = '/v1/public/documents';

const mac = (key: Buffer, id: string, expires: number) => createHmac('sha256', key).update(`document:${id}:${expires}`).digest('base64url');

export function signDocumentPath(keys: Buffer[], id: string, expires: number, filename: string): string {
  return `${SIGNED_PATH_PREFIX}/${id}/${expires}/${mac(keys[0]!, id, expires)}/${encodeURIComponent(filename)}`;
}

/** Whether the signature covers this id and expiry under any key, and the link has not expired. */
export function verifyDocumentPath(keys: Buffer[], id: string, expires: string, signature: string, nowSeconds: number): boolean {
  if (!/^\d{1,12}$/.test(expires) || Number(expires) < nowSeconds) return false;
  const given = Buffer.from(signature, 'base64url');
  return keys.some((k) => {
    const want = Buffer.from(mac(k, id, Number(expires)), 'base64url');
    return given.length === want.length && timingSafeEqual(given, want);
  });
}

/** A file name for the download: the title in safe characters. */
export function downloadName(title: string): string {
  const base = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._ -]+/g, '')
    .trim()
    .replace(/\s+/g, '-')
    .slice(0, 80);
  return `${base || 'document'}.pdf`;
}
