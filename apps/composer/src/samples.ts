import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { AssetStore } from '@clinic/assets';
import { run } from './ffmpeg.ts';

/**
 * Real primitives made with ffmpeg's lavfi sources: each video a solid colour, each voice-over a
 * sine tone of its own frequency, so the order of segments in a render can be read back from
 * sampled frames and audio. All videos share codec parameters and start on a keyframe, as the asset
 * pipeline must prepare them for stream copy.
 */
const tools = { ffmpeg: process.env.FFMPEG_PATH ?? 'ffmpeg' };

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
/**
 * The sample primitive set: every slot of spec 4.12 with two or three variants, English voice-overs for
 * all of them and a Romanian intro, made in seconds. It is what the tests compose, and what
 * `npm run composer -- samples` writes for a newcomer's first video.
 */
export const SAMPLE_SET = {
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

/**
 * Writes the sample set for each exercise into the asset store, under `<slug>/` (manifest.json last, so
 * that a half-written set is never taken for a whole one). ffmpeg makes the files once, in a temporary folder
 * under `workDir`, removed afterwards. `progress` hears of each exercise as it is done.
 */
export async function writeSamples(
  store: AssetStore,
  slugs: readonly string[],
  workDir: string,
  progress: (slug: string) => void = () => {},
): Promise<void> {
  // One rendering serves every exercise: the files are the same, only the manifest names the slug.
  const dir = await mkdtemp(join(workDir, 'clinic-samples-'));
  try {
    await renderSampleFiles(dir);
    for (const slug of slugs) {
      for (const f of [...SAMPLE_SET.videos.map((v) => v.file), ...SAMPLE_SET.tones.map((t) => t.file)]) {
        await store.put(`${slug}/${f}`, await readFile(join(dir, f)), { contentType: f.endsWith('.mp4') ? 'video/mp4' : 'audio/mpeg' });
      }
      await store.put(`${slug}/manifest.json`, Buffer.from(JSON.stringify(SAMPLE_SET.manifest(slug))), { contentType: 'application/json' });
      progress(slug);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Makes the set's media files (or the named ones) in `dir`, two at a time: the machine has two cores. */
export async function renderSampleFiles(dir: string, only?: { videos?: string[]; tones?: string[] }): Promise<void> {
  const videos = SAMPLE_SET.videos.filter((v) => !only?.videos || only.videos.includes(v.file));
  const tones = SAMPLE_SET.tones.filter((t) => !only?.tones || only.tones.includes(t.file));
  const jobs = [...videos.map((v) => () => makeVideo(dir, v)), ...tones.map((t) => () => makeTone(dir, t))];
  for (let i = 0; i < jobs.length; i += 2) await Promise.all(jobs.slice(i, i + 2).map((j) => j()));
}
