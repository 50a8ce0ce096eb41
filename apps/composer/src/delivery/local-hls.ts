import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, rename, rm, stat, writeFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { run, type Tools } from '../ffmpeg.ts';
import { DeliveryError, type DeliveredVideo, type DeliveryProvider } from './types.ts';

export const HLS_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const HLS_FILE = /^(index\.m3u8|seg-[0-9]{5}\.ts)$/;

/**
 * The embedded default's delivery: the MP4 is kept under `<root>/<id>/source.mp4`, ffmpeg cuts it
 * into HLS (stream copy, 6 s segments, a VOD playlist) in the background, and the composer serves
 * `<root>/<id>/hls/` at `/v1/hls/<id>/`. The playlist appears by rename only when complete, so
 * "the playlist exists" is "ready". Single instance only: the files are on this machine.
 */
export function createLocalHlsProvider(opts: { root: string; publicUrl: string; tools: Tools; logger: Logger }): DeliveryProvider & {
  /** Absolute path of a served file, or null (for the HLS route). */
  fileOf(id: string, file: string): string | null;
} {
  const jobs = new Map<string, Promise<void>>();
  const dirOf = (id: string) => join(opts.root, id);
  const url = (id: string) => `${opts.publicUrl}/v1/hls/${id}/index.m3u8`;
  const exists = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );

  function segment(id: string): void {
    if (jobs.has(id)) return;
    const dir = dirOf(id);
    const tmp = join(dir, `hls-${randomUUID()}.tmp`);
    const job = (async () => {
      try {
        await mkdir(tmp, { recursive: true });
        await run(
          opts.tools.ffmpeg,
          [
            '-hide_banner',
            '-loglevel',
            'error',
            '-y',
            '-i',
            join(dir, 'source.mp4'),
            '-map',
            '0',
            '-c',
            'copy',
            '-f',
            'hls',
            '-hls_time',
            '6',
            '-hls_playlist_type',
            'vod',
            '-hls_segment_filename',
            join(tmp, 'seg-%05d.ts'),
            join(tmp, 'index.m3u8'),
          ],
          { timeoutMs: 10 * 60_000 },
        );
        // Another process (the worker's sweep on the embedded default) may have finished first.
        if (!(await exists(join(dir, 'hls')))) await rename(tmp, join(dir, 'hls'));
      } catch (err) {
        if (await exists(join(dir, 'hls', 'index.m3u8'))) return;
        opts.logger.error({ stream_video_id: id, err: (err as Error).message }, 'HLS segmenting failed');
        await writeFile(join(dir, 'error.txt'), (err as Error).message.slice(0, 500)).catch(() => undefined);
      } finally {
        await rm(tmp, { recursive: true, force: true });
        jobs.delete(id);
      }
    })();
    jobs.set(id, job);
  }

  async function status(id: string): Promise<DeliveredVideo> {
    if (!HLS_ID.test(id)) throw new DeliveryError(`unknown video ${id}`);
    const dir = dirOf(id);
    const base = { streamVideoId: id, playbackHlsUrl: url(id) };
    if (await exists(join(dir, 'hls', 'index.m3u8'))) return { ...base, state: 'ready' };
    const failed = await readFile(join(dir, 'error.txt'), 'utf8').catch(() => null);
    if (failed !== null) return { ...base, state: 'error', error: failed };
    if (!(await exists(join(dir, 'source.mp4')))) throw new DeliveryError(`unknown video ${id}`);
    // A process that stopped mid-way left a source without a playlist: segment it again.
    segment(id);
    return { ...base, state: 'processing' };
  }

  return {
    kind: 'local',
    async upload(file) {
      const id = randomUUID();
      const dir = dirOf(id);
      await mkdir(dir, { recursive: true });
      // The render folder may be on another file system (tmp): rename, else copy.
      await rename(file, join(dir, 'source.mp4')).catch(async () => copyFile(file, join(dir, 'source.mp4')));
      segment(id);
      return { streamVideoId: id, playbackHlsUrl: url(id), state: 'processing' };
    },
    status,
    fileOf(id, file) {
      return HLS_ID.test(id) && HLS_FILE.test(file) ? join(dirOf(id), 'hls', file) : null;
    },
    async close() {
      await Promise.allSettled([...jobs.values()]);
    },
  };
}
