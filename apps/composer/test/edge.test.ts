import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertEnvelope, parseRaw, rawRequest } from '../../core-api/test/support/raw-http.ts';
import { signRequest } from '../src/auth.ts';
import { startComposerTest, type ComposerTest } from './helpers.ts';

const SECRET = 'a'.repeat(40);
// Sent as written: a client's bytes (JSON escapes of text no column can store).
const NUL = '\\u0000';
const LONE_HIGH = '\\ud800';
const LONE_LOW = '\\udc00';

const res = (r: { statusCode: number; body: string }) => ({ status: r.statusCode, body: JSON.parse(r.body) });
const rendersOf = async (t: ComposerTest) =>
  (await t.db.query<{ n: number }>('select count(*)::int as n from exercise_renders')).rows[0]!.n;
/** A compose body as raw JSON with `text` spliced into one place. */
const composeWith = (where: 'exercise' | 'language' | 'side' | 'key', text: string) => {
  const v = (field: string, normal: string) => (where === field ? `x${text}` : normal);
  const key = where === 'key' ? `,"k${text}":1` : '';
  return `{"exercise":"${v('exercise', 'cmp-none')}","language":"${v('language', 'en')}","sets":[{"side":"${v('side', 'left')}","reps":5}],"seed":1${key}}`;
};
const FIELD = { exercise: 'exercise', language: 'language', side: 'sets.0.side', key: '_body' } as const;

// Text no column can store is refused at the composer's edge like everywhere else (400 naming the
// field, 422 in the query, 404 in a path), once the caller is known (signature-first.test.ts); and
// statuses the server produces itself use the spec's envelope.
describe('composer: unstorable text from a signed caller, and server-made statuses', () => {
  let t: ComposerTest;
  let port: number;
  before(async () => {
    t = await startComposerTest({ env: { COMPOSER_AUTH_SECRETS: SECRET } });
    await t.svc.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.svc.app.server.address() as AddressInfo).port;
  });
  after(() => t?.close());

  const signed = async (payload: string, url = '/v1/compose') =>
    res(
      await t.svc.app.inject({
        method: 'POST',
        url,
        payload,
        headers: { 'content-type': 'application/json', authorization: signRequest(SECRET, 'POST', url.split('?')[0]!, payload) },
      }),
    );

  for (const [label, bad] of [
    ['a NUL character', NUL],
    ['an unpaired high surrogate', LONE_HIGH],
    ['an unpaired low surrogate', LONE_LOW],
  ] as const) {
    it(`a signed body holding ${label}: 400 validation_error naming the field, nothing rendered`, async () => {
      for (const where of ['exercise', 'language', 'side', 'key'] as const) {
        const r = await signed(composeWith(where, bad));
        assertEnvelope(r, 400, 'validation_error');
        assert.ok(r.body.error.fields?.[FIELD[where]], `${where}: ${JSON.stringify(r.body)}`);
      }
      assert.equal(await rendersOf(t), 0);
    });
  }

  it('a query string holding a NUL character: 422 validation_failed on every route', async () => {
    const r = await signed(composeWith('exercise', ''), '/v1/compose?seed=%00');
    assertEnvelope(r, 422, 'validation_failed');
    assert.ok(r.body.error.fields?.seed, JSON.stringify(r.body));
    assertEnvelope(res(await t.svc.app.inject({ method: 'GET', url: '/v1/hls/x/index.m3u8?x=a%00' })), 422, 'validation_failed');
    assertEnvelope(res(await t.svc.app.inject({ method: 'GET', url: '/health?x=%00' })), 422, 'validation_failed');
  });

  it('a path parameter holding a NUL character names nothing: 404; a surrogate in the path is not a URL: 400', async () => {
    for (const url of ['/v1/hls/%00/index.m3u8', '/v1/hls/abc/%00', '/v1/hls/a%00b/segment0.ts']) {
      assertEnvelope(res(await t.svc.app.inject({ method: 'GET', url })), 404, 'not_found');
    }
    assertEnvelope(res(await t.svc.app.inject({ method: 'GET', url: '/v1/hls/%ED%A0%80/index.m3u8' })), 400, 'invalid_url');
  });

  it('headers larger than Node accepts: 431 headers_too_large; bytes that are not HTTP: 400 bad_request', async () => {
    const big = `POST /v1/compose HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    assertEnvelope(parseRaw(await rawRequest(port, big)), 431, 'headers_too_large');
    assertEnvelope(parseRaw(await rawRequest(port, 'NOT HTTP AT ALL\r\n\r\n')), 400, 'bad_request');
  });

  it('an unknown route or method: 404 not_found (no 405)', async () => {
    for (const line of ['GET /v1/nope', 'PROPFIND /health', 'GET /v1/compose', 'DELETE /v1/compose']) {
      const raw = await rawRequest(port, `${line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      assertEnvelope(parseRaw(raw), 404, 'not_found');
    }
  });

  it('a signed body over the limit: 413 payload_too_large; a signed body of another type: 415, on the wire', async () => {
    const post = (body: string, type: string) =>
      rawRequest(
        port,
        `POST /v1/compose HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Authorization: ${signRequest(SECRET, 'POST', '/v1/compose', body)}\r\n\r\n${body}`,
      ).then(parseRaw);
    assertEnvelope(await post(composeWith('exercise', 'x'.repeat(20_000)), 'application/json'), 413, 'payload_too_large');
    assertEnvelope(await post('exercise=cmp-none', 'application/x-www-form-urlencoded'), 415, 'unsupported_media_type');
    assert.equal(await rendersOf(t), 0);
  });
});

describe('composer without signatures (development): unstorable text is still refused at once', () => {
  let t: ComposerTest;
  before(async () => {
    t = await startComposerTest();
  });
  after(() => t?.close());

  it('a body holding a NUL character: 400 validation_error; in the query: 422', async () => {
    const body = composeWith('exercise', NUL);
    assertEnvelope(res(await t.compose(body)), 400, 'validation_error');
    const r = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/compose?x=%00',
      payload: body,
      headers: { 'content-type': 'application/json' },
    });
    assertEnvelope(res(r), 422, 'validation_failed');
  });
});
