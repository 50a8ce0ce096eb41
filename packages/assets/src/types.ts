import type { Readable } from 'node:stream';

/** What a stored object says about itself. */
export interface AssetInfo {
  size: number;
  contentType: string | null;
}

/**
 * The asset store (architecture section 1): a folder on the embedded default, an S3-compatible bucket in production.
 * Keys are relative paths of `[A-Za-z0-9._-]` segments joined by `/` (see assertKey); the store never
 * interprets them. Writes are atomic: a reader sees the old object or the new one, never half of one.
 */
export interface AssetStore {
  readonly kind: 'local' | 's3';
  put(key: string, body: Buffer | Readable, opts?: { contentType?: string }): Promise<AssetInfo>;
  /** The object's bytes as a stream, or null when there is no such key. */
  get(key: string): Promise<Readable | null>;
  head(key: string): Promise<AssetInfo | null>;
  /** Keys under a prefix (recursively), sorted. */
  list(prefix: string): Promise<string[]>;
  /** Removes the key; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * A URL that reads the object without credentials until it expires (S3 presigned GET), with the
   * answer's Content-Type and Content-Disposition set; the folder store has none (the API signs its own).
   * Null: none for this object now (a store that forwards to the folder store at the moment).
   */
  signedGetUrl?(key: string, opts: { expiresInSeconds: number; contentType?: string; contentDisposition?: string }): Promise<string | null>;
  /** Releases connections (the S3 client's sockets); the folder store has none. */
  close?(): void;
}

export class InvalidAssetKeyError extends Error {
  constructor(key: string) {
    super(`invalid asset key ${JSON.stringify(key)}: use segments of A-Z a-z 0-9 . _ - joined by /, no "..", no leading /`);
  }
}

const SEGMENT = /^[A-Za-z0-9._-]{1,200}$/;

/** Refuses keys that could escape the store's root (`..`, absolute paths, empty segments) or carry odd characters. */
export function assertKey(key: string, { prefix = false } = {}): void {
  if (prefix && key === '') return;
  const parts = (prefix && key.endsWith('/') ? key.slice(0, -1) : key).split('/');
  if (key.length > 1024 || parts.some((p) => !SEGMENT.test(p) || p === '.' || p === '..')) throw new InvalidAssetKeyError(key);
}
