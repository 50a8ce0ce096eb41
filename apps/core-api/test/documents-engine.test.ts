import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { createPdfEngine, RenderError } from '../src/modules/documents/render/engine.ts';
import { type DocumentData, type Layout, layoutProblems, resolve } from '../src/modules/documents/render/layout.ts';
import { pdfFonts, pdfInfo, pdfPicture, pdfText, skipWithoutPoppler } from './support/poppler.ts';

/*
 * The render core without HTTP: Typst with the shipped Noto Sans, every European Latin
 * script, PDF/A-2b, clean page breaks with a repeated table header, bounded pages and time, and patient
 * text that cannot change the layout. The HTTP tests (documents.test.ts) cover the routes.
 */

const skip = skipWithoutPoppler();
const engine = createPdfEngine({ maxPages: 60, timeoutMs: 60_000 });
after(() => engine.close());

const LATIN = 'Ștefan Țăranu ăâî Łukasz Źdźbło żółć Weiß Straße Řehoř příliš žluťoučký Ødegård Ærø Þór Őrsi Űrbő Çelik Ñandú';
// Typst markup a patient might type (or an attacker craft): headings, settings, code, math, labels, escapes.
const MARKUP =
  '#set page(width: 30pt) = Heading *bold* _em_ $x^2$ <label> @ref // comment /* block */ ] [ \\ `raw` #panic("x") {{patient.first_name}}';

const layout = (blocks: Layout['blocks'], letterhead = true): Layout => ({
  page: { size: 'A4', orientation: 'portrait' },
  letterhead,
  footer: '{{organization.name}} · {{document.title}}',
  blocks,
});

function data(over: Partial<DocumentData> = {}, values: Record<string, string> = {}): DocumentData {
  return {
    values: { 'organization.name': 'Clinica Sfânta Ană', 'document.title': 'Fișă', 'patient.full_name': LATIN, ...values },
    lang: 'ro',
    author: 'Clinica Sfânta Ană',
    answers: [],
    items: [],
    signature: [],
    letterhead: { name: 'Clinica Sfânta Ană', address: ['Strada Țăranului 12, București'], registration: ['CUI RO1234567'], logo: null },
    ...over,
  };
}

const answers = (n: number, text = (i: number) => `Întrebarea ${i + 1}: cum ați descrie durerea?`) =>
  Array.from({ length: n }, (_, i) => ({
    label: text(i),
    value: `Răspunsul ${i + 1}: durere moderată dimineața; se ameliorează cu mișcare ușoară.`,
  }));

