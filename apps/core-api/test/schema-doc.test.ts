import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { SCHEMA_DOC, SCHEMA_DOC_COMMAND, schemaDoc } from '../../../scripts/schema-doc.ts';

// docs/schema.sql is where a table's current shape is read in one place; it must follow the migrations.
describe('docs/schema.sql', () => {
  it(`is what the migrations produce (run \`${SCHEMA_DOC_COMMAND}\` after adding a migration)`, async () => {
    const committed = await readFile(SCHEMA_DOC, 'utf8');
    const generated = await schemaDoc();
    assert.ok(generated.includes('create table public.organizations ('), 'the generator read no tables');
    assert.ok(committed === generated, `docs/schema.sql is stale: run \`${SCHEMA_DOC_COMMAND}\``);
  });
});
