// One PDF engine process of the pool (engine.ts): Typst's compiler, the bundled fonts and our program, one
// document at a time. Plain JavaScript, so that it starts without a TypeScript loader. A process rather
// than a thread: a layout's memory is this process's, which the pool ends when a render was refused or
// it grew (the API's resident memory stays where it was), and a render past its deadline is ended with
// the process instead of running on in the background.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { coverageOf } from './font-coverage.mjs';

// The pool (engine.ts) gives the program, the font files and an empty workspace folder of its own.
const { program, fontFiles, workspace } = JSON.parse(process.argv[2]);
// No host font: the compiler adds "system" fonts found through fontconfig, and the pool starts this
// process with FONTCONFIG_FILE naming one empty folder; ours come from memory.
if (!process.env.FONTCONFIG_FILE) throw new Error('FONTCONFIG_FILE must name the engine fontconfig');
process.on('disconnect', () => process.exit(0));

const { default: typst } = await import('@myriaddreamin/typst-ts-node-compiler');
const fonts = fontFiles.map((f) => readFileSync(f));
const compiler = typst.NodeCompiler.create({ workspace, fontArgs: [{ fontBlobs: fonts }] });
// PDF/A refuses a character no embedded font can show: such a character (a script or symbol the bundled
// fonts lack) prints as U+FFFD, the replacement character, which Noto Sans has. Only non-ASCII characters
// are tested (and DEL): they are never JSON syntax, so the data stays valid JSON.
const covered = coverageOf(fonts);
const printable = (data) => data.replace(/[^\t\n\r -~]/gu, (ch) => (covered(ch.codePointAt(0)) ? ch : '\ufffd'));

let renders = 0;

function diagnosticsOf(err) {
  try {
    return compiler
      .fetchDiagnostics(err)
      .map((d) => d.message)
      .join('; ');
  } catch {
    return String(err?.shortDiagnostics ?? 'compile error');
  }
}

// More characters than any page can hold, and then some: text over this many a page cannot fit in the
// page bound whatever the layout (8.5 pt text on a landscape page holds about 7,000).
const CHARS_A_PAGE = 12_000;

function render(job) {
  const started = performance.now();
  // The size bound, before any layout: a document whose text alone cannot fit is refused at once, and
  // this process, having laid nothing out, stays.
  const atLeast = Math.ceil(job.data.length / CHARS_A_PAGE);
  if (atLeast > job.maxPages) return { id: job.id, error: 'too_long', pages: atLeast, early: true };
  try {
    if (job.logo) compiler.mapShadow(join(workspace, job.logo.name), Buffer.from(job.logo.bytes));
    const inputs = { data: printable(job.data) };
    let result = compiler.compile({ mainFileContent: program, inputs });
    let err = result.takeError();
    let logoError;
    if ((err || !result.result) && job.logo) {
      // A logo stored before uploads were decoded may be damaged: the document is made without it.
      logoError = err ? diagnosticsOf(err) : 'no document';
      result = compiler.compile({ mainFileContent: program, inputs: { ...inputs, nologo: '1' } });
      err = result.takeError();
    }
    if (err || !result.result) return { id: job.id, error: 'compile', message: err ? diagnosticsOf(err) : 'no document' };
    const doc = result.result;
    // Typst lays a document out whole before it can count its pages (a check inside the layout stops
    // nothing earlier): the bound is held here, before the PDF is written, and the pool ends this process
    // after a refusal so that the layout's memory goes with it.
    const pages = doc.numOfPages;
    if (pages > job.maxPages) return { id: job.id, error: 'too_long', pages };
    const pdf = compiler.pdf(doc, { pdfStandard: 'a-2b', creationTimestamp: job.timestamp });
    return { id: job.id, pdf, pages, ms: performance.now() - started, logoError };
  } catch (e) {
    return { id: job.id, error: 'compile', message: String(e?.message ?? e) };
  } finally {
    compiler.resetShadow();
    // Typst memoizes layouts across compilations; trimming now and then keeps the process's memory flat.
    if (++renders % 50 === 0) compiler.evictCache(10);
  }
}

const WARM_UP = {
  title: 'Warm-up',
  author: '',
  keywords: [],
  lang: 'en',
  page: { paper: 'a4', landscape: false },
  footer: 'Warm-up',
  letterhead: null,
  blocks: [{ type: 'text', paragraphs: [['Warm-up ăîșț']], size: 'normal', bold: true, align: 'left' }],
};

// A first document off any deadline: fonts parsed and the program compiled before the first real one.
render({ id: 0, data: JSON.stringify(WARM_UP), maxPages: 10, timestamp: 0, logo: null });
process.send({ ready: true });
process.on('message', (job) => {
  const reply = render(job);
  process.send({ ...reply, rss: process.memoryUsage().rss });
});
