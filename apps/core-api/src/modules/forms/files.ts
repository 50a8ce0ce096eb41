import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { AssetStore } from '@clinic/assets';
import type { Queryable } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import { audit, emit } from '../custom-fields/access.ts';
import type { Actor } from '../../platform/actor.ts';
import * as q from './queries.ts';
import { formNotFound, formSigned, loadForm } from './service.ts';

type OrgActor = Actor & { orgId: string; patientCaller: boolean };
export type InTx = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;

/** Leading bytes of each accepted type: the declared type must match what the bytes are. */
const MAGIC: Record<string, (b: Buffer) => boolean> = {
  'application/pdf': (b) => b.subarray(0, 5).toString('latin1') === '%PDF-',
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  'text/plain': (b) => !b.includes(0) && Buffer.from(b.toString('utf8'), 'utf8').equals(b),
};

/** A UUIDv7 (spec 2.1): the object key is chosen before the row exists. */
function uuidV7(): string {
  const b = randomBytes(16);
  b.writeUIntBE(Date.now(), 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const fileTooLarge = (max: number) => new AppError(413, 'file_too_large', `A form file may hold at most ${max} bytes.`);

/**
 * What @fastify/multipart or busboy threw while reading an upload, as the caller's error: 413 for a
 * limit, 400 invalid_body for a message that is not well-formed multipart (busboy's errors carry no
 * code, only these messages). Anything else is not the body's fault and stays as it is.
 */
export function uploadProblem(err: unknown, maxBytes: number): AppError | null {
  const e = err as { code?: string; message?: string };
  if (e.code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(maxBytes);
  if (e.code === 'FST_PARTS_LIMIT' || e.code === 'FST_FILES_LIMIT' || e.code === 'FST_FIELDS_LIMIT') {
    return new AppError(413, 'payload_too_large', `Send one file in the field "file" and at most a few other fields (${e.message}).`);
  }
  if (
    e.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE' ||
    e.code === 'FST_PROTO_VIOLATION' ||
    /^(Multipart: |Unexpected end of|Malformed part header)/.test(e.message ?? '')
  ) {
    return errors.invalidBody(
      `The multipart body is malformed (${e.message}); send multipart/form-data with its boundary and one file in the field "file".`,
    );
  }
  return null;
}
const unsupported = (types: string[]) =>
  new AppError(
    415,
    'unsupported_media_type',
    `Form files must be one of: ${types.join(', ')}, and their bytes must match the declared type.`,
  );

/** A file name safe to store and to echo in Content-Disposition: no paths, no control or quote characters. */
export function safeFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this strips.
    .replace(/[\u0000-\u001f\u007f"\\]/g, '')
    .trim()
    .slice(0, 255);
  return clean || 'file';
}

export interface Upload {
  filename: string;
  mimetype: string;
  file: Readable & { truncated?: boolean };
}

/** Reads the stream whole (bounded by the multipart fileSize limit), hashing as it goes. */
async function readUpload(upload: Upload, maxBytes: number): Promise<{ bytes: Buffer; sha256: string }> {
  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of upload.file) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw fileTooLarge(maxBytes);
    hash.update(chunk as Buffer);
    chunks.push(chunk as Buffer);
  }
  if (upload.file.truncated) throw fileTooLarge(maxBytes);
  return { bytes: Buffer.concat(chunks), sha256: hash.digest('hex') };
}

/** The form must be visible to the caller, live and unsigned before any byte is stored. */
async function writableForm(tx: Queryable, orgId: string, formId: string) {
  const { row } = await loadForm(tx, orgId, formId);
  if (row.status === 'signed') throw formSigned();
  return row;
}

/**
 * POST /v1/forms/{id}/files: checked (form unsigned, size, declared type and magic bytes), stored in
 * the asset store, then recorded in a transaction whose trigger refuses a form signed meanwhile; the
 * stored object is removed again when that transaction fails.
 */
export async function addFile(
  inTx: InTx,
  assets: AssetStore,
  limits: { maxBytes: number; types: string[] },
  actor: OrgActor,
  formId: string,
  getUpload: () => Promise<Upload | undefined>,
) {
  await inTx((tx) => writableForm(tx, actor.orgId, formId));
  const upload = await getUpload();
  if (!upload) throw errors.validation({ file: 'send one file in the multipart field "file"' });
  const type = upload.mimetype.toLowerCase().split(';')[0]!.trim();
  if (!limits.types.includes(type)) {
    upload.file.resume();
    throw unsupported(limits.types);
  }
  const { bytes, sha256 } = await readUpload(upload, limits.maxBytes);
  if (MAGIC[type] && !MAGIC[type]!(bytes)) throw unsupported(limits.types);
  const id = uuidV7();
  const key = `orgs/${actor.orgId}/forms/${formId}/${id}`;
  await assets.put(key, bytes, { contentType: type });
  try {
    return await inTx(async (tx) => {
      await writableForm(tx, actor.orgId, formId);
      const row = await q.insertFile(tx, actor.orgId, {
        id,
        form_id: formId,
        asset_key: key,
        filename: safeFilename(upload.filename),
        content_type: type,
        size_bytes: bytes.length,
        sha256,
        uploaded_by_principal_id: actor.ctx.principalId,
      });
      await audit(tx, actor, 'form.file_added', 'form', formId, {
        file_id: id,
        content_type: type,
        size_bytes: bytes.length,
        sha256,
      });
      await emit(tx, actor.orgId, 'form.file_added', { id: formId, file_id: id });
      return row;
    });
  } catch (err) {
    await assets.delete(key).catch(() => undefined);
    throw err;
  }
}

export async function listFormFiles(tx: Queryable, orgId: string, formId: string) {
  await loadForm(tx, orgId, formId);
  return q.listFiles(tx, orgId, formId);
}

export async function openFormFile(tx: Queryable, assets: AssetStore, orgId: string, formId: string, fileId: string) {
  await loadForm(tx, orgId, formId);
  const row = await q.findFile(tx, orgId, formId, fileId);
  if (!row) throw errors.notFound('No file with this id on this form.');
  const body = await assets.get(row.asset_key);
  if (!body) throw errors.notFound('The file is missing from the asset store.');
  return { row, body };
}

/** DELETE /v1/forms/{id}/files/{fileId}: only while the form is unsigned (409 form_signed). The object goes after commit. */
export async function removeFile(inTx: InTx, assets: AssetStore, actor: OrgActor, formId: string, fileId: string): Promise<void> {
  const key = await inTx(async (tx) => {
    const { row } = await loadForm(tx, actor.orgId, formId, { forUpdate: true });
    if (row.status === 'signed') throw formSigned();
    const file = await q.findFile(tx, actor.orgId, formId, fileId);
    if (!file) throw errors.notFound('No file with this id on this form.');
    if (!(await q.deleteFile(tx, actor.orgId, formId, fileId))) throw formNotFound();
    await audit(tx, actor, 'form.file_removed', 'form', formId, { file_id: fileId, sha256: file.sha256 });
    await emit(tx, actor.orgId, 'form.file_removed', { id: formId, file_id: fileId });
    return file.asset_key;
  });
  await assets.delete(key);
}
