import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run } from '../src/ffmpeg.ts';

/**
 * Real primitives made with ffmpeg's lavfi sources: each video a solid colour, each voice-over a
 * sine tone of its own frequency, so the order of segments in a render can be read back from
 * sampled frames and audio. All videos share codec parameters and start on a keyframe, as the asset
 * pipeline must prepare them for stream copy.
 */
const tools = { ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' };

export interface VideoSpec {
  file: string;
  color: [number, number, number];
  seconds: number;
}
export interface ToneSpec {
  file: string;
  hz: number;
  seconds: number;
}

const hex = (c: [number, number, number]) => `0x${c.map((v) => v.toString(16).padStart(2, '0')).join('')}`;

export async function makeVideo(root: string, v: VideoSpec, size = '160x120', rate = 25): Promise<void> {
  const out = join(root, v.file);
  await mkdir(dirname(out), { recursive: true });
  await run(
    tools.ffmpeg,
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `color=c=${hex(v.color)}:s=${size}:r=${rate}:d=${v.seconds}`,
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-g',
      '250',
      '-bf',
      '0',
      '-video_track_timescale',
      '12800',
      '-an',
      out,
    ],
    { timeoutMs: 60_000 },
  );
}

export async function makeTone(root: string, t: ToneSpec, sampleRate = 44100): Promise<void> {
  const out = join(root, t.file);
  await mkdir(dirname(out), { recursive: true });
  await run(
    tools.ffmpeg,
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `sine=frequency=${t.hz}:sample_rate=${sampleRate}:duration=${t.seconds}`,
      '-ac',
      '1',
      '-c:a',
      'libmp3lame',
      '-b:a',
      '64k',
      out,
    ],
    { timeoutMs: 60_000 },
  );
}

/** The fixture exercise of the composer tests: durations, colours and tones of every primitive. */
export const FIXTURE = {
  videos: [
    { file: 'intro-video-1.mp4', color: [255, 0, 0], seconds: 2 },
    { file: 'intro-video-2.mp4', color: [0, 255, 0], seconds: 2 },
    { file: 'pauza-video-1.mp4', color: [0, 0, 255], seconds: 1 },
    { file: 'outro-video-1.mp4', color: [255, 255, 0], seconds: 1 },
    { file: 'rep-left-video-1.mp4', color: [255, 0, 255], seconds: 2 },
    { file: 'rep-left-video-2.mp4', color: [0, 255, 255], seconds: 2 },
    { file: 'rep-left-video-3.mp4', color: [255, 255, 255], seconds: 2 },
    { file: 'rep-right-video-1.mp4', color: [255, 128, 0], seconds: 2 },
    { file: 'rep-right-video-2.mp4', color: [128, 0, 255], seconds: 2 },
  ] as VideoSpec[],
  tones: [
    // Shorter than its video: padded with silence. Longer: cut at the segment's end.
    { file: 'audio/en/intro-vo-1.mp3', hz: 300, seconds: 1.5 },
    { file: 'audio/en/intro-vo-2.mp3', hz: 500, seconds: 1.5 },
    { file: 'audio/en/pauza-vo-1.mp3', hz: 700, seconds: 1.5 },
    { file: 'audio/en/outro-vo-1.mp3', hz: 900, seconds: 0.5 },
    // Audio masters: 20 counts over four 2 s blocks of five reps.
    { file: 'audio/en/rep-left-vo-1.mp3', hz: 1100, seconds: 8 },
    { file: 'audio/en/rep-left-vo-2.mp3', hz: 1300, seconds: 8 },
    { file: 'audio/en/rep-right-vo-1.mp3', hz: 1500, seconds: 8 },
    // Romanian exists for the intro only: composing in ro misses the other slots.
    { file: 'audio/ro/intro-vo-1.mp3', hz: 1700, seconds: 1.5 },
  ] as ToneSpec[],
  manifest: (slug: string) => ({
    exercise: slug,
    reps_per_video_block: 5,
    counts_per_audio_master: 20,
    sides: ['left', 'right'],
    languages: ['en', 'ro'],
  }),
};

/** Writes the fixture exercise under `<root>/<slug>/` (the folder layout of spec 4.12). */
export async function writeFixtureExercise(root: string, slug: string, only?: { videos?: string[]; tones?: string[] }): Promise<void> {
  const dir = join(root, slug);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(FIXTURE.manifest(slug)));
  const videos = FIXTURE.videos.filter((v) => !only?.videos || only.videos.includes(v.file));
  const tones = FIXTURE.tones.filter((t) => !only?.tones || only.tones.includes(t.file));
  // Two at a time: the machine has two cores.
  const jobs = [...videos.map((v) => () => makeVideo(dir, v)), ...tones.map((t) => () => makeTone(dir, t))];
  for (let i = 0; i < jobs.length; i += 2) await Promise.all(jobs.slice(i, i + 2).map((j) => j()));
}

/** The average colour of the frame at `seconds` (scaled to one pixel). */
export async function colorAt(file: string, seconds: number): Promise<[number, number, number]> {
  const buf = await runBinary([
    '-hide_banner',
    '-loglevel',
    'error',
    '-ss',
    seconds.toFixed(3),
    '-i',
    file,
    '-frames:v',
    '1',
    '-vf',
    'scale=1:1',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    '-',
  ]);
  return [buf[0]!, buf[1]!, buf[2]!];
}

/** The dominant frequency of 0.3 s of audio from `seconds` (zero crossings), 0 for silence. */
export async function toneAt(file: string, seconds: number): Promise<number> {
  const buf = await runBinary([
    '-hide_banner',
    '-loglevel',
    'error',
    '-ss',
    seconds.toFixed(3),
    '-i',
    file,
    '-t',
    '0.3',
    '-vn',
    '-ac',
    '1',
    '-ar',
    '44100',
    '-f',
    's16le',
    '-',
  ]);
  const n = Math.floor(buf.length / 2);
  let crossings = 0;
  let peak = 0;
  for (let i = 1; i < n; i++) {
    const a = buf.readInt16LE((i - 1) * 2);
    const b = buf.readInt16LE(i * 2);
    peak = Math.max(peak, Math.abs(b));
    if ((a < 0 && b >= 0) || (a >= 0 && b < 0)) crossings++;
  }
  if (peak < 500) return 0;
  return Math.round(crossings / 2 / (n / 44100));
}

async function runBinary(args: string[]): Promise<Buffer> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`ffmpeg exit ${code}: ${err}`))));
  });
}
