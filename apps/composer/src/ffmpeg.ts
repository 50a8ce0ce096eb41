import { spawn, spawnSync } from 'node:child_process';
import type { Logger } from 'pino';

export interface Tools {
  ffmpeg: string;
  ffprobe: string;
}

export class MediaToolError extends Error {}

/**
 * Runs ffmpeg or ffprobe without a shell (arguments are never interpreted). Keeps the last 8 KiB of
 * stderr for the error, kills the process at the time-out. With `progress`, ffmpeg reports through
 * `-progress pipe:1` and the position is logged about every 5 s, so a long render shows it is alive.
 */
export function run(
  bin: string,
  args: string[],
  opts: { timeoutMs: number; logger?: Logger; progress?: { label: string; totalSeconds: number } },
): Promise<string> {
  const fullArgs = opts.progress ? ['-progress', 'pipe:1', '-nostats', ...args] : args;
  return new Promise((resolve, reject) => {
    const child = spawn(bin, fullArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let lastLog = Date.now();
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (!opts.progress) {
        out += chunk;
        return;
      }
      const m = /out_time_us=(\d+)/.exec(chunk);
      if (m && opts.logger && Date.now() - lastLog >= 5000) {
        lastLog = Date.now();
        const done = Number(m[1]) / 1e6;
        opts.logger.info(
          {
            render: opts.progress.label,
            seconds_done: Math.round(done),
            seconds_total: Math.round(opts.progress.totalSeconds),
            pct: Math.min(100, Math.round((100 * done) / opts.progress.totalSeconds)),
          },
          'render progress',
        );
      }
    });
    child.stderr.on('data', (chunk: string) => {
      err = (err + chunk).slice(-8192);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new MediaToolError(`${bin} could not start: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new MediaToolError(`${bin} failed (${signal ?? `exit ${code}`}): ${err.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

export interface Probe {
  duration: number;
  video: { codec: string; width: number; height: number; pix_fmt: string; frame_rate: string; time_base: string; profile: string } | null;
  audio: { codec: string; sample_rate: number; channels: number; bit_rate: number } | null;
}

interface RawStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  time_base?: string;
  profile?: string;
  sample_rate?: string;
  channels?: number;
  bit_rate?: string;
}

export async function probe(tools: Tools, file: string, timeoutMs = 20_000): Promise<Probe> {
  const json = await run(
    tools.ffprobe,
    [
      '-v',
      'error',
      '-print_format',
      'json',
      '-show_entries',
      'format=duration:stream=codec_type,codec_name,width,height,pix_fmt,r_frame_rate,time_base,profile,sample_rate,channels,bit_rate',
      file,
    ],
    { timeoutMs },
  );
  const parsed = JSON.parse(json) as { format?: { duration?: string }; streams?: RawStream[] };
  const v = parsed.streams?.find((s) => s.codec_type === 'video');
  const a = parsed.streams?.find((s) => s.codec_type === 'audio');
  return {
    duration: Number(parsed.format?.duration ?? NaN),
    video: v
      ? {
          codec: v.codec_name ?? '',
          width: v.width ?? 0,
          height: v.height ?? 0,
          pix_fmt: v.pix_fmt ?? '',
          frame_rate: v.r_frame_rate ?? '',
          time_base: v.time_base ?? '',
          profile: v.profile ?? '',
        }
      : null,
    audio: a
      ? { codec: a.codec_name ?? '', sample_rate: Number(a.sample_rate ?? 0), channels: a.channels ?? 0, bit_rate: Number(a.bit_rate ?? 0) }
      : null,
  };
}

/**
 * The output check before upload: stream kinds and container duration only (no codec details), in
 * compact text. What it costs is mostly ffprobe's own start-up, so it asks for nothing more.
 */
export async function checkOutput(
  tools: Tools,
  file: string,
  timeoutMs = 20_000,
): Promise<{ duration: number; video: number; audio: number }> {
  const text = await run(
    tools.ffprobe,
    ['-v', 'error', '-show_entries', 'format=duration:stream=codec_type', '-of', 'default=noprint_wrappers=1', file],
    { timeoutMs },
  );
  const r = { duration: NaN, video: 0, audio: 0 };
  for (const line of text.split('\n')) {
    if (line === 'codec_type=video') r.video++;
    else if (line === 'codec_type=audio') r.audio++;
    else if (line.startsWith('duration=')) r.duration = Number(line.slice('duration='.length));
  }
  return r;
}

/** Codec parameters that must agree for concat with stream copy. */
export const videoSignature = (p: Probe): string =>
  p.video
    ? [p.video.codec, p.video.profile, p.video.width, p.video.height, p.video.pix_fmt, p.video.frame_rate, p.video.time_base].join('/')
    : 'none';
export const audioSignature = (p: Probe): string => (p.audio ? [p.audio.codec, p.audio.sample_rate, p.audio.channels].join('/') : 'none');

/** The tools that cannot be run here (not installed, not on PATH), by name. */
export function missingTools(tools: Tools = { ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' }): string[] {
  return Object.values(tools).filter((bin) => spawnSync(bin, ['-version'], { stdio: 'ignore' }).status !== 0);
}

/**
 * For tests that render media (node:test's `skip`): the reason when ffmpeg or ffprobe is missing, else
 * false. CI sets REQUIRE_FFMPEG=1, and then a missing tool fails those tests instead of skipping them.
 */
export function skipWithoutFfmpeg(): string | false {
  const missing = missingTools();
  if (!missing.length || process.env.REQUIRE_FFMPEG === '1') return false;
  return `${missing.join(' and ')} not found: install ffmpeg (apt-get install ffmpeg) to run the media tests`;
}
