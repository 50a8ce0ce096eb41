import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local HTTP server speaking the part of the Cloudflare Stream API the composer uses: basic upload
 * (POST /client/v4/accounts/{account}/stream, multipart `file`) and video details
 * (GET .../stream/{uid}). A video turns ready after `readyAfterPolls` detail reads, as a real
 * transcode takes a while. Bearer token checked; uploads kept in memory for inspection.
 */
export async function startFakeStream(opts: { accountId: string; token: string; readyAfterPolls?: number }) {
  const videos = new Map<string, { bytes: Buffer; name: string; polls: number }>();
  let uploads = 0;
  const server = createServer(
    (req, res) =>
      void handle(req, res).catch((err: Error) => send(res, 500, { success: false, errors: [{ code: 10000, message: err.message }] })),
  );
  const base = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const details = (uid: string) => {
    const v = videos.get(uid)!;
    const ready = v.polls >= (opts.readyAfterPolls ?? 2);
    return {
      uid,
      readyToStream: ready,
      status: { state: ready ? 'ready' : 'inprogress', pctComplete: ready ? '100.000000' : '50.000000' },
      meta: { name: v.name },
      size: v.bytes.length,
      playback: { hls: `${base()}/${uid}/manifest/video.m3u8`, dash: `${base()}/${uid}/manifest/video.mpd` },
    };
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    if (req.headers.authorization !== `Bearer ${opts.token}`) {
      return send(res, 403, { success: false, errors: [{ code: 10000, message: 'Authentication error' }], result: null });
    }
    const prefix = `/client/v4/accounts/${opts.accountId}/stream`;
    const url = new URL(req.url ?? '/', base());
    if (req.method === 'POST' && url.pathname === prefix) {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const form = await new Request(url, {
        method: 'POST',
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks),
      }).formData();
      const file = form.get('file');
      if (!(file instanceof Blob)) return send(res, 400, { success: false, errors: [{ code: 10005, message: 'file is required' }] });
      const uid = randomUUID().replace(/-/g, '');
      videos.set(uid, { bytes: Buffer.from(await file.arrayBuffer()), name: (file as File).name, polls: 0 });
      uploads++;
      return send(res, 200, { success: true, errors: [], messages: [], result: details(uid) });
    }
    const m = new RegExp(`^${prefix}/([0-9a-f]{32})$`).exec(url.pathname);
    if (req.method === 'GET' && m && videos.has(m[1]!)) {
      videos.get(m[1]!)!.polls++;
      return send(res, 200, { success: true, errors: [], messages: [], result: details(m[1]!) });
    }
    return send(res, 404, { success: false, errors: [{ code: 10003, message: 'Not Found' }] });
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    apiUrl: `${base()}/client/v4`,
    videos,
    get uploads() {
      return uploads;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
