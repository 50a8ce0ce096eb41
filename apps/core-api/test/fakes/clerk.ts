import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A Clerk-style Backend API: GET /v1/users answers 200 to a known secret key (Bearer), 401 otherwise. */
export async function startFakeClerk(opts: { secretKeys: string[] }) {
  const state = { secretKeys: new Set(opts.secretKeys), requests: 0 };
  const server = createServer((req, res) => {
    state.requests++;
    const key = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    res.setHeader('content-type', 'application/json');
    if (!key || !state.secretKeys.has(key)) {
      res.writeHead(401);
      return res.end(JSON.stringify({ errors: [{ code: 'authentication_invalid', message: 'Invalid authentication' }] }));
    }
    if (req.method === 'GET' && (req.url ?? '').startsWith('/v1/users')) {
      res.writeHead(200);
      return res.end('[]');
    }
    res.writeHead(404);
    res.end(JSON.stringify({ errors: [{ code: 'resource_not_found' }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
