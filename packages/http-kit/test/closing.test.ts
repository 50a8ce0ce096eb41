import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { edgeServerOptions, installErrorHandling } from '../src/index.ts';

/** GET on a keep-alive agent, so the second request reuses the connection the first one opened. */
function get(agent: http.Agent, port: number): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/ping', agent }, (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

describe('a request that arrives while the server closes', () => {
  it('is answered 503 shutting_down in the envelope, with Retry-After and Connection: close', async () => {
    const app = Fastify({ ...edgeServerOptions });
    installErrorHandling(app);
    app.get('/ping', async () => ({ ok: true }));
    // close() waits on this hook, which runs after the one that marks the server closing: the window of
    // a rolling deploy in which requests still arrive on connections that are already open.
    let release!: () => void;
    let reached!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const closingStarted = new Promise<void>((resolve) => {
      reached = resolve;
    });
    app.addHook('preClose', () => {
      reached();
      return held;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      assert.equal((await get(agent, port)).status, 200);
      const closing = app.close();
      await closingStarted;
      const res = await get(agent, port);
      release();
      await closing;
      assert.equal(res.status, 503, res.body);
      assert.equal(JSON.parse(res.body).error.code, 'shutting_down');
      assert.equal(res.headers['retry-after'], '1');
      assert.equal(res.headers.connection, 'close');
    } finally {
      agent.destroy();
    }
  });
});
