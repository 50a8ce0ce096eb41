import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sessionSigner } from '../../core-api/src/modules/exercise-sessions/token.ts';
import { assertEnvelope, chunkedRequest, parseRaw, rawRequest } from '../../core-api/test/support/raw-http.ts';
import { startWorld, type World } from './support.ts';

// Text no column can store (a NUL character, a UTF-16 surrogate without its pair) is refused at the
// edge of the telemetry service as in the core API: a body 400 validation_error naming the field, a
// query 422 validation_failed, a path 404, a token claim 401; never a 5xx from deep in a query. The
// JSON escapes below are sent as written, as a client's bytes.
const NUL = '\\u0000';
const LONE_HIGH = '\\ud800';
const LONE_LOW = '\\udc00';

const res = (r: { statusCode: number; body: string }) => ({ status: r.statusCode, body: JSON.parse(r.body) });

describe('telemetry: unstorable text is refused at the edge, and server-made statuses use the envelope', () => {
  let w: World;
  let session: { id: string; token: string };
  let port: number;
  const at = new Date().toISOString();
  before(async () => {
    w = await startWorld();
    await w.grant('analytics');
    await w.grant('biometric');
    session = await w.start();
    await w.a.listen({ host: '127.0.0.1', port: 0 });
    port = (w.a.server.address() as AddressInfo).port;
  });
  after(() => w?.close());

  const mediaHeaders = (token = w.patient.token) => ({
    authorization: `Bearer ${token}`,
    'x-organization-id': w.orgId,
    'content-type': 'application/json',
  });
  const media = async (payload: string, o: { url?: string; token?: string } = {}) =>
    res(await w.a.inject({ method: 'POST', url: o.url ?? '/v1/media/events', headers: mediaHeaders(o.token), payload }));
  const end = async (id: string, o: { token?: string; query?: string } = {}) =>
    res(
      await w.a.inject({
        method: 'POST',
        url: `/v1/sessions/${id}/end${o.query ?? ''}`,
        headers: { authorization: `Bearer ${o.token ?? session.token}` },
      }),
    );
  const playbacks = async (id: string) =>
    (await w.t.db.query<{ n: number }>('select count(*)::int as n from media_session_metrics where media_session_id = $1', [id])).rows[0]!
      .n;
  /** A media event batch as raw JSON, with `text` spliced in where `where` says. */
  const batch = (id: string, where: 'video_id' | 'quality' | 'key', text: string) => {
    const heartbeat = `{"seq":0,"at":"${at}","kind":"heartbeat","position_s":1,"buffering":false,"bitrate_kbps":1,"quality":"${where === 'quality' ? text : '720p'}","dropped_frames":0}`;
    const extra = where === 'video_id' ? `,"video_id":"v${text}"` : where === 'key' ? `,"x${text}":1` : '';
    return `{"media_session_id":"${id}"${extra},"events":[${heartbeat}]}`;
  };

  it('a batch of well-formed text is stored (the requests below fail for their text alone)', async () => {
    const id = randomUUID();
    const ok = await media(batch(id, 'video_id', 'clip-1'));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(await playbacks(id), 1);
  });

  for (const [label, bad] of [
    ['a NUL character', NUL],
    ['an unpaired high surrogate', LONE_HIGH],
    ['an unpaired low surrogate', LONE_LOW],
  ] as const) {
    it(`a media event batch holding ${label}: 400 validation_error naming the field, nothing stored`, async () => {
      for (const [where, field] of [
        ['video_id', 'video_id'],
        ['quality', 'events.0.quality'],
        ['key', '_body'],
      ] as const) {
        const id = randomUUID();
        const r = await media(batch(id, where, bad));
        assertEnvelope(r, 400, 'validation_error');
        assert.ok(r.body.error.fields?.[field], `${where}: ${JSON.stringify(r.body)}`);
        assert.equal(await playbacks(id), 0);
      }
      // In the one field that must be a uuid, too.
      assertEnvelope(await media(`{"media_session_id":"${bad}","events":[]}`), 400, 'validation_error');
    });
  }

  it('a query string holding a NUL character: 422 validation_failed naming the parameter, on every route', async () => {
    const onMedia = await media(batch(randomUUID(), 'video_id', 'clip'), { url: '/v1/media/events?x=%00' });
    assertEnvelope(onMedia, 422, 'validation_failed');
    assert.ok(onMedia.body.error.fields?.x, JSON.stringify(onMedia.body));
    assertEnvelope(await end(session.id, { query: '?q=a%00b' }), 422, 'validation_failed');
    assertEnvelope(res(await w.a.inject({ method: 'GET', url: '/health?x=%00' })), 422, 'validation_failed');
    // A surrogate percent-encoded as UTF-8 bytes is not UTF-8: the decoder makes it U+FFFD, which is storable.
    const surrogate = await media(batch(randomUUID(), 'video_id', 'clip'), { url: '/v1/media/events?x=%ED%A0%80' });
    assert.equal(surrogate.status, 200, JSON.stringify(surrogate.body));
  });

  it('a path parameter holding a NUL character names nothing: 404; a surrogate in the path is not a URL: 400', async () => {
    for (const id of ['%00', `${session.id}%00`, `a%00b`]) assertEnvelope(await end(id), 404, 'not_found');
    assertEnvelope(await end('%ED%A0%80'), 400, 'invalid_url');
  });

  it('a validly signed token whose claims hold a NUL character or a lone surrogate: 401, nothing stored', async () => {
    const signer = await sessionSigner(w.t.rt.config);
    const exerciseId = await w.exerciseId('squat');
    const claims = { userId: w.patient.userId, sessionId: session.id, orgId: w.orgId, exerciseId };
    for (const bad of [{ sessionId: `${session.id}\u0000` }, { userId: `\ud800${w.patient.userId}` }, { orgId: `${w.orgId}\u0000` }]) {
      const { token } = await signer.sign({ ...claims, ...bad });
      assertEnvelope(await end(session.id, { token }), 401, 'unauthorized');
      assertEnvelope(await w.pose(w.a, token, Buffer.from('not read')).then(res), 401, 'unauthorized');
    }
    // The patient portal's own token (media events): a subject or an email no column can store.
    const id = randomUUID();
    for (const token of [
      await w.t.issuer.sign('media-nul@example.test', { subject: 'sub\u0000ject' }),
      await w.t.issuer.sign('media\u0000@example.test'),
      await w.t.issuer.sign('media-surrogate@example.test', { subject: '\udc00' }),
    ]) {
      assertEnvelope(await media(batch(id, 'video_id', 'clip'), { token }), 401, 'unauthorized');
    }
    assert.equal(await playbacks(id), 0);
  });

  it('headers larger than Node accepts: 431 headers_too_large; bytes that are not HTTP: 400 bad_request', async () => {
    const big = `POST /v1/media/events HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    assertEnvelope(parseRaw(await rawRequest(port, big)), 431, 'headers_too_large');
    assertEnvelope(parseRaw(await rawRequest(port, 'NOT HTTP AT ALL\r\n\r\n')), 400, 'bad_request');
  });

  it('an unknown route or method: 404 not_found (no 405)', async () => {
    assertEnvelope(parseRaw(await rawRequest(port, 'GET /v1/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')), 404, 'not_found');
    assertEnvelope(parseRaw(await rawRequest(port, 'PROPFIND /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')), 404, 'not_found');
    assertEnvelope(
      parseRaw(await rawRequest(port, 'DELETE /v1/media/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')),
      404,
      'not_found',
    );
  });

  it('a body over the limit: 413 payload_too_large, declared or found while reading, JSON and pose batches alike', async () => {
    const json = `{"media_session_id":"${randomUUID()}","video_id":"${'x'.repeat(300_000)}","events":[]}`;
    assertEnvelope(await media(json), 413, 'payload_too_large');
    assertEnvelope(
      await chunkedRequest(port, 'POST', '/v1/media/events', mediaHeaders(), [json.slice(0, 1000), json.slice(1000)]),
      413,
      'payload_too_large',
    );
    assertEnvelope(await w.pose(w.a, session.token, Buffer.alloc(300_000)).then(res), 413, 'payload_too_large');
  });

  it('a body of another type: 415 unsupported_media_type', async () => {
    const id = randomUUID();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream']) {
      const r = res(
        await w.a.inject({
          method: 'POST',
          url: '/v1/media/events',
          headers: { ...mediaHeaders(), 'content-type': type },
          payload: batch(id, 'video_id', 'clip'),
        }),
      );
      assertEnvelope(r, 415, 'unsupported_media_type');
    }
    // A pose batch is binary only.
    const json = await w.a.inject({
      method: 'POST',
      url: '/v1/pose/frames',
      headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    assertEnvelope(res(json), 415, 'unsupported_media_type');
    assert.equal(await playbacks(id), 0);
  });
});
