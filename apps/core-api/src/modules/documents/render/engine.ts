import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ResolvedDocument } from './layout.ts';

/*
 * The PDF engine (docs/decisions.md, "Documents"): Typst (@myriaddreamin/typst-ts-node-compiler) writing
 * PDF/A-2b with the bundled Noto fonts. It runs in a pool of child processes (engine-child.mjs), each
 * laying out one document at a time, so that:
 * - a render never blocks the event loop, and the layout's memory is the child's, never the API's: a
 *   child that refused a document (too many pages) or grew past a bound is ended and its memory with it;
 *   a document whose text alone could not fit the page bound is refused before any layout;
 * - each document has its own deadline from the moment a child takes it; past it that child is killed
 *   (the native call ends with it) and the caller is answered, while the documents other children lay out
 *   are untouched and the ones waiting go to the next free child;
 * - a document whose child died under it for another reason (killed, out of memory) is tried once more
 *   on another child, transparently.
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
  /** Milliseconds the engine spent (compile, layout, PDF), measured in its process. */
  engineMs: number;
  /** Why the logo was left out (the engine could not read it), when it was. */
  logoError?: string;
}

export interface EngineOptions {
  maxPages: number;
  timeoutMs: number;
  /** Engine processes at most (default: the machine's cores). */
  workers?: number;
  /** A child whose resident memory is past this after a document is ended (default 512 MiB). */
  recycleRssBytes?: number;
  /** A child without a document this long is ended (default 60 s); the next document starts one. */
  idleMs?: number;
}

export interface Logo {
  bytes: Buffer;
  contentType: 'image/png' | 'image/jpeg';
}

export interface PdfEngine {
  render(doc: ResolvedDocument, opts?: { logo?: Logo | null; timestamp?: Date }): Promise<RenderedPdf>;
  /** The engine alone on a Typst data string (the benchmarks' floor): no layout resolution, same pool. */
  renderRaw(data: string, logo?: Logo | null): Promise<RenderedPdf>;
  /** The running engine processes (none is the API's own) and whether each is laying out a document. */
  processes(): { pid: number; busy: boolean }[];
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);
const PROGRAM = readFileSync(new URL('./program.typ', import.meta.url), 'utf8');
const CHILD = new URL('./engine-child.mjs', import.meta.url);
const fontFiles = () => FONTS.map(([pkg, file]) => join(dirname(require.resolve(`${pkg}/package.json`)), file));

/**
 * Every font a document may use, loaded once by each engine process: Noto Sans (Latin with every European
 * diacritic, Greek, Cyrillic), Noto Sans Hebrew, Noto Sans Arabic and the monochrome Noto Emoji, all SIL
 * OFL from npm. Nothing else is ever read: engine-child.mjs shuts the host's fonts out, and program.typ
 * names these families with fallback off (a character none of them has prints as Noto Sans's empty box).
 */
export const FONTS: [pkg: string, file: string][] = [
  ['@expo-google-fonts/noto-sans', '400Regular/NotoSans_400Regular.ttf'],
  ['@expo-google-fonts/noto-sans', '700Bold/NotoSans_700Bold.ttf'],
  ['@expo-google-fonts/noto-sans', '400Regular_Italic/NotoSans_400Regular_Italic.ttf'],
  ['@expo-google-fonts/noto-sans-hebrew', '400Regular/NotoSansHebrew_400Regular.ttf'],
  ['@expo-google-fonts/noto-sans-hebrew', '700Bold/NotoSansHebrew_700Bold.ttf'],
  ['@expo-google-fonts/noto-sans-arabic', '400Regular/NotoSansArabic_400Regular.ttf'],
  ['@expo-google-fonts/noto-sans-arabic', '700Bold/NotoSansArabic_700Bold.ttf'],
  ['@expo-google-fonts/noto-emoji', '400Regular/NotoEmoji_400Regular.ttf'],
];

type Reply = { id: number; rss: number } & (
  | { pdf: Uint8Array; pages: number; ms: number; logoError?: string }
  | { error: 'too_long'; pages: number; early?: boolean }
  | { error: 'compile'; message: string }
);

