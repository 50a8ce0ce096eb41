import type { JointName } from '../pose/joints.ts';

/*
 * Synthetic landmark sequences from known joint-angle curves (the accuracy table of docs/telemetry.md).
 * A stick figure in world coordinates (metres) is posed by forward kinematics so that the joint angles
 * the scorer measures are exactly the curves generated; noise, dropped frames, low visibility and
 * tempo changes are then applied on top. Deterministic for a given seed.
 */

export type ExerciseKind = 'squat' | 'arm-raise' | 'lunge';
export type Scenario = 'clean' | 'noisy' | 'dropped' | 'low_visibility' | 'varying_tempo';

export interface GeneratedSession {
  fps: number;
  timestamps: number[];
  /** frames * 33 * 4 floats. */
  data: Float32Array;
  trueReps: number;
  /** Exact range of each generated joint angle over the session. */
  trueRom: Partial<Record<JointName, number>>;
}

export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    // xorshift32
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
}

type V = [number, number, number];
const add = (a: V, b: V, k = 1): V => [a[0] + b[0] * k, a[1] + b[1] * k, a[2] + b[2] * k];
const sub = (a: V, b: V): V => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const dot = (a: V, b: V) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const norm = (a: V): V => {
  const n = Math.hypot(...a);
  return [a[0] / n, a[1] / n, a[2] / n];
};
/** The unit direction at `deg` degrees from unit u, turning towards `towards` (in the plane of u and towards). */
function bend(u: V, towards: V, deg: number): V {
  const w = norm(add(towards, u, -dot(towards, u)));
  const r = (deg * Math.PI) / 180;
  return norm(add([u[0] * Math.cos(r), u[1] * Math.cos(r), u[2] * Math.cos(r)], w, Math.sin(r)));
}

const L = { shin: 0.43, thigh: 0.45, torso: 0.5, upperArm: 0.3, forearm: 0.27 };
const UP: V = [0, 1, 0];
const DOWN: V = [0, -1, 0];
const FWD: V = [1, 0, 0];

/** One leg posed from the ground up: knee angle, hip angle; returns ankle, knee, hip, shoulder. */
function leg(ankle: V, kneeDeg: number, hipDeg: number): { ankle: V; knee: V; hip: V; shoulder: V } {
  const lean = (180 - kneeDeg) / 2;
  const shin = bend(UP, FWD, lean);
  const knee = add(ankle, shin, L.shin);
  const toAnkle: V = [-shin[0], -shin[1], -shin[2]];
  const thigh = bend(toAnkle, [-1, 0, 0], kneeDeg); // hips go back
  const hip = add(knee, thigh, L.thigh);
  const toKnee: V = [-thigh[0], -thigh[1], -thigh[2]];
  const torso = bend(toKnee, FWD, hipDeg);
  const shoulder = add(hip, torso, L.torso);
  return { ankle, knee, hip, shoulder };
}

/** An arm from the shoulder: shoulder angle (from the torso line), elbow angle; returns elbow and wrist. */
function arm(shoulder: V, hip: V, lateral: V, shoulderDeg: number, elbowDeg: number): { elbow: V; wrist: V } {
  const toHip = norm(sub(hip, shoulder));
  const upper = bend(toHip, lateral, shoulderDeg);
  const elbow = add(shoulder, upper, L.upperArm);
  const back: V = [-upper[0], -upper[1], -upper[2]];
  const fore = bend(back, UP, elbowDeg);
  return { elbow, wrist: add(elbow, fore, L.forearm) };
}

