import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';

/**
 * A Clerk-style Backend API. Every route answers 401 unless the Bearer is a known secret key. GET /v1/users lists
 * nothing (the health check's ping); GET /v1/users/<id> answers a user of `users` (404 otherwise); GET /v1/jwks
 * answers `jwks`, the public keys that sign the instance's session tokens.
 */
export async function startFakeClerk(opts: { secretKeys: string[]; jwks?: JWK[]; users?: Map<string, { email: string }> }) {
  const state = {
    secretKeys: new Set(opts.secretKeys),
    jwks: opts.jwks ?? [],
    users: opts.users ?? new Map<string, { email: string }>(),
    requests: 0,
  };
  const server = createServer((req, res) => {
    state.requests++;
    const key = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    res.setHeader('content-type', 'application/json');
    if (!key || !state.secretKeys.has(key)) {
      res.writeHead(401);
      return res.end(JSON.stringify({ errors: [{ code: 'authentication_invalid', message: 'Invalid authentication' }] }));
    }
    const path = (req.url ?? '').split('?')[0]!;
    if (req.method === 'GET' && path === '/v1/jwks') {
      res.writeHead(200);
      return res.end(JSON.stringify({ keys: state.jwks }));
    }
    const user = /^\/v1\/users\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && user) {
      const found = state.users.get(decodeURIComponent(user[1]!));
      if (found) {
        res.writeHead(200);
        return res.end(
          JSON.stringify({
            id: user[1],
            primary_email_address_id: 'idn_1',
            email_addresses: [{ id: 'idn_1', email_address: found.email, verification: { status: 'verified' } }],
          }),
        );
      }
    }
    if (req.method === 'GET' && path === '/v1/users') {
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
