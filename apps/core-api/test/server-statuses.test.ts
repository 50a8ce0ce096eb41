import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers.ts';

/** Sends raw bytes and returns everything the server wrote until it closed the connection. */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(text));
    let out = '';
    socket.on('data', (d) => {
      out += d;
    });
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
  });
}

/** The status line's code and the parsed JSON body of a raw HTTP/1.1 response. */
function parse(raw: string): { status: number; body: any } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return { status, body: JSON.parse(body) };
}

function assertEnvelope(res: { status: number; body: any }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, code, JSON.stringify(res.body));
  assert.ok(typeof res.body.error.message === 'string' && res.body.error.message.length > 0);
  assert.equal(res.body.statusCode, undefined, "Fastify's own shape leaked");
}

// Statuses the server produces before any route runs use the spec's error envelope like all others.
describe('statuses the server produces itself use the error envelope', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  after(() => t?.close());

  it('headers larger than Node accepts: 431 headers_too_large', async () => {
    const res = parse(await rawRequest(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    assertEnvelope(res, 431, 'headers_too_large');
  });

  it('bytes that are not HTTP: 400 bad_request', async () => {
    assertEnvelope(parse(await rawRequest(port, 'NOT HTTP AT ALL\r\n\r\n')), 400, 'bad_request');
  });

  it('an unknown method or route: 404 not_found; a body too large: 413; a body of another type: 415', async () => {
    assertEnvelope(parse(await rawRequest(port, 'PROPFIND /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')), 404, 'not_found');
    const big = 'x'.repeat(t.config.bodyLimitBytes + 1);
    const tooLarge = await t.call('PATCH', '/v1/me', { rawBody: `{"preferred_language":"${big}"}`, as: 'someone@example.test' });
    assert.equal(tooLarge.statusCode, 413);
    assert.equal(tooLarge.json().error.code, 'payload_too_large');
    const text = await t.call('PATCH', '/v1/me', { rawBody: 'hi', as: 'someone@example.test', headers: { 'content-type': 'text/plain' } });
    assert.equal(text.statusCode, 415);
    assert.equal(text.json().error.code, 'unsupported_media_type');
  });
});