/** Landmarks (33 x [x, y, z]) for a pose described by joint angles. */
function pose(kind: ExerciseKind, a: Partial<Record<JointName, number>>): V[] {
  const lm: V[] = Array.from({ length: 33 }, () => [0, 0, 0] as V);
  let lLeg: ReturnType<typeof leg>;
  let rLeg: ReturnType<typeof leg>;
  if (kind === 'lunge') {
    lLeg = leg([0.35, 0, 0.1], a.left_knee!, a.left_hip!);
    rLeg = leg([-0.35, 0, -0.1], a.right_knee!, a.right_hip!);
  } else {
    lLeg = leg([0, 0, 0.1], a.left_knee ?? 178, a.left_hip ?? 178);
    rLeg = leg([0, 0, -0.1], a.right_knee ?? 178, a.right_hip ?? 178);
  }
  // The hip angle is measured to these shoulders: they must be the legs' own.
  const lSh = lLeg.shoulder;
  const rSh = rLeg.shoulder;
  const lArm = arm(lSh, lLeg.hip, [0, 0, 1], a.left_shoulder ?? 10, a.left_elbow ?? 170);
  const rArm = arm(rSh, rLeg.hip, [0, 0, -1], a.right_shoulder ?? 10, a.right_elbow ?? 170);
  const head = add(add(lSh, sub(rSh, lSh), 0.5), UP, 0.22);
  for (let i = 0; i <= 10; i++) lm[i] = add(head, [0.03 * (i % 3), 0.02 * (i % 4), 0.02 * (i - 5)]);
  lm[11] = lSh;
  lm[12] = rSh;
  lm[13] = lArm.elbow;
  lm[14] = rArm.elbow;
  lm[15] = lArm.wrist;
  lm[16] = rArm.wrist;
  for (let i = 17; i <= 22; i++) lm[i] = add(i % 2 ? lArm.wrist : rArm.wrist, [0.02, 0.02 * (i % 3), 0]);
  lm[23] = lLeg.hip;
  lm[24] = rLeg.hip;
  lm[25] = lLeg.knee;
  lm[26] = rLeg.knee;
  lm[27] = lLeg.ankle;
  lm[28] = rLeg.ankle;
  lm[29] = add(lLeg.ankle, [-0.05, 0.02, 0]);
  lm[30] = add(rLeg.ankle, [-0.05, 0.02, 0]);
  lm[31] = add(lLeg.ankle, [0.15, 0, 0]);
  lm[32] = add(rLeg.ankle, [0.15, 0, 0]);
  void DOWN;
  return lm;
}

/** The joint-angle curves of one rep at progress u in [0, 1] of depth d in [0, 1]. */
function anglesAt(kind: ExerciseKind, phase: number, depth: number): Partial<Record<JointName, number>> {
  const k = ((1 - Math.cos(2 * Math.PI * phase)) / 2) * depth; // 0 at rest, depth at the bottom
  switch (kind) {
    case 'squat':
      return { left_knee: 172 - 82 * k, right_knee: 172 - 82 * k, left_hip: 170 - 75 * k, right_hip: 170 - 75 * k };
    case 'lunge':
      return { left_knee: 172 - 80 * k, right_knee: 172 - 72 * k, left_hip: 172 - 70 * k, right_hip: 172 - 10 * k };
    case 'arm-raise':
      return { left_shoulder: 12 + 153 * k, right_shoulder: 12 + 150 * k, left_elbow: 172, right_elbow: 172 };
  }
}

export interface GenerateOptions {
  kind: ExerciseKind;
  scenario: Scenario;
  reps?: number;
  seed?: number;
  fps?: number;
}

