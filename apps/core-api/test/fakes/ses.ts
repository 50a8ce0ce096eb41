import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sigv4Credential } from './aws-auth.ts';

/**
 * A local server speaking the SES v2 REST/JSON wire format for the calls the health check makes:
 * GET /v2/email/account and GET /v2/email/identities/{identity}. Reached by the real @aws-sdk/client-sesv2
 * through the row's endpoint_url.
 */
export interface FakeSes {
  url: string;
  /** Access key ids the account accepts; change to simulate a revoked key. */
  keys: Set<string>;
  region: string;
  /** Sender identities verified for sending. */
  verified: Set<string>;
  requests: number;
  close(): Promise<void>;
}

export async function startFakeSes(opts: { keys: string[]; region: string; verified: string[] }): Promise<FakeSes> {
  const state = { keys: new Set(opts.keys), region: opts.region, verified: new Set(opts.verified), requests: 0 };
  const server: Server = createServer((req, res) => {
    state.requests++;
    const json = (status: number, body: object, errorType?: string) => {
      res.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
      res.end(JSON.stringify(body));
    };
    const cred = sigv4Credential(req);
    if (!cred || !state.keys.has(cred.accessKeyId))
      return json(403, { message: 'The security token included in the request is invalid.' }, 'UnrecognizedClientException');
    if (cred.region !== state.region)
      return json(403, { message: `Credential should be scoped to a valid region, not '${cred.region}'.` }, 'InvalidSignatureException');
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/v2/email/account') {
      return json(200, { SendingEnabled: true, ProductionAccessEnabled: true, EnforcementStatus: 'HEALTHY' });
    }
    const m = /^\/v2\/email\/identities\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const identity = decodeURIComponent(m[1]!);
      if (!state.verified.has(identity) && !state.verified.has(identity.split('@')[1] ?? '')) {
        return json(404, { message: `Email identity ${identity} does not exist.` }, 'NotFoundException');
      }
      return json(200, { IdentityType: 'EMAIL_ADDRESS', VerifiedForSendingStatus: true, VerificationStatus: 'SUCCESS' });
    }
    return json(404, { message: 'Not found' }, 'NotFoundException');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
