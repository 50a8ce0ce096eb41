import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ResolvedDocument } from './layout.ts';

/*
 * The PDF engine (docs/decisions.md, "Documents"): Typst (@myriaddreamin/typst-ts-node-compiler) writing
 * PDF/A-2b with Noto Sans, shipped by @expo-google-fonts/noto-sans. It runs on its own thread so that a
 * render never blocks the event loop, one document at a time, each under a deadline: past it the caller
 * gets an error at once and the thread is replaced (a fresh one serves the next document). Pages are
 * counted before the PDF is written and a document longer than the bound is refused.
 */

export class RenderError extends Error {
  constructor(
    readonly reason: 'too_long' | 'timeout' | 'compile',
    message: string,
    readonly pages?: number,
  ) {
    super(message);
  }
}

export interface RenderedPdf {
  pdf: Buffer;
  pages: number;
  /** Milliseconds the engine spent (compile, layout, PDF), measured on its thread. */
  engineMs: number;
  /** Why the logo was left out (the engine could not read it), when it was. */
  logoError?: string;
}

export interface EngineOptions {
  maxPages: number;
  timeoutMs: number;
}

export interface Logo {
  bytes: Buffer;
  contentType: 'image/png' | 'image/jpeg';
}

export interface PdfEngine {
  render(doc: ResolvedDocument, opts?: { logo?: Logo | null; timestamp?: Date }): Promise<RenderedPdf>;
  /** The engine alone on a Typst data string (the benchmarks' floor): no layout resolution, same thread. */
  renderRaw(data: string, logo?: Logo | null): Promise<RenderedPdf>;
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);
const fontDir = dirname(require.resolve('@expo-google-fonts/noto-sans/package.json'));
const FONT_FILES = [
  '400Regular/NotoSans_400Regular.ttf',
  '700Bold/NotoSans_700Bold.ttf',
  '400Regular_Italic/NotoSans_400Regular_Italic.ttf',
];
const PROGRAM = readFileSync(new URL('./program.typ', import.meta.url), 'utf8');
let fonts: Buffer[] | null = null;

interface Pending {
  resolve: (r: RenderedPdf) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

type Reply =
  | { id: number; pdf: ArrayBuffer; pages: number; ms: number; logoError?: string }
  | { id: number; error: 'too_long'; pages: number }
  | { id: number; error: 'compile'; message: string };

export function createPdfEngine(opts: EngineOptions): PdfEngine {
  fonts ??= FONT_FILES.map((f) => readFileSync(join(fontDir, f)));
  let worker: Worker | null = null;
  let nextId = 1;
  const pending = new Map<number, Pending>();

  const start = (): Worker => {
    const w = new Worker(new URL('./engine-thread.mjs', import.meta.url), { workerData: { program: PROGRAM, fonts } });
    w.unref();
    w.on('message', (m: Reply) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if ('pdf' in m) p.resolve({ pdf: Buffer.from(m.pdf), pages: m.pages, engineMs: m.ms, logoError: m.logoError });
      else if (m.error === 'too_long')
        p.reject(new RenderError('too_long', `The document would have ${m.pages} pages; at most ${opts.maxPages} are allowed.`, m.pages));
      else p.reject(new RenderError('compile', `The PDF engine failed: ${m.message.slice(0, 300)}`));
    });
    const fail = (err: Error) => {
      if (worker === w) worker = null;
      for (const [id, p] of pending) {
        clearTimeout(p.timer);
        p.reject(new RenderError('compile', `The PDF engine stopped: ${err.message}`));
        pending.delete(id);
      }
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`exit ${code}`)));
    return w;
  };

  const run = (data: string, logo: Logo | null | undefined, timestamp: Date | undefined): Promise<RenderedPdf> => {
    worker ??= start();
    const w = worker;
    const id = nextId++;
    return new Promise<RenderedPdf>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        // The thread is busy with this document: the ones queued behind it go to a fresh thread.
        if (worker === w) worker = null;
        const rest = [...pending.entries()];
        pending.clear();
        void w.terminate();
        reject(new RenderError('timeout', `The document took longer than ${opts.timeoutMs} ms to render.`));
        for (const [, p] of rest) {
          clearTimeout(p.timer);
          p.reject(new RenderError('timeout', 'The PDF engine was restarted; try again.'));
        }
      }, opts.timeoutMs);
      timer.unref();
      pending.set(id, { resolve, reject, timer });
      w.postMessage({
        id,
        data,
        maxPages: opts.maxPages,
        timestamp: Math.floor((timestamp ?? new Date()).getTime() / 1000),
        logo: logo ? { name: logo.contentType === 'image/png' ? 'logo.png' : 'logo.jpg', bytes: logo.bytes } : null,
      });
    });
  };

  return {
    render(doc, o = {}) {
      const data = {
        ...doc,
        letterhead: doc.letterhead && { ...doc.letterhead, logo: doc.letterhead.logo && o.logo ? logoPath(o.logo) : null },
      };
      return run(JSON.stringify(data), o.logo, o.timestamp);
    },
    renderRaw(data, logo) {
      return run(data, logo, undefined);
    },
    async close() {
      const w = worker;
      worker = null;
      for (const [, p] of pending) {
        clearTimeout(p.timer);
        p.reject(new RenderError('compile', 'The PDF engine was closed.'));
      }
      pending.clear();
      if (w) await w.terminate();
    },
  };
}

const logoPath = (logo: Logo) => (logo.contentType === 'image/png' ? '/logo.png' : '/logo.jpg');