/** A session: rest, then `reps` reps separated by short pauses, then rest. */
export function generateSession(o: GenerateOptions): GeneratedSession {
  const r = rng(o.seed ?? 42);
  const fps = o.fps ?? 30;
  const reps = o.reps ?? 10;
  const sc = o.scenario;
  // Segments: [duration s, depth (0 = rest)].
  const segments: Array<[number, number]> = [[1.5, 0]];
  for (let i = 0; i < reps; i++) {
    const dur = sc === 'varying_tempo' ? 1.3 + r() * 3.2 : 2.5;
    const depth = sc === 'varying_tempo' ? 0.85 + r() * 0.15 : 1;
    segments.push([dur, depth]);
    segments.push([sc === 'varying_tempo' ? 0.2 + r() * 1.2 : 0.8, 0]);
    // Fidgets: a small partial movement (a quarter of the way) between reps that must not count.
    if (sc === 'noisy' && i % 3 === 1) segments.push([1.0, -0.22]);
  }
  segments.push([1.5, 0]);

  const timestamps: number[] = [];
  const frames: number[][] = [];
  const rom: Partial<Record<JointName, { min: number; max: number }>> = {};
  const total = segments.reduce((s, [d]) => s + d, 0);
  let segIdx = 0;
  let segStart = 0;
  // Drop bursts and low-visibility stretches, decided up front.
  const burstAt = new Set<number>();
  if (sc === 'dropped') for (let b = 0; b < 4; b++) burstAt.add(Math.floor(r() * total * fps));
  for (let f = 0; f < Math.round(total * fps); f++) {
    const t = f / fps;
    while (segIdx < segments.length - 1 && t >= segStart + segments[segIdx]![0]) segStart += segments[segIdx++]![0];
    const [dur, depth] = segments[segIdx]!;
    const phase = (t - segStart) / dur;
    const angles = anglesAt(o.kind, depth === 0 ? 0 : phase, Math.abs(depth));
    for (const [j, v] of Object.entries(angles) as Array<[JointName, number]>) {
      const cur = rom[j] ?? { min: Infinity, max: -Infinity };
      rom[j] = { min: Math.min(cur.min, v), max: Math.max(cur.max, v) };
    }
    // Dropped frames: 15 % at random plus bursts of 0.6 s.
    if (sc === 'dropped') {
      if (r() < 0.15) continue;
      if ([...burstAt].some((b) => f >= b && f < b + 0.6 * fps)) continue;
    }
    const lm = pose(o.kind, angles);
    const vis = new Array(33).fill(0.98);
    if (sc === 'noisy' || sc === 'low_visibility') {
      const sigma = sc === 'noisy' ? 0.012 : 0.004;
      for (const p of lm) for (let c = 0; c < 3; c++) p[c]! += gauss(r) * sigma;
    }
    // Low visibility: 20 % of frames lose the limbs' landmarks, which then hold garbage positions.
    if (sc === 'low_visibility' && r() < 0.2) {
      for (const i of [11, 12, 13, 14, 15, 16, 23, 24, 25, 26, 27, 28]) {
        vis[i] = 0.05 + r() * 0.3;
        lm[i] = [r() * 2 - 1, r() * 2 - 1, r() * 2 - 1];
      }
    }
    const row: number[] = [];
    for (let i = 0; i < 33; i++) row.push(lm[i]![0], lm[i]![1], lm[i]![2], vis[i]);
    timestamps.push(Math.round(t * 1000));
    frames.push(row);
  }
  const data = new Float32Array(frames.length * 132);
  for (const [i, row] of frames.entries()) data.set(row, i * 132);
  const trueRom: Partial<Record<JointName, number>> = {};
  for (const [j, v] of Object.entries(rom) as Array<[JointName, { min: number; max: number }]>) trueRom[j] = v.max - v.min;
  return { fps, timestamps, data, trueReps: reps, trueRom };
}

/** Splits a session into one-second batches (the portal's cadence). */
export function toBatches(s: {
  timestamps: number[];
  data: Float32Array;
}): Array<{ seq: number; timestamps: number[]; data: Float32Array }> {
  const out: Array<{ seq: number; timestamps: number[]; data: Float32Array }> = [];
  let start = 0;
  while (start < s.timestamps.length) {
    const second = Math.floor(s.timestamps[start]! / 1000);
    let end = start;
    while (end < s.timestamps.length && Math.floor(s.timestamps[end]! / 1000) === second && end - start < 120) end++;
    out.push({ seq: out.length, timestamps: s.timestamps.slice(start, end), data: s.data.subarray(start * 132, end * 132) });
    start = end;
  }
  return out;
}
