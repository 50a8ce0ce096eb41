import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accuracyRows, formatTable } from '../src/synthetic/accuracy.ts';

// The accuracy table of docs/telemetry.md: exact reps and ROM within 3 degrees on clean data, within one
// rep on every degraded scenario (noise, dropped frames, low visibility, varying tempo).
test('scoring accuracy on synthetic landmark sequences', () => {
  const rows = accuracyRows();
  process.stdout.write(`\n${formatTable(rows)}\n`);
  for (const r of rows) {
    const where = `${r.exercise} ${r.scenario} seed ${r.seed}`;
    if (r.scenario === 'clean') {
      assert.equal(r.reps, r.trueReps, `${where}: exact rep count on clean data`);
      assert.ok(r.romError <= 3, `${where}: ROM within 3 degrees (got ${r.romError})`);
    } else {
      assert.ok(Math.abs(r.reps - r.trueReps) <= 1, `${where}: within one rep (got ${r.reps} of ${r.trueReps})`);
    }
  }
});
