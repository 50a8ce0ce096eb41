import { isUuid } from '@clinic/http-kit';
import { signRequest } from '@clinic/composer';

/** The composer's answer (docs/composer.md "Request and answer"), as a plan session shows it. */
export interface ComposedVideo {
  render_id: string;
  status: string;
  language: string;
  stream_video_id: string | null;
  playback_hls_url: string | null;
  duration_seconds: number | null;
  cached: boolean;
}

export interface ComposeRequest {
  /** The exercise slug whose primitives are used (a copy's template's). */
  exercise: string;
  language: string;
  sets: { side: 'left' | 'right'; reps: number }[];
  seed: number;
}

/** What came back instead of a video: why, for the session's answer (the session starts all the same). */
export class ComposeFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface VideoComposer {
  compose(req: ComposeRequest): Promise<ComposedVideo>;
}

/**
 * The core API's client of POST {composer}/v1/compose (spec 4.12): an HMAC-signed request (docs/composer.md)
 * with a time-out. A failure (unreachable, refused, timed out, a 4xx about the exercise's assets) is a
 * ComposeFailed: a plan session then starts without its video rather than not at all.
 */
export function createComposerClient(cfg: { url: string; secret: string | null; timeoutMs: number }): VideoComposer {
  return {
    async compose(req) {
      const path = '/v1/compose';
      const body = JSON.stringify(req);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (cfg.secret) headers.authorization = signRequest(cfg.secret, 'POST', path, body);
      let res: Response;
      try {
        res = await fetch(`${cfg.url}${path}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(cfg.timeoutMs) });
      } catch (err) {
        const name = (err as Error).name;
        throw new ComposeFailed(name === 'TimeoutError' ? 'the composer did not answer in time' : 'the composer is unreachable');
      }
      const json = (await res.json().catch(() => null)) as {
        data?: Record<string, unknown>;
        error?: { code?: string; message?: string };
      } | null;
      if (res.status !== 200 && res.status !== 201) {
        throw new ComposeFailed(`the composer answered ${res.status}${json?.error?.code ? ` ${json.error.code}` : ''}`);
      }
      const d = json?.data ?? {};
      // The id goes into a uuid column: an answer without one (a wrong COMPOSER_URL answering 200) is a failed
      // compose, not a session that fails to start.
      if (!isUuid(d.id)) throw new ComposeFailed(`the composer answered ${res.status} without a render id`);
      return {
        render_id: d.id,
        status: String(d.status),
        language: String(d.language ?? req.language),
        stream_video_id: (d.stream_video_id as string | null) ?? null,
        playback_hls_url: (d.playback_hls_url as string | null) ?? null,
        duration_seconds: (d.duration_seconds as number | null) ?? null,
        cached: d.cached === true,
      };
    },
  };
}
