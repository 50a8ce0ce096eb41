import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Debian's poppler-utils read the documents' PDFs in tests: pdftotext (the text), pdffonts (every font
 * embedded), pdfinfo (pages, PDF/A) and pdftoppm (a picture a reviewer can look at, written under
 * test-artifacts/documents/, which git ignores). Without them the tests skip, unless REQUIRE_POPPLER=1
 * (.ci/run sets it), where a missing tool fails them.
 */

const TOOLS = ['pdftotext', 'pdffonts', 'pdfinfo', 'pdftoppm'];

function missingTools(): string[] {
  return TOOLS.filter((t) => {
    try {
      execFileSync(t, ['-v'], { stdio: 'ignore' });
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT';
    }
  });
}

/** A reason to skip (node:test's `skip`), or false when the tools are there or REQUIRE_POPPLER=1. */
export function skipWithoutPoppler(): string | false {
  const missing = missingTools();
  if (!missing.length || process.env.REQUIRE_POPPLER === '1') return false;
  return `${missing.join(', ')} not found: install poppler-utils (apt-get install poppler-utils) to run the PDF tests`;
}

function withFile<T>(pdf: Buffer, fn: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'pdf-'));
  try {
    const path = join(dir, 'doc.pdf');
    writeFileSync(path, pdf);
    return fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

export const pdfText = (pdf: Buffer, opts: { first?: number; last?: number } = {}) =>
  withFile(pdf, (p) =>
    run('pdftotext', [...(opts.first ? ['-f', String(opts.first)] : []), ...(opts.last ? ['-l', String(opts.last)] : []), p, '-']),
  );

/** pdffonts' rows: name, type, embedded. */
export function pdfFonts(pdf: Buffer): { name: string; embedded: boolean }[] {
  const lines = withFile(pdf, (p) => run('pdffonts', [p]))
    .split('\n')
    .slice(2)
    .filter(Boolean);
  // Columns: name type encoding emb sub uni object ID; the name and type may hold spaces, the last five do not.
  return lines.map((l) => {
    const parts = l.trim().split(/\s+/);
    return { name: parts[0]!, embedded: parts[parts.length - 5] === 'yes' };
  });
}

export function pdfInfo(pdf: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of withFile(pdf, (p) => run('pdfinfo', [p])).split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

/** Page 1 as a PNG under test-artifacts/documents/<name>.png, for a reviewer; returns its path. */
export function pdfPicture(pdf: Buffer, name: string): string {
  const dir = join(import.meta.dirname, '..', '..', '..', '..', 'test-artifacts', 'documents');
  mkdirSync(dir, { recursive: true });
  const base = join(dir, name);
  withFile(pdf, (p) => run('pdftoppm', ['-png', '-r', '70', '-f', '1', '-l', '1', '-singlefile', p, base]));
  return `${base}.png`;
}
