import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeBatchGzip } from '../pose/format.ts';
import { type ExerciseKind, generateSession, type Scenario, toBatches } from './generator.ts';

/*
 * Pose batches of a synthetic session as files, ready to send with curl (the README's telerehab example):
 *
 *   npx tsx apps/telemetry/src/synthetic/batches.ts <dir> [--exercise squat] [--reps 5] [--scenario clean] [--seed 1]
 *
 * writes <dir>/0000.pose.gz, 0001.pose.gz, ... (one gzip batch per second of movement, the body of
 * POST /v1/pose/frames) and prints how many and the reps they hold. The movement is the generator's (known
 * joint-angle curves of a stick figure, docs/telemetry.md), so telemetry counts exactly those reps.
 */

const EXERCISES: ExerciseKind[] = ['squat', 'arm-raise', 'lunge'];
const SCENARIOS: Scenario[] = ['clean', 'noisy', 'dropped', 'low_visibility', 'varying_tempo'];

function parse(argv: string[]) {
  const [dir, ...rest] = argv;
  if (!dir || dir.startsWith('--')) throw new Error('give the folder to write the batches to');
  const opts: Record<string, string> = {};
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i]!;
    const value = rest[i + 1];
    if (!key.startsWith('--') || value === undefined) throw new Error(`expected --name value, got ${key}`);
    opts[key.slice(2)] = value;
  }
  const exercise = (opts.exercise ?? 'squat') as ExerciseKind;
  const scenario = (opts.scenario ?? 'clean') as Scenario;
  const reps = Number(opts.reps ?? 5);
  const seed = Number(opts.seed ?? 1);
  if (!EXERCISES.includes(exercise)) throw new Error(`--exercise is one of ${EXERCISES.join(', ')}`);
  if (!SCENARIOS.includes(scenario)) throw new Error(`--scenario is one of ${SCENARIOS.join(', ')}`);
  if (!Number.isInteger(reps) || reps < 1 || reps > 50) throw new Error('--reps is an integer from 1 to 50');
  if (!Number.isInteger(seed)) throw new Error('--seed is an integer');
  return { dir, exercise, scenario, reps, seed };
}

export function writeBatches(o: ReturnType<typeof parse>): number {
  const session = generateSession({ kind: o.exercise, scenario: o.scenario, reps: o.reps, seed: o.seed });
  const batches = toBatches(session);
  mkdirSync(o.dir, { recursive: true });
  for (const b of batches) writeFileSync(join(o.dir, `${String(b.seq).padStart(4, '0')}.pose.gz`), encodeBatchGzip(b));
  return batches.length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const o = parse(process.argv.slice(2));
    const n = writeBatches(o);
    console.log(`${n} batches of a ${o.scenario} ${o.exercise} session with ${o.reps} reps in ${o.dir}`);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
}
