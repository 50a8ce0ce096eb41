import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertEnvelope, chunkedRequest } from '../../core-api/test/support/raw-http.ts';
import { signRequest } from '../src/auth.ts';
import { SIGNED_BODY_READ_LIMIT } from '../src/signature-hook.ts';
import { startComposerTest, type ComposerTest } from './helpers.ts';

const SECRET = 'a'.repeat(40);
const OTHER = 'c'.repeat(40);
/** The composer's body limit (app.ts): a compose request is a few hundred bytes. */
const BODY_LIMIT = 16 * 1024;

// docs/composer.md: with signatures required, a caller without a valid signature learns only 401,
// whatever it sends. Nothing else may judge the request first: not the service-wide text guard (a
// NUL or a lone surrogate in the body or the query), not the body limit, not the JSON parser. A
// signed caller then gets the usual answers for the same requests. The JSON escapes below are sent
// as written, as a client's bytes.
describe('the composer checks the signature before it judges anything else', () => {
  let t: ComposerTest;
  let port: number;
  before(async () => {
    t = await startComposerTest({ env: { COMPOSER_AUTH_SECRETS: SECRET } });
    await t.svc.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.svc.app.server.address() as AddressInfo).port;
  });
  after(() => t?.close());

  const valid = { exercise: 'cmp-none', language: 'en', sets: [{ side: 'left', reps: 5 }], seed: 1 };
  const bodyWith = (exercise: string) => `{"exercise":"${exercise}","language":"en","sets":[{"side":"left","reps":5}],"seed":1}`;
  const oversized = bodyWith('x'.repeat(BODY_LIMIT));
  const send = async (payload: string, o: { secret?: string; url?: string } = {}) => {
    const url = o.url ?? '/v1/compose';
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (o.secret) headers.authorization = signRequest(o.secret, 'POST', url.split('?')[0]!, payload);
    const res = await t.svc.app.inject({ method: 'POST', url, payload, headers });
    return { status: res.statusCode, body: res.json() };
  };

  const cases: { name: string; payload: string; url?: string; signed: [number, string, string?] }[] = [
    { name: 'a NUL character in a JSON string', payload: bodyWith('a\\u0000b'), signed: [400, 'validation_error', 'exercise'] },
    { name: 'an unpaired surrogate in a JSON string', payload: bodyWith('\\ud800'), signed: [400, 'validation_error', 'exercise'] },
    { name: 'a NUL character in a JSON key', payload: `{"x\\u0000":1}`, signed: [400, 'validation_error', '_body'] },
    { name: 'a body over the body limit', payload: oversized, signed: [413, 'payload_too_large'] },
    {
      name: 'a NUL character in the query string',
      payload: JSON.stringify(valid),
      url: '/v1/compose?x=%00',
      signed: [422, 'validation_failed', 'x'],
    },
  ];

  for (const c of cases) {
    it(`${c.name}: 401 unsigned and badly signed, ${c.signed[0]} ${c.signed[1]} signed`, async () => {
      const unsigned = await send(c.payload, { ...(c.url ? { url: c.url } : {}) });
      assertEnvelope(unsigned, 401, 'unauthorized');
      const wrong = await send(c.payload, { secret: OTHER, ...(c.url ? { url: c.url } : {}) });
      assertEnvelope(wrong, 401, 'unauthorized');
      const signed = await send(c.payload, { secret: SECRET, ...(c.url ? { url: c.url } : {}) });
      assertEnvelope(signed, c.signed[0], c.signed[1]);
      if (c.signed[2]) assert.ok(signed.body.error.fields?.[c.signed[2]], JSON.stringify(signed.body));
    });
  }

  it('a body with no Content-Length: unsigned 401 however long it is, signed 413 once it is over the limit', async () => {
    const headers = { 'content-type': 'application/json' };
    const chunks = (n: number) => Array.from({ length: n }, () => 'x'.repeat(64 * 1024));
    // 8 MiB unsigned: refused from the header alone.
    assertEnvelope(await chunkedRequest(port, 'POST', '/v1/compose', headers, chunks(128)), 401, 'unauthorized');
    // A well-formed, fresh header of the wrong secret: the body has to be read to know; still 401.
    const wrong = { ...headers, authorization: signRequest(OTHER, 'POST', '/v1/compose', 'x'.repeat(64 * 1024)) };
    assertEnvelope(await chunkedRequest(port, 'POST', '/v1/compose', wrong, chunks(1)), 401, 'unauthorized');
    assertEnvelope(await chunkedRequest(port, 'POST', '/v1/compose', wrong, chunks(128)), 401, 'unauthorized');
    const body = oversized;
    const signed = { ...headers, authorization: signRequest(SECRET, 'POST', '/v1/compose', body) };
    assertEnvelope(
      await chunkedRequest(port, 'POST', '/v1/compose', signed, [body.slice(0, 1000), body.slice(1000)]),
      413,
      'payload_too_large',
    );
  });

  it('a body longer than the composer reads to verify a signature (1 MiB) cannot be verified: 401 even when signed', async () => {
    const body = bodyWith('x'.repeat(SIGNED_BODY_READ_LIMIT));
    const authorization = signRequest(SECRET, 'POST', '/v1/compose', body);
    const headers = { 'content-type': 'application/json', authorization };
    // Declared too long (Content-Length): refused without reading it.
    const declared = await t.svc.app.inject({ method: 'POST', url: '/v1/compose', payload: body, headers });
    assertEnvelope({ status: declared.statusCode, body: declared.json() }, 401, 'unauthorized');
    // Found too long while reading (no Content-Length).
    assertEnvelope(
      await chunkedRequest(port, 'POST', '/v1/compose', headers, [body.slice(0, 1000), body.slice(1000)]),
      401,
      'unauthorized',
    );
    // Just under it, the signature verifies and the body limit answers.
    const under = bodyWith('x'.repeat(SIGNED_BODY_READ_LIMIT - 200));
    const underHeaders = { 'content-type': 'application/json', authorization: signRequest(SECRET, 'POST', '/v1/compose', under) };
    assertEnvelope(await chunkedRequest(port, 'POST', '/v1/compose', underHeaders, [under]), 413, 'payload_too_large');
  });

  it('an unknown route answers 404 whatever its body: the parser judges bodies of routes only', async () => {
    for (const [payload, type] of [
      ['hi', 'text/plain'],
      ['{not json', 'application/json'],
    ]) {
      const res = await t.svc.app.inject({ method: 'POST', url: '/v1/no-such-route', payload, headers: { 'content-type': type } });
      assertEnvelope({ status: res.statusCode, body: res.json() }, 404, 'not_found');
    }
  });

  it('a signed body that is not JSON, or not declared as JSON: 400 invalid_body, 415; unsigned: 401', async () => {
    for (const [payload, type, status, code] of [
      ['{not json', 'application/json', 400, 'invalid_body'],
      ['exercise=x', 'text/plain', 415, 'unsupported_media_type'],
    ] as const) {
      const unsigned = await t.svc.app.inject({ method: 'POST', url: '/v1/compose', payload, headers: { 'content-type': type } });
      assertEnvelope({ status: unsigned.statusCode, body: unsigned.json() }, 401, 'unauthorized');
      const authorization = signRequest(SECRET, 'POST', '/v1/compose', payload);
      const res = await t.svc.app.inject({ method: 'POST', url: '/v1/compose', payload, headers: { 'content-type': type, authorization } });
      assertEnvelope({ status: res.statusCode, body: res.json() }, status, code);
    }
  });
});
