import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import type { AssetStore } from '@clinic/assets';
import type { Database, Queryable } from '@clinic/db';
import { AppError, errors } from '@clinic/http-kit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/*
 * Files that patients and staff attach to a record (form files, appointment files): one store, one set
 * of limits (FORM_FILE_MAX_BYTES, FORM_FILE_TYPES), one sniffing of the bytes, one way to read a
 * multipart upload, answer a download and sweep objects no row names. A module says only which record
 * a file belongs to, who may attach it, and how its row is written.
 */

export type InTx = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;
export interface FileLimits {
  maxBytes: number;
  types: string[];
}

/** Leading bytes of each accepted type: the declared type must match what the bytes are. */
const MAGIC: Record<string, (b: Buffer) => boolean> = {
  'application/pdf': (b) => b.subarray(0, 5).toString('latin1') === '%PDF-',
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  'text/plain': (b) => !b.includes(0) && Buffer.from(b.toString('utf8'), 'utf8').equals(b),
};

/** The organization and record parts of a key, exactly: the sweeps cast them to uuid. */
const UUID_TEXT = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const lastV7 = { ms: 0, seq: 0 };

/** A UUIDv7 (spec 2.1): the object key is chosen before the row exists, and the sweep reads its age from it. */
export function uuidV7(): string {
  // Monotonic in this process like app.uuid_v7(): a 12-bit counter in rand_a within one millisecond.
  let ms = Date.now();
  let seq = 0;
  if (ms <= lastV7.ms) {
    ms = lastV7.ms;
    seq = lastV7.seq + 1;
    if (seq > 0xfff) {
      ms += 1;
      seq = 0;
    }
  }
  lastV7.ms = ms;
  lastV7.seq = seq;
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (seq >> 8);
  b[7] = seq & 0xff;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const fileTooLarge = (max: number) => new AppError(413, 'file_too_large', `A file may hold at most ${max} bytes.`);

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
  new AppError(415, 'unsupported_media_type', `Files must be one of: ${types.join(', ')}, and their bytes must match the declared type.`);

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

/** Multipart for the routes of one Fastify scope (the others keep accepting JSON alone): one file, few fields. */
export async function acceptUploads(scope: FastifyInstance, limits: FileLimits): Promise<void> {
  await scope.register(multipart, {
    limits: { fileSize: limits.maxBytes, files: 1, fields: 5, parts: 6, headerPairs: 200 },
    throwFileSizeLimit: true,
  });
}

/** What was stored: the row a module writes names these. */
export interface StoredFile {
  id: string;
  asset_key: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
}

export interface AddFileSteps<T, C> {
  /** The object key of a new file id, under `orgs/<org>/<segment>/<record>/` (the sweep's pattern). */
  keyOf: (fileId: string) => string;
  /** Whether the record takes a file now (throws if not): run before any byte is read, and again before `record`. */
  check: (tx: Queryable) => Promise<C>;
  /** Writes the file's row (and its audit entry and event) in the transaction that commits it, with what `check` found. */
  record: (tx: Queryable, file: StoredFile, checked: C) => Promise<T>;
}

/**
 * An upload: the record is checked, the declared type, size and magic bytes are checked, the bytes are
 * stored in the asset store, then the row is written in a transaction that checks the record again; the
 * stored object is removed again when that transaction fails (the orphan sweep catches a crash between).
 */
export async function addFile<T, C>(
  inTx: InTx,
  assets: AssetStore,
  limits: FileLimits,
  getUpload: () => Promise<Upload | undefined>,
  steps: AddFileSteps<T, C>,
): Promise<T> {
  await inTx(steps.check);
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
  const key = steps.keyOf(id);
  await assets.put(key, bytes, { contentType: type });
  const file: StoredFile = {
    id,
    asset_key: key,
    filename: safeFilename(upload.filename),
    content_type: type,
    size_bytes: bytes.length,
    sha256,
  };
  try {
    return await inTx(async (tx) => steps.record(tx, file, await steps.check(tx)));
  } catch (err) {
    await assets.delete(key).catch(() => undefined);
    throw err;
  }
}

/** A removal: the transaction deletes the row and returns its object key; the object goes after commit. */
export async function removeFile(inTx: InTx, assets: AssetStore, remove: (tx: Queryable) => Promise<string>): Promise<void> {
  const key = await inTx(remove);
  await assets.delete(key);
}

/**
 * The upload of a route: 400 unless the request is multipart; its one file to `add`; what multipart
 * parsing threw as the caller's error (400 invalid_body, 413).
 */
export async function receiveUpload<T>(
  request: FastifyRequest,
  limits: FileLimits,
  add: (getUpload: () => Promise<Upload | undefined>) => Promise<T>,
): Promise<T> {
  if (!request.isMultipart()) throw errors.validation({ file: 'send multipart/form-data with one file in the field "file"' });
  try {
    return await add(async () => {
      const part = await request.file();
      if (part && part.fieldname !== 'file') {
        part.file.resume();
        throw errors.validation({ file: `send the file in the multipart field "file" (not "${part.fieldname.slice(0, 50)}")` });
      }
      return part ? { filename: part.filename, mimetype: part.mimetype, file: part.file } : undefined;
    });
  } catch (err) {
    throw uploadProblem(err, limits.maxBytes) ?? err;
  }
}

/** A download: an attachment of its stored type and size, never sniffed by the browser. */
export function sendFile(
  reply: FastifyReply,
  row: { filename: string; content_type: string; size_bytes: number },
  body: unknown,
): FastifyReply {
  return reply
    .header('content-type', row.content_type)
    .header('content-length', String(row.size_bytes))
    .header(
      'content-disposition',
      `attachment; filename="${row.filename.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(row.filename)}`,
    )
    .header('x-content-type-options', 'nosniff')
    .send(body as never);
}

/** Objects younger than this may belong to an upload whose transaction has not committed yet. */
export const ORPHAN_GRACE_MS = 60 * 60 * 1000;

export interface SweepDeps {
  db: Database;
  assets: AssetStore;
  logger: Logger;
}

/** Milliseconds since the epoch from a UUIDv7 file id (its first 48 bits). */
const createdAtOf = (m: RegExpExecArray) => parseInt(m[1]! + m[2]!, 16);

/**
 * Removes the objects of one kind of file (`orgs/<org>/<segment>/<record>/<file id>`) that no row names
 * (an upload cut short between storing the object and committing its row, a row deleted with its record
 * or by an erasure), once they are older than the grace period. `known` says which keys rows name.
 * Idempotent: a second run finds nothing. Returns the keys removed.
 */
export async function sweepOrphanFiles(
  deps: SweepDeps,
  kind: { segment: string; known: (tx: Queryable, keys: string[]) => Promise<string[]> },
  now = Date.now(),
): Promise<string[]> {
  const pattern = new RegExp(
    `^orgs/${UUID_TEXT}/${kind.segment}/${UUID_TEXT}/([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`,
  );
  const candidates: string[] = [];
  for (const key of await deps.assets.list('orgs/')) {
    const m = pattern.exec(key);
    if (m && now - createdAtOf(m) > ORPHAN_GRACE_MS) candidates.push(key);
  }
  if (!candidates.length) return [];
  const rows = await deps.db.withScope({ role: 'app_bypass', principalId: null, orgId: null, permissions: [] }, (tx) =>
    kind.known(tx, candidates),
  );
  const known = new Set(rows);
  const orphans = candidates.filter((k) => !known.has(k));
  for (const key of orphans) await deps.assets.delete(key);
  if (orphans.length) deps.logger.info({ count: orphans.length, kind: kind.segment }, 'removed orphan files');
  return orphans;
}
