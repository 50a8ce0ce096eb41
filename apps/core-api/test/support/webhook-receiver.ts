import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verify as verifyHexSignature } from '@octokit/webhooks-methods';
import { generate } from 'selfsigned';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, with what the public verification libraries said of it. */
export interface Received {
  path: string;
  id: string;
  event: string;
  data: Record<string, unknown>;
  headers: Record<string, string>;
  rawBody: string;
  /** @octokit/webhooks-methods on X-Webhook-Signature with the secret the test registered for the path. */
  hexValid: boolean;
  /** standardwebhooks on webhook-id / webhook-timestamp / webhook-signature (5-minute replay window). */
  standardValid: boolean;
  /** Seen before (the receiver de-duplicates on the body's id, as spec 6.1 asks receivers to). */
  duplicate: boolean;
  at: number;
}

export interface Receiver {
  url(path: string): string;
  /** The secret(s) to verify a path's deliveries with: current first; any of them may validate. */
  setSecrets(path: string, secrets: string[]): void;
  /** How to answer: a status (and optional body) per request; default 200. */
  respond: (r: Received) => { status: number; body?: string; delayMs?: number };
  received: Received[];
  /** Unique event ids accepted (2xx, not duplicate) per path. */
  accepted(path: string): string[];
  /** The CA file that makes the platform trust this receiver (WEBHOOK_CA_FILE). */
  caFile: string;
  /** Polls until `predicate` holds; says every 30 s what it still waits for. */
  waitFor(predicate: () => boolean, what?: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real HTTPS webhook receiver on 127.0.0.1 with a self-signed certificate that the test trusts,
 * verifying every delivery with public libraries (never the platform's own signing code).
 * `hostnames`: DNS names the certificate also holds, for tests that reach the receiver by a name.
 */
export async function startReceiver(opts: { hostnames?: string[] } = {}): Promise<Receiver> {
  const names = (opts.hostnames ?? []).map((value) => ({ type: 2, value }));
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }, ...names] }],
  } as never);
  const dir = await mkdtemp(join(tmpdir(), 'webhook-ca-'));
  const caFile = join(dir, 'ca.pem');
  await writeFile(caFile, pems.cert);
  const secrets = new Map<string, string[]>();
  const seen = new Set<string>();
  const acceptedIds = new Map<string, Set<string>>();

  const r: Receiver = {
    url: (path) => `https://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    setSecrets: (path, s) => void secrets.set(path, s),
    respond: () => ({ status: 200 }),
    received: [],
    accepted: (path) => [...(acceptedIds.get(path) ?? [])],
    caFile,
    async waitFor(predicate, what = 'a condition') {
      // No deadline of its own: how long a delivery takes depends on the machine's load, and a
      // condition that never comes is the test runner's time-out to stop.
      const started = Date.now();
      let said = 0;
      while (!predicate()) {
        const waited = Math.floor((Date.now() - started) / 30_000);
        if (waited > said) {
          said = waited;
          console.error(`still waiting for ${what} (${said * 30} s)`);
        }
        await new Promise((res) => setTimeout(res, 25));
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((res) => server.close(() => res()));
      await rm(dir, { recursive: true, force: true });
    },
  };

  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const path = req.url ?? '/';
      const keys = secrets.get(path) ?? [];
      let body: { id?: string; event?: string; data?: Record<string, unknown> } = {};
      try {
        body = JSON.parse(rawBody);
      } catch {
        /* recorded as invalid below */
      }
      let hexValid = false;
      for (const k of keys)
        if (await verifyHexSignature(k, rawBody, headers['x-webhook-signature'] ?? '').catch(() => false)) hexValid = true;
      let standardValid = false;
      for (const k of keys) {
        try {
          new Webhook(k).verify(rawBody, headers);
          standardValid = true;
        } catch {
          /* another key may verify */
        }
      }
      const id = body.id ?? '';
      const key = `${path}|${id}`;
      const received: Received = {
        path,
        id,
        event: body.event ?? '',
        data: body.data ?? {},
        headers,
        rawBody,
        hexValid,
        standardValid,
        duplicate: seen.has(key),
        at: Date.now(),
      };
      r.received.push(received);
      const answer = !hexValid || !standardValid ? { status: 401, body: 'bad signature' } : r.respond(received);
      if (answer.delayMs) await new Promise((res) => setTimeout(res, answer.delayMs));
      if (answer.status >= 200 && answer.status < 300 && hexValid) {
        seen.add(key);
        if (!acceptedIds.has(path)) acceptedIds.set(path, new Set());
        acceptedIds.get(path)!.add(id);
      }
      res.writeHead(answer.status, { 'content-type': 'text/plain' });
      res.end(answer.body ?? 'ok');
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  return r;
}
