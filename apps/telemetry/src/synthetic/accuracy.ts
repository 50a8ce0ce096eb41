import { decodeBatch, encodeBatch } from '../pose/format.ts';
import type { JointName } from '../pose/joints.ts';
import { concatBatches, scoreSession } from '../pose/scoring.ts';
import { generateSession, toBatches, type ExerciseKind, type Scenario } from './generator.ts';
import { PLATFORM_MOVEMENTS } from './movements.ts';

export interface AccuracyRow {
  exercise: ExerciseKind;
  scenario: Scenario;
  seed: number;
  trueReps: number;
  reps: number;
  /** The worst |measured - true| range of motion over the tracked joints, degrees. */
  romError: number;
  formScore: number | null;
}

export const EXERCISES: ExerciseKind[] = ['squat', 'arm-raise', 'lunge'];
export const SCENARIOS: Scenario[] = ['clean', 'noisy', 'dropped', 'low_visibility', 'varying_tempo'];

/** Generates, encodes and decodes (the wire path), then scores: one row per exercise, scenario and seed. */
export function accuracyRows(seeds = [1, 2, 3]): AccuracyRow[] {
  const rows: AccuracyRow[] = [];
  for (const exercise of EXERCISES) {
    for (const scenario of SCENARIOS) {
      for (const seed of seeds) {
        const g = generateSession({ kind: exercise, scenario, seed, reps: 8 + seed });
        const batches = toBatches(g).map((b) => decodeBatch(encodeBatch(b)));
        const m = PLATFORM_MOVEMENTS[exercise];
        const s = scoreSession(concatBatches(batches), m);
        let romError = 0;
        for (const j of m.tracked_joints) {
          const truth = g.trueRom[j as JointName];
          const got = s.rom[j]?.range_deg;
          if (truth !== undefined && got != null) romError = Math.max(romError, Math.abs(got - truth));
        }
        rows.push({
          exercise,
          scenario,
          seed,
          trueReps: g.trueReps,
          reps: s.rep_count,
          romError: Math.round(romError * 10) / 10,
          formScore: s.form_score,
        });
      }
    }
  }
  return rows;
}

export function formatTable(rows: AccuracyRow[]): string {
  const head = 'exercise   scenario        seed  true reps  counted  error  max ROM error (deg)  form score';
  const lines = rows.map(
    (r) =>
      `${r.exercise.padEnd(10)} ${r.scenario.padEnd(15)} ${String(r.seed).padStart(4)}  ${String(r.trueReps).padStart(9)}  ${String(r.reps).padStart(7)}  ${String(r.reps - r.trueReps).padStart(5)}  ${r.romError.toFixed(1).padStart(19)}  ${String(r.formScore ?? '-').padStart(10)}`,
  );
  return [head, ...lines].join('\n');
}

// `npx tsx apps/telemetry/src/synthetic/accuracy.ts` prints the table.
if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(`${formatTable(accuracyRows())}\n`);
