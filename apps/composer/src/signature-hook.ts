import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { errors } from '@clinic/http-kit';
import type { preParsingHookHandler } from 'fastify';
import { readSignatureHeader, verifySignature } from './auth.ts';

/**
 * The most a signed body is read to verify its signature: well above the composer's body limit, so
 * that a signed caller whose body is too large learns 413, and bounded, so that a caller with a
 * well-formed header cannot make the composer read forever. A longer body cannot be verified: 401.
 */
export const SIGNED_BODY_READ_LIMIT = 1024 * 1024;

/**
 * Reads the whole body (at most `readLimit` bytes), hashing it as it arrives and keeping its first
 * `keep` bytes: enough for the parser to parse it or to see that it is over the body limit. Null
 * when the body is longer than `readLimit` (the rest is left unread, as Fastify leaves a body over its limit).
 */
function hashBody(payload: Readable, keep: number, readLimit: number): Promise<{ hash: string; head: Buffer } | null> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    const head: Buffer[] = [];
    let kept = 0;
    let read = 0;
    const finish = (err: Error | null, value?: { hash: string; head: Buffer } | null) => {
      payload.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (err) reject(err);
      else resolve(value ?? null);
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > readLimit) return finish(null, null);
      hash.update(chunk);
      if (kept < keep) {
        const part = chunk.subarray(0, keep - kept);
        head.push(part);
        kept += part.length;
      }
    };
    const onEnd = () => finish(null, { hash: hash.digest('hex'), head: Buffer.concat(head) });
    const onError = (err: Error) => finish(err);
    const onClose = () => finish(new Error('the connection closed before the request body arrived'));
    payload.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * A route's preParsing hook that verifies the request signature (auth.ts) before anything else
 * judges the request: the body limit and the JSON parser (both after preParsing) and the
 * service-wide text guard and schema validation (preValidation). A caller without a valid signature
 * learns only 401, whatever its body or query string holds; a signed one then gets 400, 413, 415 or
 * 422 like any caller (docs/composer.md). Null `secrets` (development only): no check.
 */
export function requireSignature(secrets: readonly string[] | null, maxSkewSeconds: number): preParsingHookHandler {
  return async (request, _reply, payload) => {
    if (!secrets) return payload;
    // The header alone refuses most callers, before a byte of the body is read.
    const claim = readSignatureHeader(request.headers.authorization, maxSkewSeconds);
    const bodyLimit = request.routeOptions.bodyLimit ?? SIGNED_BODY_READ_LIMIT;
    const declared = Number(request.headers['content-length']);
    const tooLong = () =>
      errors.unauthorized(`The request signature cannot be verified: the body is over ${SIGNED_BODY_READ_LIMIT} bytes.`);
    if (declared > SIGNED_BODY_READ_LIMIT) throw tooLong();
    const body = await hashBody(payload, bodyLimit + 1, SIGNED_BODY_READ_LIMIT);
    if (!body) throw tooLong();
    verifySignature(secrets, claim, { method: request.method, path: request.url.split('?')[0]!, bodyHash: body.hash });
    // What the parser reads: the whole body, or enough of it to answer 413.
    return Readable.from(body.head.length ? [body.head] : [], { objectMode: false });
  };
}
