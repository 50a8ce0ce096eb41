import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { en } from '../src/i18n/en.ts';
import { messages, pickLang, purposeName, translate } from '../src/i18n/index.ts';
import { ro } from '../src/i18n/ro.ts';

/** Every key the front-ends use must exist in every language (spec 9 rule 7: a locale is its message files). */
describe('i18n messages', () => {
  it('en and ro have exactly the same keys, none empty', () => {
    const missingInRo = Object.keys(en).filter((k) => !(k in ro));
    const missingInEn = Object.keys(ro).filter((k) => !(k in en));
    assert.deepEqual(missingInRo, [], 'keys missing in ro');
    assert.deepEqual(missingInEn, [], 'keys missing in en');
    for (const [lang, m] of Object.entries(messages)) for (const [k, v] of Object.entries(m)) assert.ok(v.trim(), `${lang}: ${k} is empty`);
  });

  it('placeholders match between languages', () => {
    const names = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    for (const k of Object.keys(en) as (keyof typeof en)[]) assert.deepEqual(names(ro[k]), names(en[k]), k);
  });

  it('every t() key used by the apps exists', () => {
    const roots = [join(import.meta.dirname, '../src'), join(import.meta.dirname, '../../../apps/web/ui')];
    const used = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name)) for (const m of readFileSync(p, 'utf8').matchAll(/\bt\(\s*'([a-zA-Z0-9_.]+)'/g)) used.add(m[1]!);
      }
    };
    for (const r of roots) walk(r);
    assert.ok(used.size > 20, 'the scan found the keys');
    assert.deepEqual(
      [...used].filter((k) => !(k in en)),
      [],
    );
  });

  it('fills placeholders and picks en or ro from a tag', () => {
    assert.equal(translate('ro', 'book.minutes', { n: 30 }), '30 min');
    assert.equal(translate('en', 'auth.signedInAs', { email: 'a@b.c' }), 'Signed in as a@b.c');
    assert.deepEqual(['ro-RO', 'RO', 'en', 'fr', null].map(pickLang), ['ro', 'ro', 'en', 'en', 'en']);
    assert.equal(purposeName('ro', 'telemedicine', 'Telemedicine'), 'Consultații video');
    assert.equal(purposeName('ro', 'treatment_specific_x', 'Own purpose'), 'Own purpose');
  });
});
