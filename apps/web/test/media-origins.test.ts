import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWebConfig, WebConfigError } from '../src/index.ts';
import { contentSecurityPolicy } from '../src/server/security.ts';

/*
 * The portal's exercise videos come from another origin (the composer's HLS in development, the video
 * provider in production): the CSP names exactly those origins for media and fetches, and nothing else.
 */
describe('video origins in the content security policy', () => {
  it('WEB_MEDIA_ORIGINS are allowed in media-src and connect-src only; scripts and styles stay self-only', () => {
    const config = parseWebConfig({ WEB_MEDIA_ORIGINS: 'https://videos.example.com, http://127.0.0.1:3002' });
    assert.deepEqual(config.mediaOrigins, ['https://videos.example.com', 'http://127.0.0.1:3002']);
    const csp = contentSecurityPolicy(null, config.mediaOrigins);
    assert.match(csp, /media-src 'self' blob: https:\/\/videos\.example\.com http:\/\/127\.0\.0\.1:3002(;|$)/);
    assert.match(csp, /connect-src 'self' https:\/\/videos\.example\.com http:\/\/127\.0\.0\.1:3002(;|$)/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /default-src 'self'(;|$)/);
  });

  it('without the setting the policy is self-only, or the embedded default’s composer origin', () => {
    assert.match(contentSecurityPolicy(null, parseWebConfig({}).mediaOrigins), /media-src 'self' blob:;.*connect-src 'self';/);
    assert.deepEqual(parseWebConfig({}, { mediaOrigins: ['http://127.0.0.1:3002'] }).mediaOrigins, ['http://127.0.0.1:3002']);
  });

  it('a path, a wildcard or another scheme is refused with a message naming the setting', () => {
    for (const bad of ['https://videos.example.com/hls', '*', 'ftp://videos.example.com', "https://a.example.com 'unsafe-inline'"]) {
      assert.throws(
        () => parseWebConfig({ WEB_MEDIA_ORIGINS: bad }),
        (err: Error) => err instanceof WebConfigError && /WEB_MEDIA_ORIGINS/.test(err.message),
        bad,
      );
    }
  });
});
