import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { INTENDED_USE, INTENDED_USE_VERSION } from '../src/modules/treatment-plans/schemas.ts';

// docs/telerehab.md records the intended-use statement that organizations accept before telerehab outputs are
// served: it must be the one the API serves, word for word.
test('docs/telerehab.md quotes the intended-use statement the settings route serves', () => {
  const doc = readFileSync(new URL('../../../docs/telerehab.md', import.meta.url), 'utf8');
  const lines = doc.split('\n');
  const at = lines.findIndex((l) => l.startsWith('**Intended-use statement**'));
  assert.ok(at >= 0, 'the statement has its paragraph');
  let i = at + 1;
  while (i < lines.length && !lines[i]!.startsWith('>')) i++;
  assert.ok(lines.slice(at, i).join(' ').includes(`\`${INTENDED_USE_VERSION}\``), 'with its version');
  const quote: string[] = [];
  for (; i < lines.length && lines[i]!.startsWith('>'); i++) quote.push(lines[i]!.replace(/^>\s?/, ''));
  assert.equal(quote.join(' ').replace(/\s+/g, ' ').trim(), INTENDED_USE);
});
