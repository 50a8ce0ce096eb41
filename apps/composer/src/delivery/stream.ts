import { openAsBlob } from 'node:fs';
import { DeliveryError, type DeliveredVideo, type DeliveryProvider } from './types.ts';

interface StreamVideo {
  uid?: string;
  readyToStream?: boolean;
  status?: { state?: string; errorReasonCode?: string; errorReasonText?: string };
  playback?: { hls?: string };
}
interface Envelope {
  success?: boolean;
  errors?: Array<{ code?: number; message?: string }>;
  result?: StreamVideo;
}

/**
 * A Cloudflare Stream-compatible client (production delivery): basic upload
 * (POST /accounts/{account}/stream, multipart field `file`, up to 200 MB) and the video details
 * (GET /accounts/{account}/stream/{uid}). The endpoint is configuration (STREAM_API_URL), so tests
 * point it at a local server speaking the same API.
 */
export function createStreamProvider(opts: {
  apiUrl: string;
  accountId: string;
  apiToken: string;
  uploadTimeoutMs?: number;
}): DeliveryProvider {
  const base = `${opts.apiUrl}/accounts/${encodeURIComponent(opts.accountId)}/stream`;
  const headers = { authorization: `Bearer ${opts.apiToken}` };

  async function call(url: string, init: RequestInit & { timeoutMs: number }): Promise<DeliveredVideo> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, headers, signal: AbortSignal.timeout(init.timeoutMs), redirect: 'error' });
    } catch (err) {
      throw new DeliveryError(`delivery provider unreachable: ${(err as Error).message}`);
    }
    const body = (await res.json().catch(() => null)) as Envelope | null;
    if (!res.ok || !body?.success || !body.result) {
      // The provider's own message helps the operator; the token is never part of it.
      const why = body?.errors?.map((e) => `${e.code ?? ''} ${e.message ?? ''}`.trim()).join('; ') || `HTTP ${res.status}`;
      throw new DeliveryError(`delivery provider refused: ${why}`);
    }
    return toVideo(body.result);
  }

  return {
    kind: 'stream',
    async upload(file, meta) {
      const form = new FormData();
      form.append('file', await openAsBlob(file, { type: 'video/mp4' }), `${meta.name}.mp4`);
      return call(base, { method: 'POST', body: form, timeoutMs: opts.uploadTimeoutMs ?? 10 * 60_000 });
    },
    status(uid) {
      return call(`${base}/${encodeURIComponent(uid)}`, { method: 'GET', timeoutMs: 10_000 });
    },
    async close() {},
  };
}

function toVideo(v: StreamVideo): DeliveredVideo {
  if (!v.uid || !v.playback?.hls) throw new DeliveryError('delivery provider answered without uid or playback.hls');
  const state = v.status?.state === 'error' ? 'error' : v.readyToStream || v.status?.state === 'ready' ? 'ready' : 'processing';
  return {
    streamVideoId: v.uid,
    playbackHlsUrl: v.playback.hls,
    state,
    ...(state === 'error' ? { error: v.status?.errorReasonText ?? v.status?.errorReasonCode ?? 'error' } : {}),
  };
}
