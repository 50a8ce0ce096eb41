import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';

/**
 * HTTP on a real socket, for the statuses a server produces before any route runs (431 from Node's
 * parser, 404 for an unknown method) and for bodies sent without a Content-Length (chunked), which
 * `app.inject()` cannot show. Shared by the telemetry and composer tests.
 */

/** Sends raw bytes and returns everything the server wrote until it closed the connection. */
export function rawRequest(port: number, text: string): Promise<string> {
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

/** The status line's code and the parsed JSON body of a raw HTTP/1.1 response (not chunked). */
export function parseRaw(raw: string): { status: number; body: any } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return { status, body: JSON.parse(body) };
}

/** The spec's error envelope with this status and code, and not Fastify's own `{ statusCode, error, message }`. */
export function assertEnvelope(res: { status: number; body: any }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, code, JSON.stringify(res.body));
  assert.ok(typeof res.body.error.message === 'string' && res.body.error.message.length > 0);
  assert.equal(res.body.statusCode, undefined, "Fastify's own shape leaked");
}

/**
 * A request whose body is sent in chunks with no Content-Length (Transfer-Encoding: chunked), so the
 * server learns its size only by reading it. The server may answer before the body is all sent (and
 * close the connection): the answer counts, write errors after it do not.
 */
export function chunkedRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  chunks: (string | Buffer)[],
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => {
        // The rest of the body, if any, is not wanted: the connection goes with the request.
        req.destroy();
        try {
          resolve({ status: res.statusCode!, body: JSON.parse(text) });
        } catch (err) {
          reject(new Error(`${res.statusCode}: not JSON: ${text.slice(0, 200)}`, { cause: err }));
        }
      });
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    (async () => {
      for (const chunk of chunks) {
        if (answered || req.destroyed) return;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r).once('close', r));
      }
      req.end();
    })().catch(() => {});
  });
}
