import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { renderSampleFiles, SAMPLE_SET } from '../src/samples.ts';

export { makeTone, makeVideo, type ToneSpec, type VideoSpec } from '../src/samples.ts';
/** The tests compose the sample set (src/samples.ts). */
export const FIXTURE = SAMPLE_SET;

/**
 * The whole set, rendered once per test run and shared by its test files: under the runner (which makes
 * TMPDIR a folder of the run's own and removes it at the end) it lives in that folder, made whole in a
 * folder of its own and renamed into place, so two files rendering at once both end with one whole set.
 * Run outside the runner, each call renders into a folder of its own (nothing left in the shared /tmp).
 */
let sharedSet: Promise<string | null> | undefined;
function renderedSet(): Promise<string | null> {
  if (!process.env.TEST_MODE) return Promise.resolve(null);
  sharedSet ??= (async () => {
    const dir = join(tmpdir(), 'composer-sample-set');
    if (existsSync(join(dir, '.complete'))) return dir;
    const work = await mkdtemp(join(tmpdir(), 'composer-sample-set-'));
    await renderSampleFiles(work);
    await writeFile(join(work, '.complete'), '');
    // Another test file may have finished first; its set is as good as this one.
    await rename(work, dir).catch(() => rm(work, { recursive: true, force: true }));
    return dir;
  })();
  return sharedSet;
}

/** Writes the fixture exercise under `<root>/<slug>/` (the folder layout of spec 4.12). */
export async function writeFixtureExercise(root: string, slug: string, only?: { videos?: string[]; tones?: string[] }): Promise<void> {
  const dir = join(root, slug);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(FIXTURE.manifest(slug)));
  const set = await renderedSet();
  if (!set) return renderSampleFiles(dir, only);
  const files = [
    ...FIXTURE.videos.filter((v) => !only?.videos || only.videos.includes(v.file)),
    ...FIXTURE.tones.filter((t) => !only?.tones || only.tones.includes(t.file)),
  ].map((f) => f.file);
  for (const f of files) {
    await mkdir(dirname(join(dir, f)), { recursive: true });
    await copyFile(join(set, f), join(dir, f));
  }
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
