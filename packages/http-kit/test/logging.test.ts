import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { createServiceLogger, redactUrl } from '../src/index.ts';

describe('logs never carry credentials from the URL', () => {
  it('redactUrl hides the values of token-like query parameters and keeps the rest', () => {
    assert.equal(redactUrl('/v1/x'), '/v1/x');
    assert.equal(redactUrl('/r/1?token=abc.def&page=2'), '/r/1?token=[redacted]&page=2');
    assert.equal(
      redactUrl('/f?X-Amz-Signature=ff00&X-Amz-Credential=AKIA%2F1&limit=5'),
      '/f?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&limit=5',
    );
    assert.equal(redactUrl('/cb?code=xyz&state=s&access_token=t'), '/cb?code=[redacted]&state=s&access_token=[redacted]');
    assert.equal(redactUrl('/a?%74oken=abc'), '/a?%74oken=[redacted]', 'a percent-encoded name is still a token');
    assert.equal(redactUrl('/a?tokenizer=1&q=token'), '/a?tokenizer=1&q=token');
  });

  it("a service's access log writes the URL with the token redacted", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const app = Fastify({ loggerInstance: createServiceLogger({ level: 'info' }, sink) as FastifyBaseLogger });
    app.get('/v1/public/replays/:id', async () => ({ ok: true }));
    const res = await app.inject({
      method: 'GET',
      url: '/v1/public/replays/7?token=eyJhbGciOi.secret-part.sig&page=1',
      headers: { authorization: 'Bearer header-secret' },
    });
    assert.equal(res.statusCode, 200);
    await app.close();
    const log = lines.join('');
    assert.match(log, /"url":"\/v1\/public\/replays\/7\?token=\[redacted\]&page=1"/, log);
    assert.doesNotMatch(log, /secret-part|header-secret/);
  });
});
