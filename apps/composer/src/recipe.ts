import { createHash } from 'node:crypto';
import { errors } from '@clinic/http-kit';
import type { Inventory, Slot } from './assets.ts';

export interface ComposeSet {
  side: 'left' | 'right';
  reps: number;
}

export interface ComposeRequest {
  exercise: string;
  language: string;
  sets: ComposeSet[];
  seed: number;
}

/** One piece of the video with its voice-over; file names are relative to the exercise folder. */
export type Segment =
  | { slot: 'intro' | 'pauza' | 'outro'; video: string; audio: string }
  | {
      slot: 'rep-left' | 'rep-right';
      reps: number;
      /** One rep-block video per `reps_per_video_block` reps. */
      blocks: string[];
      /** One audio master per `counts_per_audio_master` counts, laid over its run of blocks from its start. */
      audio: string[];
    };

/**
 * The canonical recipe: every choice made, nothing else. The seed is not part of it, so two seeds
 * that happen to choose the same variants share one render; the asset version is not either,
 * because it is its own column of the cache key (spec 2.12).
 */
export interface Recipe {
  v: 1;
  exercise: string;
  language: string;
  reps_per_video_block: number;
  counts_per_audio_master: number;
  segments: Segment[];
}

/** JSON with sorted keys: the same recipe is always the same bytes, whatever built it. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .filter((k) => obj[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export const recipeHash = (recipe: Recipe): string => createHash('sha256').update(canonicalJson(recipe)).digest('hex');

/**
 * A repeatable choice from a pool: each decision hashes the seed with its own label, so one choice
 * never shifts another (adding a set does not reshuffle the intro).
 */
function pick(pool: number[], seed: number, label: string): number {
  const h = createHash('sha256').update(`${seed}|${label}`).digest();
  return pool[h.readUInt32BE(0) % pool.length]!;
}

/**
 * Turns a request into its recipe (docs/composer.md): intro, then each set as rep blocks with its
 * voice-over masters, a pause between sets, outro. Throws 400 validation_error naming the input
 * when a needed slot has no variant.
 */
export function buildRecipe(req: ComposeRequest, inv: Inventory): Recipe {
  const m = inv.manifest;
  if (!m.languages.includes(req.language)) {
    throw errors.validation({ language: `"${req.language}" is not listed in the manifest languages (${m.languages.join(', ')})` });
  }
  req.sets.forEach((s, i) => {
    if (!m.sides.includes(s.side)) throw errors.validation({ sets: `sets[${i}].side "${s.side}" is not in the manifest sides` });
    if (s.reps % m.reps_per_video_block !== 0) {
      throw errors.validation({ sets: `sets[${i}].reps must be a multiple of reps_per_video_block (${m.reps_per_video_block})` });
    }
  });

  const audioPool = inv.audio[req.language] ?? {};
  const videoOf = (slot: Slot, label: string): string => {
    const pool = inv.video[slot] ?? [];
    if (!pool.length) throw errors.validation({ exercise: `the exercise has no ${slot} video (${slot}-video-{n}.mp4)` });
    return `${slot}-video-${pick(pool, req.seed, label)}.mp4`;
  };
  const audioOf = (slot: Slot, label: string): string => {
    const pool = audioPool[slot] ?? [];
    if (!pool.length)
      throw errors.validation({
        language: `the exercise has no ${slot} voice-over in "${req.language}" (audio/${req.language}/${slot}-vo-{n}.mp3)`,
      });
    return `audio/${req.language}/${slot}-vo-${pick(pool, req.seed, label)}.mp3`;
  };
  const plain = (slot: 'intro' | 'pauza' | 'outro', label: string): Segment => ({
    slot,
    video: videoOf(slot, `${label}.video`),
    audio: audioOf(slot, `${label}.audio`),
  });

  const blocksPerMaster = m.counts_per_audio_master / m.reps_per_video_block;
  const segments: Segment[] = [plain('intro', 'intro')];
  req.sets.forEach((s, i) => {
    if (i > 0) segments.push(plain('pauza', `pause${i}`));
    const slot = `rep-${s.side}` as const;
    const nBlocks = s.reps / m.reps_per_video_block;
    const blocks = Array.from({ length: nBlocks }, (_, b) => videoOf(slot, `set${i + 1}.block${b + 1}`));
    const audio = Array.from({ length: Math.ceil(nBlocks / blocksPerMaster) }, (_, a) => audioOf(slot, `set${i + 1}.master${a + 1}`));
    segments.push({ slot, reps: s.reps, blocks, audio });
  });
  segments.push(plain('outro', 'outro'));
  return {
    v: 1,
    exercise: req.exercise,
    language: req.language,
    reps_per_video_block: m.reps_per_video_block,
    counts_per_audio_master: m.counts_per_audio_master,
    segments,
  };
}