describe('PDF render core', { skip }, () => {
  it('renders every European Latin script in embedded Noto Sans, as PDF/A-2b', async () => {
    const doc = resolve(
      layout([
        { type: 'heading', text: '{{document.title}}' },
        { type: 'text', text: '{{patient.full_name}}' },
      ]),
      'Fișă',
      data(),
    );
    const out = await engine.render(doc);
    const text = pdfText(out.pdf).replace(/\s+/g, ' ');
    for (const word of LATIN.split(' ')) assert.ok(text.includes(word), `${word} missing from: ${text}`);
    const fonts = pdfFonts(out.pdf);
    assert.ok(fonts.length > 0);
    for (const f of fonts) {
      assert.ok(f.embedded, `${f.name} is not embedded`);
      assert.match(f.name, /NotoSans/);
    }
    const xmp = out.pdf.toString('latin1');
    assert.match(xmp, /<pdfaid:part>2<\/pdfaid:part>/);
    assert.match(xmp, /<pdfaid:conformance>B<\/pdfaid:conformance>/);
    assert.equal(pdfInfo(out.pdf).Pages, '1');
    pdfPicture(out.pdf, 'engine-latin');
  });

  it('sets Greek, Cyrillic, Hebrew, Arabic and emoji in the bundled fonts alone, never a host font, the same bytes in every process', async () => {
    const scripts = 'Ελληνικά Αθήνα Кириллица Москва שלום רפואה مرحبا 😀 🩺';
    // U+2610 (☐) and CJK are in no bundled font: a host font (DejaVu Sans has ☐) must not set them.
    const missing = '☐ 中文';
    const doc = resolve(
      layout([
        { type: 'heading', text: '{{patient.full_name}}' },
        { type: 'text', text: `${scripts} ${missing}` },
        { type: 'text', text: scripts, bold: true },
      ]),
      'Fonts',
      data({}, { 'patient.full_name': 'Ștefan Țăranu שלום 😀' }),
    );
    const timestamp = new Date('2026-11-29T10:00:00Z');
    const out = await engine.render(doc, { timestamp });
    const names = pdfFonts(out.pdf).map((f) => f.name.replace(/^[A-Z]{6}\+/, ''));
    for (const f of pdfFonts(out.pdf)) assert.ok(f.embedded, `${f.name} is not embedded`);
    const bundled = /^(NotoSans|NotoSansHebrew|NotoSansArabic|NotoEmoji)-(Regular|Bold|Italic)$/;
    for (const n of names) assert.match(n, bundled, `only bundled fonts: ${names.join(', ')}`);
    for (const family of ['NotoSansHebrew', 'NotoSansArabic', 'NotoEmoji'])
      assert.ok(
        names.some((n) => n.startsWith(`${family}-`)),
        `${family} missing: ${names.join(', ')}`,
      );
    const text = pdfText(out.pdf);
    for (const word of ['Ελληνικά', 'Москва', '😀', 'Ștefan']) assert.ok(text.includes(word), `${word} missing from: ${text}`);
    assert.ok(text.includes('\ufffd'), 'a character no bundled font has prints as U+FFFD');
    assert.ok(!text.includes('☐') && !text.includes('中'));
    assert.match(out.pdf.toString('latin1'), /<pdfaid:part>2<\/pdfaid:part>/);
    // Another engine process, the same document and time: the very same archival bytes.
    const other = createPdfEngine({ maxPages: 60, timeoutMs: 60_000, workers: 1 });
    try {
      assert.ok((await other.render(doc, { timestamp })).pdf.equals(out.pdf), 'the same PDF/A bytes in another process');
      // The engine process searches no font folder of the host: its fontconfig names one folder, empty.
      const [pid] = other.processes().map((p) => p.pid);
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const conf = env.find((e) => e.startsWith('FONTCONFIG_FILE='))?.slice('FONTCONFIG_FILE='.length);
      assert.ok(conf, 'FONTCONFIG_FILE is set for the engine process');
      // And it gets nothing else of the API's environment (secrets, NODE_OPTIONS) but the temporary folder
      // (and Node's own IPC channel variables).
      assert.deepEqual(
        env
          .filter(Boolean)
          .map((e) => e.slice(0, e.indexOf('=')))
          .filter((k) => k !== 'TMPDIR' && !k.startsWith('NODE_CHANNEL_')),
        ['FONTCONFIG_FILE'],
      );
      const dirs = [...readFileSync(conf, 'utf8').matchAll(/<dir>([^<]*)<\/dir>/g)].map((m) => m[1]!);
      assert.equal(dirs.length, 1, readFileSync(conf, 'utf8'));
      assert.deepEqual(readdirSync(dirs[0]!), []);
      assert.doesNotMatch(readFileSync(conf, 'utf8'), /<include|\/usr\/share\/fonts|~\/\.fonts/);
    } finally {
      await other.close();
    }
    pdfPicture(out.pdf, 'engine-scripts');
  });

  it('sets patient text as text: markup characters change neither the layout nor the content', async () => {
    const blocks: Layout['blocks'] = [
      { type: 'heading', text: '{{patient.full_name}}' },
      { type: 'fields', rows: [{ label: 'Patient', value: '{{patient.full_name}}' }] },
      { type: 'answers' },
      { type: 'signature' },
    ];
    const sig = [{ label: 'Signed by', value: MARKUP }];
    const plain = await engine.render(
      resolve(layout(blocks), 'T', data({ answers: answers(3), signature: sig }, { 'patient.full_name': 'Ana' })),
    );
    const evil = await engine.render(
      resolve(layout(blocks), 'T', data({ answers: answers(3, () => MARKUP), signature: sig }, { 'patient.full_name': MARKUP })),
    );
    assert.equal(pdfInfo(evil.pdf)['Page size'], pdfInfo(plain.pdf)['Page size'], 'the page size is the template’s');
    const text = pdfText(evil.pdf).replace(/\s+/g, ' ');
    // Every piece of the markup is printed as typed (a placeholder inside a value stays literal too).
    for (const piece of MARKUP.split(' ')) assert.ok(text.includes(piece), `${piece} missing from: ${text}`);
    pdfPicture(evil.pdf, 'engine-markup');
  });

  it('breaks words longer than a column instead of running past the margin', async () => {
    const long = 'x'.repeat(400);
    const out = await engine.render(resolve(layout([{ type: 'answers' }]), 'T', data({ answers: [{ label: long, value: long }] })));
    const text = pdfText(out.pdf).replace(/[\s\u200b]+/g, '');
    assert.equal(text.split('x'.repeat(400)).length, 3, 'both copies print whole');
    // Without break opportunities the 400 characters stay on one line; with them they wrap onto more lines.
    assert.ok(
      pdfText(out.pdf)
        .split('\n')
        .filter((l) => l.includes('xxxxxxxxxx')).length >= 6,
    );
  });

  it('breaks a 400-answer form across pages and repeats the table header on each', async () => {
    const out = await engine.render(
      resolve(layout([{ type: 'answers', question_label: 'Întrebare', answer_label: 'Răspuns' }]), 'T', data({ answers: answers(400) })),
    );
    assert.ok(out.pages >= 10, `pages: ${out.pages}`);
    for (let p = 1; p <= out.pages; p++) {
      const page = pdfText(out.pdf, { first: p, last: p });
      assert.match(page, /Întrebare\s+Răspuns/, `no header on page ${p}`);
      assert.match(page, new RegExp(`${p} / ${out.pages}`), `no page number on page ${p}`);
    }
    // No answer is split from its question or lost: each appears exactly once.
    const all = pdfText(out.pdf);
    for (const i of [1, 137, 400]) assert.equal(all.split(`Răspunsul ${i}:`).length, 2, `answer ${i}`);
  });

  it('refuses a document longer than the page bound, and one that takes longer than the deadline', async () => {
    const short = createPdfEngine({ maxPages: 2, timeoutMs: 60_000 });
    await assert.rejects(short.render(resolve(layout([{ type: 'answers' }]), 'T', data({ answers: answers(200) }))), (e: unknown) => {
      assert.ok(e instanceof RenderError && e.reason === 'too_long' && (e.pages ?? 0) > 2);
      return true;
    });
    await short.close();
    // A deadline of one millisecond is shorter than any 400-row layout: the render is abandoned.
    const hasty = createPdfEngine({ maxPages: 100, timeoutMs: 1 });
    await assert.rejects(
      hasty.render(resolve(layout([{ type: 'answers' }]), 'T', data({ answers: answers(400) }))),
      (e: unknown) => e instanceof RenderError && e.reason === 'timeout',
    );
    await hasty.close();
  });

  it('checks placeholders against the data model of the kind', () => {
    assert.deepEqual(layoutProblems('form', layout([{ type: 'text', text: 'Hello {{patient.full_name}}' }, { type: 'signature' }])), {});
    const bad = layoutProblems(
      'prescription',
      layout([
        { type: 'text', text: '{{patient.nam}} {{form.title}}' },
        { type: 'answers' },
        { type: 'text', text: 'stray }} brace' },
        {
          type: 'items',
          columns: [
            { key: 'drug', label: 'Drug' },
            { key: 'drug', label: 'Again' },
          ],
        },
      ]),
    );
    assert.match(bad['blocks[0].text']!, /patient\.nam/);
    assert.match(bad['blocks[0].text']!, /form\.title/);
    assert.ok(bad['blocks[1].type']);
    assert.ok(bad['blocks[2].text']);
    assert.ok(bad['blocks[3].columns']);
  });
});