interface Job {
  id: number;
  message: { id: number; data: string; maxPages: number; timestamp: number; logo: { name: string; bytes: Buffer } | null };
  resolve: (r: RenderedPdf) => void;
  reject: (e: Error) => void;
  attempts: number;
}

interface Child {
  proc: ChildProcess;
  ready: boolean;
  job: Job | null;
  timer: NodeJS.Timeout | null;
  idleTimer: NodeJS.Timeout | null;
  /** Set when the pool ended it on purpose (deadline, recycling, close): its exit retries nothing. */
  ending: boolean;
}

export function createPdfEngine(opts: EngineOptions): PdfEngine {
  const size = Math.max(1, opts.workers ?? availableParallelism());
  const recycleRss = opts.recycleRssBytes ?? 512 * 1024 * 1024;
  const idleMs = opts.idleMs ?? 60_000;
  const fonts = fontFiles();
  const queue: Job[] = [];
  const children = new Set<Child>();
  let nextId = 1;
  let closed = false;
  let startFailures = 0;
  let spawned = 0;
  // The pool's folder: the fontconfig of its processes and their (empty) workspaces, removed by close().
  // The compiler always adds the "system" fonts fontconfig finds: the engine processes get a configuration
  // whose one folder is empty, so no font of the host can ever reach a document (or change its bytes).
  let root: string | null = null;
  const poolRoot = () => {
    if (root) return root;
    root = mkdtempSync(join(tmpdir(), 'clinic-typst-'));
    mkdirSync(join(root, 'no-fonts'));
    writeFileSync(join(root, 'fonts.conf'), `<?xml version="1.0"?>\n<fontconfig><dir>${join(root, 'no-fonts')}</dir></fontconfig>\n`);
    return root;
  };

  const end = (c: Child) => {
    c.ending = true;
    children.delete(c);
    if (c.timer) clearTimeout(c.timer);
    if (c.idleTimer) clearTimeout(c.idleTimer);
    c.proc.kill('SIGKILL');
  };

  const spawn = (): Child => {
    // A workspace of its own, made and removed here: a killed process cleans nothing up.
    const workspace = join(poolRoot(), `workspace-${++spawned}`);
    mkdirSync(workspace);
    const proc = fork(CHILD, [JSON.stringify({ program: PROGRAM, fontFiles: fonts, workspace })], {
      execArgv: [],
      // Nothing of the API's environment (its secrets, NODE_OPTIONS) but where temporary files go.
      env: { FONTCONFIG_FILE: join(poolRoot(), 'fonts.conf'), ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}) },
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const c: Child = { proc, ready: false, job: null, timer: null, idleTimer: null, ending: false };
    children.add(c);
    idle(c);
    proc.on('message', (m: { ready: true } | Reply) => {
      if ('ready' in m) {
        c.ready = true;
        startFailures = 0;
        idle(c);
        return pump();
      }
      const job = c.job;
      if (!job || job.id !== m.id) return;
      if (c.timer) clearTimeout(c.timer);
      c.job = null;
      c.timer = null;
      if ('pdf' in m)
        job.resolve({
          pdf: Buffer.from(m.pdf.buffer, m.pdf.byteOffset, m.pdf.byteLength),
          pages: m.pages,
          engineMs: m.ms,
          logoError: m.logoError,
        });
      else if (m.error === 'too_long')
        job.reject(
          new RenderError(
            'too_long',
            m.early
              ? `The document's text fills at least ${m.pages} pages; at most ${opts.maxPages} are allowed.`
              : `The document would have ${m.pages} pages; at most ${opts.maxPages} are allowed.`,
            m.pages,
          ),
        );
      else job.reject(new RenderError('compile', `The PDF engine failed: ${m.message.slice(0, 300)}`));
      // A refused giant or a grown child goes, and its memory with it; the next document gets a fresh one.
      // (Refused before any layout, by its size, it took no memory: that process stays.)
      if (('error' in m && m.error === 'too_long' && !m.early) || m.rss > recycleRss) end(c);
      else idle(c);
      pump();
    });
    proc.on('error', () => undefined);
    proc.on('exit', (code, signal) => {
      rmSync(workspace, { recursive: true, force: true });
      children.delete(c);
      if (c.timer) clearTimeout(c.timer);
      if (c.idleTimer) clearTimeout(c.idleTimer);
      const job = c.job;
      c.job = null;
      if (!c.ready && !c.ending && ++startFailures >= 3) {
        // Three in a row could not even start (a missing font, a broken binary): a fourth would fail alike.
        startFailures = 0;
        for (const waiting of queue.splice(0))
          waiting.reject(new RenderError('compile', `The PDF engine could not start (${signal ?? `exit ${code}`}).`));
      }
      if (job && !c.ending) {
        // Not this document's deadline: its process was taken from under it. Once more, on another child.
        if (job.attempts < 2 && !closed) queue.unshift(job);
        else job.reject(new RenderError('compile', `The PDF engine stopped (${signal ?? `exit ${code}`}).`));
      }
      pump();
    });
    return c;
  };

  // A busy child keeps the process alive (a caller awaits it); an idle one does not.
  const busy = (c: Child) => {
    if (c.idleTimer) clearTimeout(c.idleTimer);
    c.idleTimer = null;
    c.proc.ref();
    c.proc.channel?.ref();
  };
  const idle = (c: Child) => {
    c.proc.unref();
    c.proc.channel?.unref();
    if (c.ready && !c.idleTimer) {
      c.idleTimer = setTimeout(() => end(c), idleMs);
      c.idleTimer.unref();
    }
  };

  const dispatch = (c: Child, job: Job) => {
    c.job = job;
    job.attempts++;
    busy(c);
    c.timer = setTimeout(() => {
      // This document's own deadline: its child is killed (the native call ends with it), no other.
      c.job = null;
      end(c);
      job.reject(new RenderError('timeout', `The document took longer than ${opts.timeoutMs} ms to render.`));
      pump();
    }, opts.timeoutMs);
    c.proc.send(job.message);
  };

  function pump(): void {
    if (closed) return;
    for (const c of children) {
      if (!queue.length) return;
      if (c.ready && !c.job && !c.ending) dispatch(c, queue.shift()!);
    }
    const starting = [...children].filter((c) => !c.ready).length;
    let wanted = Math.min(queue.length - starting, size - children.size);
    while (wanted-- > 0) busy(spawn());
  }

  const run = (data: string, logo: Logo | null | undefined, timestamp: Date | undefined): Promise<RenderedPdf> => {
    if (closed) return Promise.reject(new RenderError('compile', 'The PDF engine was closed.'));
    const id = nextId++;
    return new Promise<RenderedPdf>((resolve, reject) => {
      queue.push({
        id,
        attempts: 0,
        resolve,
        reject,
        message: {
          id,
          data,
          maxPages: opts.maxPages,
          timestamp: Math.floor((timestamp ?? new Date()).getTime() / 1000),
          logo: logo ? { name: logo.contentType === 'image/png' ? 'logo.png' : 'logo.jpg', bytes: logo.bytes } : null,
        },
      });
      pump();
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
    processes() {
      return [...children].filter((c) => c.proc.pid).map((c) => ({ pid: c.proc.pid!, busy: c.job !== null }));
    },
    async close() {
      closed = true;
      const all = [...children];
      for (const job of queue.splice(0)) job.reject(new RenderError('compile', 'The PDF engine was closed.'));
      for (const c of all) {
        c.job?.reject(new RenderError('compile', 'The PDF engine was closed.'));
        c.job = null;
        c.proc.ref(); // its exit is awaited below
        end(c);
      }
      await Promise.all(
        all.map((c) => (c.proc.exitCode !== null || c.proc.signalCode ? null : new Promise((r) => c.proc.once('exit', r)))),
      );
      if (root) rmSync(root, { recursive: true, force: true });
    },
  };
}

const logoPath = (logo: Logo) => (logo.contentType === 'image/png' ? '/logo.png' : '/logo.jpg');
