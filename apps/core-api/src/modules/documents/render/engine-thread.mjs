// The PDF engine's thread (engine.ts): Typst's compiler, our fonts and program, one document at a time.
// Plain JavaScript so that the thread needs no TypeScript loader. The workspace is an empty temporary
// folder: the program reads nothing but the logo mapped into it for one render, then unmapped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import typst from '@myriaddreamin/typst-ts-node-compiler';

const root = mkdtempSync(join(tmpdir(), 'clinic-typst-'));
const compiler = typst.NodeCompiler.create({
  workspace: root,
  fontArgs: [{ fontBlobs: workerData.fonts.map((f) => Buffer.from(f)) }],
});
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

parentPort.on('message', (job) => {
  const started = performance.now();
  try {
    if (job.logo) compiler.mapShadow(join(root, job.logo.name), Buffer.from(job.logo.bytes));
    let result = compiler.compile({ mainFileContent: workerData.program, inputs: { data: job.data } });
    let err = result.takeError();
    let logoError;
    if ((err || !result.result) && job.logo) {
      // A logo stored before uploads were decoded may be damaged: the document is made without it.
      logoError = err ? diagnosticsOf(err) : 'no document';
      result = compiler.compile({ mainFileContent: workerData.program, inputs: { data: job.data, nologo: '1' } });
      err = result.takeError();
    }
    if (err || !result.result) {
      parentPort.postMessage({ id: job.id, error: 'compile', message: err ? diagnosticsOf(err) : 'no document' });
      return;
    }
    const doc = result.result;
    const pages = doc.numOfPages;
    if (pages > job.maxPages) {
      parentPort.postMessage({ id: job.id, error: 'too_long', pages });
      return;
    }
    const pdf = compiler.pdf(doc, { pdfStandard: 'a-2b', creationTimestamp: job.timestamp });
    const bytes = pdf.buffer.slice(pdf.byteOffset, pdf.byteOffset + pdf.byteLength);
    parentPort.postMessage({ id: job.id, pdf: bytes, pages, ms: performance.now() - started, logoError }, [bytes]);
  } catch (e) {
    parentPort.postMessage({ id: job.id, error: 'compile', message: String(e?.message ?? e) });
  } finally {
    compiler.resetShadow();
    // Typst memoizes layouts across compilations; trimming now and then keeps the thread's memory flat.
    if (++renders % 50 === 0) compiler.evictCache(10);
  }
});

process.on('exit', () => rmSync(root, { recursive: true, force: true }));
