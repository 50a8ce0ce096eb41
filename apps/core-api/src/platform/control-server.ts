import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCommand, UsageError } from '../cli/commands.ts';
import type { Runtime } from './runtime.ts';

async function readBody(req: IncomingMessage, limit = 64 * 1024): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sameSecret(given: string | undefined, secret: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Loopback-only endpoint through which `npm run cli` reaches the embedded database while the server
 * holds it. The address and a random secret go into the lock file (mode 0600) of the data folder.
 */
export async function startControlServer(rt: Runtime): Promise<{ close(): Promise<void> }> {
  const secret = randomBytes(32).toString('hex');
  const server = createServer(async (req, res) => {
    const reply = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/cli' || !sameSecret(req.headers['x-control-secret'] as string | undefined, secret)) {
      return reply(404, { error: 'not found' });
    }
    try {
      const { args } = JSON.parse(await readBody(req)) as { args: string[] };
      reply(200, { output: await runCommand(rt.db, args, { secrets: async () => rt.secrets }) });
    } catch (err) {
      reply(err instanceof UsageError ? 400 : 500, { error: (err as Error).message });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await rt.lock!.update({ controlUrl: `http://127.0.0.1:${port}/cli`, secret });
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
