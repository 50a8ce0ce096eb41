import { jointAngle, type JointName } from './joints.ts';
import type { Movement } from './movement.ts';
import type { PoseBatch } from './format.ts';

/*
 * Rep counting, range of motion and form score (docs/telemetry.md, "Scoring"). Offline: it runs once,
 * at session end, over every frame, so smoothing can be centred (no lag).
 */
export const ALGORITHM_VERSION = 'pose-score/1';

/** Centred smoothing window: +-100 ms (about 7 frames at 30 fps): a median, then a mean. */
const HALF_WINDOW_MS = 100;
/** Hysteresis on rep progress (0 at rest, 1 at target): a rep starts above HIGH and ends below LOW. */
const HIGH = 0.6;
const LOW = 0.3;
/** A "rep" shorter than this is a glitch, not a movement. */
const MIN_REP_MS = 400;
/** A gap in valid frames longer than this (occlusion, dropped batches) abandons a rep in progress. */
const MAX_GAP_MS = 1500;
/** Left/right range difference at which the symmetry part of a rep's score reaches 0. */
const SYMMETRY_SPAN_DEG = 30;
const WEIGHTS = { depth: 0.6, tempo: 0.25, symmetry: 0.15 };

export interface Rep {
  index: number;
  start_ms: number;
  end_ms: number;
  tempo_s: number;
  /** Max minus min of the primary angle during the rep. */
  range_deg: number;
  /** The primary angle at the deepest point (towards target_angle). */
  peak_deg: number;
  score: number;
}

export interface JointRom {
  min_deg: number | null;
  max_deg: number | null;
  range_deg: number | null;
  valid_frames: number;
}

export interface SessionScore {
  algorithm_version: string;
  rep_count: number;
  /** Mean rep score, 0-100; null when no rep was made (nothing to score). */
  form_score: number | null;
  rom: Record<string, JointRom>;
  frames: number;
  /** Frames where the primary signal was measurable (visibility gate). */
  valid_frames: number;
  duration_s: number;
  reps: Rep[];
}

/** Frames of a whole session, concatenated in time order. */
export interface Frames {
  t: Float64Array;
  data: Float32Array;
  count: number;
}

export function concatBatches(batches: PoseBatch[]): Frames {
  const sorted = [...batches].sort((a, b) => a.seq - b.seq);
  const count = sorted.reduce((n, b) => n + b.timestamps.length, 0);
  const t = new Float64Array(count);
  const data = new Float32Array(count * 33 * 4);
  let last = -Infinity;
  let kept = 0;
  for (const b of sorted) {
    for (let f = 0; f < b.timestamps.length; f++) {
      const ts = b.timestamps[f]!;
      // Overlapping or out-of-order batches: keep time strictly increasing.
      if (ts <= last) continue;
      last = ts;
      t[kept] = ts;
      data.set(b.data.subarray(f * 132, (f + 1) * 132), kept * 132);
      kept++;
    }
  }
  return { t: t.subarray(0, kept), data: data.subarray(0, kept * 132), count: kept };
}

/** Centred median then mean over +-HALF_WINDOW_MS of valid (non-NaN) samples; NaN stays NaN. */
export function smooth(t: Float64Array, v: Float64Array): Float64Array {
  const n = v.length;
  const med = new Float64Array(n).fill(NaN);
  const buf: number[] = [];
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(v[i]!)) continue;
    while (t[lo]! < t[i]! - HALF_WINDOW_MS) lo++;
    if (hi < i) hi = i;
    while (hi + 1 < n && t[hi + 1]! <= t[i]! + HALF_WINDOW_MS) hi++;
    buf.length = 0;
    for (let j = lo; j <= hi; j++) if (!Number.isNaN(v[j]!)) buf.push(v[j]!);
    buf.sort((a, b) => a - b);
    const m = buf.length >> 1;
    med[i] = buf.length % 2 ? buf[m]! : (buf[m - 1]! + buf[m]!) / 2;
  }
  const out = new Float64Array(n).fill(NaN);
  lo = 0;
  hi = 0;
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(med[i]!)) continue;
    while (t[lo]! < t[i]! - HALF_WINDOW_MS) lo++;
    if (hi < i) hi = i;
    while (hi + 1 < n && t[hi + 1]! <= t[i]! + HALF_WINDOW_MS) hi++;
    let s = 0;
    let c = 0;
    for (let j = lo; j <= hi; j++) {
      if (Number.isNaN(med[j]!)) continue;
      s += med[j]!;
      c++;
    }
    out[i] = s / c;
  }
  return out;
}

function angleSeries(fr: Frames, joint: JointName): Float64Array {
  const out = new Float64Array(fr.count);
  for (let f = 0; f < fr.count; f++) out[f] = jointAngle(fr.data, f, joint);
  return out;
}

