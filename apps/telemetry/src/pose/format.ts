import { endianness } from 'node:os';
import { gunzipSync, gzipSync } from 'node:zlib';

if (endianness() !== 'LE') throw new Error('the pose decoder assumes a little-endian host');

/*
 * Pose batch wire format, version 1 (docs/telemetry.md). Little-endian throughout; the body is gzip of:
 *
 *   offset size  field
 *   0      4     magic "PBT1" (0x50 0x42 0x54 0x31)
 *   4      1     version = 1
 *   5      1     landmarks per frame = 33
 *   6      2     flags = 0 (reserved)
 *   8      4     sequence number (u32, 0-based, one batch per second)
 *   12     2     frame count n (1..MAX_FRAMES)
 *   14     2     reserved = 0
 *   16     4     t_first_ms (u32, ms since the session started) = timestamps[0]
 *   20     4     t_last_ms  (u32) = timestamps[n-1]
 *   24     4n    timestamps (u32 ms since session start, strictly increasing)
 *   24+4n  528n  frames: 33 landmarks x (x, y, z, visibility) as float32
 *
 * Coordinates are MediaPipe's world landmarks (metres, origin between the hips), so joint angles are
 * metric and do not depend on the camera's aspect ratio. Visibility is in [0, 1].
 */
export const MAGIC = 0x31544250; // "PBT1" read as u32 LE
export const VERSION = 1;
export const LANDMARKS = 33;
export const FRAME_BYTES = LANDMARKS * 4 * 4;
export const HEADER_BYTES = 24;
export const MAX_FRAMES = 120;
/** The largest valid batch once decompressed: gunzip stops there, so a zip bomb costs nothing. */
export const MAX_RAW_BYTES = HEADER_BYTES + MAX_FRAMES * (4 + FRAME_BYTES);
/** Coordinates beyond this many metres are not a body in front of a camera. */
const MAX_COORD = 10;

export interface PoseBatch {
  seq: number;
  /** ms since session start, one per frame. */
  timestamps: Uint32Array;
  /** n * 33 * 4 floats: x, y, z, visibility per landmark per frame. */
  data: Float32Array;
}

export class PoseFormatError extends Error {}

export function encodeBatch(b: { seq: number; timestamps: ArrayLike<number>; data: ArrayLike<number> }): Buffer {
  const n = b.timestamps.length;
  const buf = Buffer.alloc(HEADER_BYTES + n * (4 + FRAME_BYTES));
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt8(VERSION, 4);
  buf.writeUInt8(LANDMARKS, 5);
  buf.writeUInt32LE(b.seq, 8);
  buf.writeUInt16LE(n, 12);
  buf.writeUInt32LE(b.timestamps[0] ?? 0, 16);
  buf.writeUInt32LE(b.timestamps[n - 1] ?? 0, 20);
  for (let i = 0; i < n; i++) buf.writeUInt32LE(b.timestamps[i]!, HEADER_BYTES + 4 * i);
  const off = HEADER_BYTES + 4 * n;
  for (let i = 0; i < b.data.length; i++) buf.writeFloatLE(b.data[i]!, off + 4 * i);
  return buf;
}

export function encodeBatchGzip(b: Parameters<typeof encodeBatch>[0]): Buffer {
  return gzipSync(encodeBatch(b), { level: 6 });
}

/** Gunzips with a hard output limit: a body that inflates past a valid batch is refused. */
export function gunzipBatch(body: Buffer): Buffer {
  if (body.length < 18 || body[0] !== 0x1f || body[1] !== 0x8b)
    throw new PoseFormatError('the body is not gzip data (magic 1f 8b missing)');
  let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    inflated = gunzipSync(body, { maxOutputLength: MAX_RAW_BYTES, info: true }) as unknown as typeof inflated;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || (err as RangeError).name === 'RangeError') {
      throw new PoseFormatError(`the batch inflates past ${MAX_RAW_BYTES} bytes (${MAX_FRAMES} frames at most)`);
    }
    throw new PoseFormatError('the gzip data is corrupt or truncated');
  }
  // zlib stops quietly at bytes after the last gzip member (zero padding, say). The replay is the
  // stored bodies concatenated, where such bytes would end the stream early and lose every later
  // batch: so the body must be gzip members and nothing else.
  if (inflated.engine.bytesWritten !== body.length) {
    throw new PoseFormatError(`${body.length - inflated.engine.bytesWritten} bytes follow the gzip data; send the gzip member(s) only`);
  }
  return inflated.buffer;
}

