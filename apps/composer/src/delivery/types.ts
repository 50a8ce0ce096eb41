/** What the delivery provider says about one uploaded video. */
export interface DeliveredVideo {
  streamVideoId: string;
  playbackHlsUrl: string;
  /** processing: transcoding, not yet playable; ready: plays; error: the provider gave up. */
  state: 'processing' | 'ready' | 'error';
  error?: string;
}

/**
 * Where baked videos go (architecture section 1): a Cloudflare Stream-compatible API in production, HLS written
 * by ffmpeg and served by the composer on the embedded default. Both are asynchronous: an upload
 * returns the ids at once, and status() tells when the video plays.
 */
export interface DeliveryProvider {
  readonly kind: 'local' | 'stream';
  /** Uploads the file (which the provider may move: the caller no longer owns it afterwards). */
  upload(file: string, meta: { name: string }): Promise<DeliveredVideo>;
  status(streamVideoId: string): Promise<DeliveredVideo>;
  /** Stops background work (local segmenting); a no-op for remote providers. */
  close(): Promise<void>;
}

/** The provider failed or answered something unusable: the client gets 502, nothing is cached as ready. */
export class DeliveryError extends Error {}
