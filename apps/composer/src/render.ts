import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { audioSignature, checkOutput, run, videoSignature, type Tools } from './ffmpeg.ts';
import type { LocalPrimitive, PrimitiveCache } from './primitives.ts';
import type { Recipe } from './recipe.ts';

export interface RenderOptions {
  slug: string;
  assetVersion: number;
  primitives: PrimitiveCache;
  tools: Tools;
  /** A folder of this render alone; the caller removes it. */
  dir: string;
  /** Where silence files are kept between renders. */
  silenceDir: string;
  timeoutMs: number;
  logger: Logger;
  label: string;
  /** Set on the one retry after local files vanished under the primitive memory. */
  retry?: boolean;
}

export interface RenderResult {
  file: string;
  durationSeconds: number;
  /** Whether the video track was stream-copied, and whether every voice-over was used as stored (not converted). */
  copied: { video: boolean; audio: boolean };
  /** Milliseconds per phase: local primitives and concat lists, the ffmpeg run, the ffprobe check. */
  timings: { prepare_ms: number; ffmpeg_ms: number; check_ms: number };
}

export class RenderCheckError extends Error {}

interface AudioEntry {
  path: string;
  /** Where this entry stops (stream copy cuts at the first packet at or after it). */
  length: number;
}

const q = (p: string) => `'${p.replace(/'/g, `'\\''`)}'`;
const sec = (n: number) => n.toFixed(6);

/** Sample rates an mp3 can have. */
const MP3_RATES = new Set([8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]);

/**
 * The voice-over format of a render: the sample rate and channels most of its mp3 voice-overs
 * share (the first one's on a tie), so that the fewest have to be converted.
 */
function audioTarget(vo: LocalPrimitive[]): { rate: number; channels: number } {
  const counts = new Map<string, { rate: number; channels: number; n: number }>();
  for (const a of vo) {
    const p = a.probe.audio;
    if (p?.codec !== 'mp3' || !MP3_RATES.has(p.sample_rate) || p.channels < 1 || p.channels > 2) continue;
    const k = `${p.sample_rate}/${p.channels}`;
    const c = counts.get(k) ?? counts.set(k, { rate: p.sample_rate, channels: p.channels, n: 0 }).get(k)!;
    c.n++;
  }
  let best: { rate: number; channels: number; n: number } | null = null;
  for (const c of counts.values()) if (!best || c.n > best.n) best = c;
  return best ?? { rate: 44100, channels: 1 };
}

/**
 * Bakes a recipe into one MP4 (docs/composer.md). Video: the primitives joined with the concat
 * demuxer and stream copy. Voice-over: each segment's mp3 laid from the segment's start, cut at its
 * end or padded with silence to it, also stream-copied, so the audio boundaries are the video's. When
 * video primitives disagree on codec parameters the video track is re-encoded; a voice-over unlike
 * the others is converted alone (once, cached), so the audio track is always a copy. The result is
 * checked with ffprobe before anyone sees it.
 */
export async function renderRecipe(recipe: Recipe, o: RenderOptions): Promise<RenderResult> {
  const t0 = performance.now();
  const keyOf = (rel: string) => `${o.slug}/${rel}`;
  const names = new Set<string>();
  for (const s of recipe.segments) {
    for (const n of 'blocks' in s ? [...s.blocks, ...s.audio] : [s.video, s.audio]) names.add(n);
  }
  const local = new Map<string, LocalPrimitive>();
  await Promise.all([...names].map(async (n) => local.set(n, await o.primitives.get(keyOf(n), o.assetVersion))));
  const prim = (n: string) => local.get(n)!;

  const videos: LocalPrimitive[] = [];
  const audio: Array<{ name: string; length: number } | { silence: number }> = [];
  const lay = (name: string, length: number) => {
    const d = prim(name).probe.duration;
    if (d >= length) audio.push({ name, length });
    else {
      audio.push({ name, length: d });
      if (length - d > 0.001) audio.push({ silence: length - d });
    }
  };
  for (const s of recipe.segments) {
    if (!('blocks' in s)) {
      videos.push(prim(s.video));
      lay(s.audio, prim(s.video).probe.duration);
      continue;
    }
    const perMaster = recipe.counts_per_audio_master / recipe.reps_per_video_block;
    for (const b of s.blocks) videos.push(prim(b));
    s.audio.forEach((master, j) => {
      const span = s.blocks.slice(j * perMaster, (j + 1) * perMaster).reduce((sum, b) => sum + prim(b).probe.duration, 0);
      lay(master, span);
    });
  }
  const expected = videos.reduce((sum, v) => sum + v.probe.duration, 0);

  const vo = [...names].filter((n) => n.endsWith('.mp3')).map(prim);
  const copyVideo = new Set(videos.map((v) => videoSignature(v.probe))).size === 1 && videos[0]!.probe.video !== null;
  const target = audioTarget(vo);
  const targetSignature = `mp3/${target.rate}/${target.channels}`;
  const odd = vo.filter((a) => audioSignature(a.probe) !== targetSignature);
  const conformed = new Map(
    await Promise.all(odd.map(async (a) => [a, await o.primitives.conformAudio(a, target.rate, target.channels)] as const)),
  );
  const copyAudio = odd.length === 0;
  const longestGap = Math.max(0, ...audio.map((e) => ('silence' in e ? e.silence : 0)));
  const silence = longestGap > 0 ? await silenceFile(o, target.rate, target.channels, longestGap) : null;

  const entries: AudioEntry[] = audio.map((e) =>
    'silence' in e ? { path: silence!, length: e.silence } : { path: conformed.get(prim(e.name)) ?? prim(e.name).path, length: e.length },
  );
  const videoList = ['ffconcat version 1.0', ...videos.flatMap((v) => [`file ${q(v.path)}`, `duration ${sec(v.probe.duration)}`])].join(
    '\n',
  );
  const audioList = [
    'ffconcat version 1.0',
    ...entries.flatMap((e) => [`file ${q(e.path)}`, `duration ${sec(e.length)}`, `outpoint ${sec(e.length)}`]),
  ].join('\n');
  await Promise.all([writeFile(join(o.dir, 'video.txt'), `${videoList}\n`), writeFile(join(o.dir, 'audio.txt'), `${audioList}\n`)]);

  const out = join(o.dir, 'out.mp4');
  const v0 = videos[0]!.probe.video;
  const videoCodec = copyVideo
    ? ['-c:v', 'copy']
    : [
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-crf',
        '20',
        '-pix_fmt',
        'yuv420p',
        ...(v0 ? ['-vf', `scale=${v0.width}:${v0.height},fps=${v0.frame_rate}`] : []),
      ];
  const t1 = performance.now();
  if (!copyVideo) o.logger.warn({ render: o.label }, 'video primitives differ in codec parameters; re-encoding the video track');
  if (!copyAudio)
    o.logger.warn(
      { render: o.label, converted: odd.length, target: targetSignature },
      'voice-overs differ in codec parameters; the odd ones were converted (kept for later renders)',
    );
  try {
    await run(
      o.tools.ffmpeg,
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-y',
        '-f',
        'concat',
        '-safe',
        '0',
        '-i',
        join(o.dir, 'video.txt'),
        '-f',
        'concat',
        '-safe',
        '0',
        '-i',
        join(o.dir, 'audio.txt'),
        '-map',
        '0:v:0',
        '-map',
        '1:a:0',
        ...videoCodec,
        '-c:a',
        'copy',
        '-f',
        'mp4',
        out,
      ],
      { timeoutMs: o.timeoutMs, logger: o.logger, progress: { label: o.label, totalSeconds: expected } },
    );
  } catch (err) {
    // The memory of local files may be stale: a copy, a conversion or a silence file removed under
    // it (COMPOSER_CACHE_DIR may be emptied at any time). Then everything is checked again and the
    // render runs once more; any other failure is the render's own.
    o.primitives.forget();
    if (silence) knownSilence.delete(silence);
    const inputs = [...new Set([...videos.map((v) => v.path), ...entries.map((e) => e.path)])];
    const missing = (
      await Promise.all(
        inputs.map((f) =>
          stat(f).then(
            () => false,
            () => true,
          ),
        ),
      )
    ).some(Boolean);
    if (missing && !o.retry) return renderRecipe(recipe, { ...o, retry: true });
    throw err;
  }

  const t2 = performance.now();

  // Before upload: ffprobe must find what the recipe says (one video and one audio stream, the
  // summed duration), else the render fails and nothing is cached. Only those three facts are asked
  // for: the check costs one process start, not a full probe.
  const p = await checkOutput(o.tools, out);
  const tolerance = 0.1 + 0.005 * recipe.segments.length;
  if (p.video !== 1 || p.audio !== 1)
    throw new RenderCheckError(`rendered file has ${p.video} video and ${p.audio} audio streams, not one of each`);
  if (!(Math.abs(p.duration - expected) <= tolerance)) {
    throw new RenderCheckError(`rendered duration ${p.duration.toFixed(3)} s differs from the expected ${expected.toFixed(3)} s`);
  }
  const ms = (a: number, b: number) => Math.round(b - a);
  return {
    file: out,
    durationSeconds: p.duration,
    copied: { video: copyVideo, audio: copyAudio },
    timings: { prepare_ms: ms(t0, t1), ffmpeg_ms: ms(t1, t2), check_ms: ms(t2, performance.now()) },
  };
}

/** Silence files known to exist (absolute paths), so a warm render does not stat them. */
const knownSilence = new Set<string>();

/**
 * Silence in the voice-overs' own format, so that it joins them by stream copy. Lengths are rounded
 * up to a power of two seconds, so a handful of files serve every gap; kept between renders.
 */
async function silenceFile(o: RenderOptions, rate: number, channels: number, seconds: number): Promise<string> {
  const len = Math.max(8, 2 ** Math.ceil(Math.log2(seconds + 1)));
  const path = join(o.silenceDir, `silence-${rate}-${channels}-${len}.mp3`);
  if (knownSilence.has(path)) return path;
  if (
    await stat(path).then(
      () => true,
      () => false,
    )
  ) {
    knownSilence.add(path);
    return path;
  }
  await mkdir(o.silenceDir, { recursive: true });
  const tmp = `${path}.${randomUUID()}.tmp.mp3`;
  try {
    await run(
      o.tools.ffmpeg,
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-y',
        '-f',
        'lavfi',
        '-i',
        `anullsrc=r=${rate}:cl=${channels === 1 ? 'mono' : 'stereo'}`,
        '-t',
        String(len),
        '-c:a',
        'libmp3lame',
        '-b:a',
        '32k',
        tmp,
      ],
      { timeoutMs: 30_000 },
    );
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
  knownSilence.add(path);
  return path;
}