function rangeIn(v: Float64Array, from: number, to: number): { min: number; max: number } | null {
  let min = Infinity;
  let max = -Infinity;
  for (let i = from; i <= to; i++) {
    const x = v[i]!;
    if (Number.isNaN(x)) continue;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  return min === Infinity ? null : { min, max };
}

const clamp01 = (x: number) => Math.max(0, Math.min(1, x));
const round1 = (x: number) => Math.round(x * 10) / 10;

export function tempoScore(seconds: number, m: Movement): number {
  if (seconds < m.tempo_s.min) return clamp01(seconds / m.tempo_s.min);
  if (seconds > m.tempo_s.max) return clamp01(1 - (seconds - m.tempo_s.max) / m.tempo_s.max);
  return 1;
}

/** Scores a session's frames against a movement definition. */
export function scoreSession(fr: Frames, m: Movement): SessionScore {
  const series = new Map<JointName, Float64Array>();
  for (const j of new Set<JointName>([...m.tracked_joints, ...m.primary_joints])) series.set(j, smooth(fr.t, angleSeries(fr, j)));

  // Primary signal: mean of the primary joints measurable in the frame.
  const primary = new Float64Array(fr.count).fill(NaN);
  let validFrames = 0;
  for (let f = 0; f < fr.count; f++) {
    let s = 0;
    let c = 0;
    for (const j of m.primary_joints) {
      const x = series.get(j)![f]!;
      if (Number.isNaN(x)) continue;
      s += x;
      c++;
    }
    if (c) {
      primary[f] = s / c;
      validFrames++;
    }
  }
  const span = m.rest_angle - m.target_angle;
  const progress = (a: number) => (m.rest_angle - a) / span;

  // Hysteresis state machine over valid frames.
  const windows: Array<[number, number]> = [];
  let state: 'unknown' | 'rest' | 'rep' = 'unknown';
  let lastRest = -1;
  let repStart = -1;
  let prev = -1;
  for (let f = 0; f < fr.count; f++) {
    const a = primary[f]!;
    if (Number.isNaN(a)) continue;
    if (prev >= 0 && fr.t[f]! - fr.t[prev]! > MAX_GAP_MS) state = 'unknown';
    prev = f;
    const p = progress(a);
    if (state === 'unknown') {
      if (p < LOW) {
        state = 'rest';
        lastRest = f;
      }
    } else if (state === 'rest') {
      if (p < LOW) lastRest = f;
      else if (p > HIGH) {
        state = 'rep';
        repStart = lastRest;
      }
    } else if (p < LOW) {
      if (fr.t[f]! - fr.t[repStart]! >= MIN_REP_MS) windows.push([repStart, f]);
      state = 'rest';
      lastRest = f;
    }
  }

  // Widen each window from its LOW crossings to where the movement really starts and ends: walk out
  // while progress keeps falling (towards rest), never into the neighbouring rep.
  const reps: Rep[] = [];
  // Symmetry compares the primary joints' left and right sides (a lunge's hips differ by design).
  const pairs = m.primary_joints
    .filter((j) => j.startsWith('left_') && m.primary_joints.includes(j.replace('left_', 'right_') as JointName))
    .map((j) => [j, j.replace('left_', 'right_')] as [JointName, JointName]);
  windows.forEach(([s0, e0], k) => {
    const floor = k > 0 ? windows[k - 1]![1] : 0;
    const ceil = k + 1 < windows.length ? windows[k + 1]![0] : fr.count - 1;
    let s = s0;
    for (let i = s0 - 1; i >= floor; i--) {
      if (Number.isNaN(primary[i]!)) continue;
      if (progress(primary[i]!) > progress(primary[s]!)) break;
      s = i;
    }
    let e = e0;
    for (let i = e0 + 1; i <= ceil; i++) {
      if (Number.isNaN(primary[i]!)) continue;
      if (progress(primary[i]!) > progress(primary[e]!)) break;
      e = i;
    }
    const r = rangeIn(primary, s, e)!;
    const range = r.max - r.min;
    const peak = span > 0 ? r.min : r.max;
    const tempo = (fr.t[e]! - fr.t[s]!) / 1000;
    const depth = clamp01(range / Math.abs(span));
    let symmetry = 1;
    const diffs: number[] = [];
    for (const [l, rj] of pairs) {
      const a = rangeIn(series.get(l)!, s, e);
      const b = rangeIn(series.get(rj)!, s, e);
      if (a && b) diffs.push(Math.abs(a.max - a.min - (b.max - b.min)));
    }
    if (diffs.length) symmetry = clamp01(1 - diffs.reduce((x, y) => x + y, 0) / diffs.length / SYMMETRY_SPAN_DEG);
    const score = Math.round(100 * (WEIGHTS.depth * depth + WEIGHTS.tempo * tempoScore(tempo, m) + WEIGHTS.symmetry * symmetry));
    reps.push({
      index: k,
      start_ms: fr.t[s]!,
      end_ms: fr.t[e]!,
      tempo_s: Math.round(tempo * 100) / 100,
      range_deg: round1(range),
      peak_deg: round1(peak),
      score,
    });
  });

  const rom: Record<string, JointRom> = {};
  for (const j of m.tracked_joints) {
    const v = series.get(j)!;
    let valid = 0;
    for (let i = 0; i < v.length; i++) if (!Number.isNaN(v[i]!)) valid++;
    const r = rangeIn(v, 0, v.length - 1);
    rom[j] = r
      ? { min_deg: round1(r.min), max_deg: round1(r.max), range_deg: round1(r.max - r.min), valid_frames: valid }
      : { min_deg: null, max_deg: null, range_deg: null, valid_frames: 0 };
  }
  return {
    algorithm_version: ALGORITHM_VERSION,
    rep_count: reps.length,
    form_score: reps.length ? Math.round(reps.reduce((s, r) => s + r.score, 0) / reps.length) : null,
    rom,
    frames: fr.count,
    valid_frames: validFrames,
    duration_s: fr.count ? round1((fr.t[fr.count - 1]! - fr.t[0]!) / 1000) : 0,
    reps,
  };
}
