import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Readable } from 'node:stream';
import { assertKey, type AssetInfo, type AssetStore } from './types.ts';

export interface S3AssetStoreOptions {
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, a local wire-format server); unset: AWS for the region. */
  endpointUrl?: string | null;
  /** `https://host/<bucket>/<key>` instead of `https://<bucket>.host/<key>` (MinIO and most self-hosted stores). */
  forcePathStyle?: boolean;
  /** Static keys; unset: the AWS SDK's default chain (instance or task role, web identity, shared files). */
  credentials?: { accessKeyId: string; secretAccessKey: string } | null;
  /** Namespace inside the bucket (`staging/`), so several deployments can share one bucket. */
  keyPrefix?: string;
  /** Streams are uploaded in parts of this size (S3's minimum is 5 MiB); a body that fits in one part is a single PUT. */
  partSizeBytes?: number;
}

export const MIN_PART_BYTES = 5 * 1024 * 1024;

/** 404s mean "no such object"; anything else (no bucket, bad keys, 5xx) is a fault the caller must see. */
const notFound = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.$metadata?.httpStatusCode === 404 && e.name !== 'NoSuchBucket';
};

/**
 * An S3-compatible bucket as the asset store (production). Every write is one PUT or one completed
 * multipart upload, both atomic in S3: readers see the old object or the new one. The content type is
 * the object's own Content-Type.
 */
export function createS3AssetStore(opts: S3AssetStoreOptions): AssetStore & { readonly client: S3Client } {
  // `staging` and `staging/` alike name the folder `staging/`.
  const prefix = opts.keyPrefix ? opts.keyPrefix.replace(/\/*$/, '/') : '';
  if (prefix) assertKey(prefix.slice(0, -1));
  const partSize = Math.max(opts.partSizeBytes ?? 8 * 1024 * 1024, MIN_PART_BYTES);
  const client = new S3Client({
    region: opts.region,
    ...(opts.endpointUrl ? { endpoint: opts.endpointUrl } : {}),
    forcePathStyle: opts.forcePathStyle ?? false,
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    // Checksums only where S3 requires them: since 2025 the SDK adds CRC headers (and aws-chunked
    // trailers on streamed bodies) to every upload, which several S3-compatible stores reject.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const Bucket = opts.bucket;
  const full = (key: string) => prefix + key;

  async function putStream(Key: string, body: Readable, ContentType: string | undefined): Promise<number> {
    // S3 refuses a PUT of unknown length, so the stream is cut into parts; memory holds one part at a time.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let uploadId: string | null = null;
    const parts: { ETag: string; PartNumber: number }[] = [];
    let total = 0;
    const flush = async (chunk: Buffer) => {
      if (!uploadId) {
        const created = await client.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType }));
        uploadId = created.UploadId!;
      }
      const PartNumber = parts.length + 1;
      const res = await client.send(
        new UploadPartCommand({ Bucket, Key, UploadId: uploadId, PartNumber, Body: chunk, ContentLength: chunk.length }),
      );
      parts.push({ ETag: res.ETag!, PartNumber });
    };
    try {
      for await (const c of body) {
        const buf = Buffer.isBuffer(c) ? c : Buffer.from(c as Uint8Array);
        pending.push(buf);
        pendingBytes += buf.length;
        total += buf.length;
        while (pendingBytes >= partSize) {
          const all = Buffer.concat(pending);
          await flush(all.subarray(0, partSize));
          pending = [all.subarray(partSize)];
          pendingBytes = all.length - partSize;
        }
      }
      const rest = Buffer.concat(pending);
      if (!uploadId) {
        await client.send(new PutObjectCommand({ Bucket, Key, Body: rest, ContentLength: rest.length, ContentType }));
        return total;
      }
      if (rest.length) await flush(rest);
      await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
      return total;
    } catch (err) {
      // An unfinished upload is invisible to readers but still billed: abort it.
      if (uploadId) await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => undefined);
      throw err;
    }
  }

  return {
    kind: 's3',
    client,
    async signedGetUrl(key, o) {
      assertKey(key);
      const command = new GetObjectCommand({
        Bucket,
        Key: full(key),
        ResponseContentType: o.contentType,
        ResponseContentDisposition: o.contentDisposition,
      });
      return getSignedUrl(client, command, { expiresIn: o.expiresInSeconds });
    },
    async put(key, body, o = {}) {
      assertKey(key);
      let size: number;
      if (Buffer.isBuffer(body)) {
        await client.send(
          new PutObjectCommand({ Bucket, Key: full(key), Body: body, ContentLength: body.length, ContentType: o.contentType }),
        );
        size = body.length;
      } else {
        size = await putStream(full(key), body, o.contentType);
      }
      return { size, contentType: o.contentType ?? null };
    },
    async get(key) {
      assertKey(key);
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: full(key) }));
        return res.Body as Readable;
      } catch (err) {
        if (notFound(err)) return null;
        throw err;
      }
    },
    async head(key) {
      assertKey(key);
      try {
        const res = await client.send(new HeadObjectCommand({ Bucket, Key: full(key) }));
        return { size: res.ContentLength ?? 0, contentType: res.ContentType ?? null } satisfies AssetInfo;
      } catch (err) {
        if (notFound(err)) return null;
        throw err;
      }
    },
    async list(p) {
      assertKey(p, { prefix: true });
      const out: string[] = [];
      let ContinuationToken: string | undefined;
      do {
        const res = await client.send(new ListObjectsV2Command({ Bucket, Prefix: full(p), ContinuationToken }));
        for (const o of res.Contents ?? []) if (o.Key) out.push(o.Key.slice(prefix.length));
        ContinuationToken = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (ContinuationToken);
      return out.sort();
    },
    async delete(key) {
      assertKey(key);
      await client.send(new DeleteObjectCommand({ Bucket, Key: full(key) }));
    },
    close() {
      client.destroy();
    },
  };
}