/** Strict decoding: every length, header field, timestamp and float is checked. */
export function decodeBatch(raw: Buffer): PoseBatch {
  if (raw.length < HEADER_BYTES)
    throw new PoseFormatError(`truncated: ${raw.length} bytes is shorter than the ${HEADER_BYTES}-byte header`);
  if (raw.readUInt32LE(0) !== MAGIC) throw new PoseFormatError('bad magic: a batch starts with "PBT1"');
  if (raw.readUInt8(4) !== VERSION)
    throw new PoseFormatError(`unsupported version ${raw.readUInt8(4)}; this service reads version ${VERSION}`);
  if (raw.readUInt8(5) !== LANDMARKS) throw new PoseFormatError(`landmarks per frame must be ${LANDMARKS}, got ${raw.readUInt8(5)}`);
  if (raw.readUInt16LE(6) !== 0 || raw.readUInt16LE(14) !== 0) throw new PoseFormatError('reserved header fields must be 0');
  const seq = raw.readUInt32LE(8);
  const n = raw.readUInt16LE(12);
  if (n < 1 || n > MAX_FRAMES) throw new PoseFormatError(`frame count must be 1 to ${MAX_FRAMES}, got ${n}`);
  const expected = HEADER_BYTES + n * (4 + FRAME_BYTES);
  if (raw.length < expected) throw new PoseFormatError(`truncated: ${n} frames need ${expected} bytes, got ${raw.length}`);
  if (raw.length > expected) throw new PoseFormatError(`${raw.length - expected} trailing bytes after ${n} frames`);
  const timestamps = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    timestamps[i] = raw.readUInt32LE(HEADER_BYTES + 4 * i);
    if (i > 0 && timestamps[i]! <= timestamps[i - 1]!) throw new PoseFormatError(`timestamps must increase strictly (frame ${i})`);
  }
  if (raw.readUInt32LE(16) !== timestamps[0] || raw.readUInt32LE(20) !== timestamps[n - 1]) {
    throw new PoseFormatError('t_first_ms and t_last_ms must equal the first and last frame timestamps');
  }
  const off = HEADER_BYTES + 4 * n;
  // One copy into an aligned array (the Buffer's offset need not be a multiple of 4); the host is
  // little-endian (checked at load), so the bytes are the floats.
  const data = new Float32Array(n * LANDMARKS * 4);
  new Uint8Array(data.buffer).set(raw.subarray(off, expected));
  // Fast pass, one landmark at a time: every comparison with NaN is false, and ±Infinity is out of
  // range, so this one test refuses both (the ingest hot path; it was a third of decoding).
  for (let i = 0; i < data.length; i += 4) {
    const x = data[i]!;
    const y = data[i + 1]!;
    const z = data[i + 2]!;
    const v = data[i + 3]!;
    if (!(x >= -MAX_COORD && x <= MAX_COORD && y >= -MAX_COORD && y <= MAX_COORD && z >= -MAX_COORD && z <= MAX_COORD && v >= 0 && v <= 1))
      explainBadValue(data);
  }
  return { seq, timestamps, data };
}

/** The slow pass, only for a batch already known bad: which value, and why. */
function explainBadValue(data: Float32Array): never {
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (!Number.isFinite(v))
      throw new PoseFormatError(`non-finite value at frame ${Math.floor(i / (LANDMARKS * 4))}, landmark ${Math.floor(i / 4) % LANDMARKS}`);
    if (i % 4 === 3 ? v < 0 || v > 1 : Math.abs(v) > MAX_COORD) {
      throw new PoseFormatError(
        `value out of range at frame ${Math.floor(i / (LANDMARKS * 4))}, landmark ${Math.floor(i / 4) % LANDMARKS} (coordinates within ±${MAX_COORD} m, visibility 0..1)`,
      );
    }
  }
  throw new PoseFormatError('a value is out of range');
}

/** Replay blobs are the batches' gzip members concatenated in sequence order; this reads them back. */
export function decodeReplay(blob: Buffer): PoseBatch[] {
  const raw = gunzipSync(blob);
  const out: PoseBatch[] = [];
  let pos = 0;
  while (pos < raw.length) {
    const n = raw.readUInt16LE(pos + 12);
    const len = HEADER_BYTES + n * (4 + FRAME_BYTES);
    out.push(decodeBatch(raw.subarray(pos, pos + len)));
    pos += len;
  }
  return out;
}
