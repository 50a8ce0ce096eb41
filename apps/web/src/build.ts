import { spawn } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const WEB_ROOT = resolve(import.meta.dirname, '..');
const REPO_ROOT = resolve(WEB_ROOT, '../..');
/** What the build reads: the apps and the shared UI package. */
const SOURCES = [join(WEB_ROOT, 'ui'), join(REPO_ROOT, 'packages/ui/src'), join(REPO_ROOT, 'packages/client/src')];

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, await newestMtime(p));
    else newest = Math.max(newest, (await stat(p).catch(() => null))?.mtimeMs ?? 0);
  }
  return newest;
}

/**
 * Why `npm start` should build the front end first, or null when dist/ is current: missing, or older
 * than a source file of the apps. The check is on modification times, cheap enough for every start.
 */
export async function frontEndBuildNeeded(distDir: string): Promise<string | null> {
  const pkg = JSON.parse(await readFile(join(WEB_ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  if (!pkg.scripts?.build) return null;
  const built = await Promise.all(['booking', 'portal'].map((app) => stat(join(distDir, app, 'index.html')).catch(() => null)));
  if (built.some((s) => s === null)) return 'the front end is not built yet';
  const builtAt = Math.min(...built.map((s) => s!.mtimeMs));
  for (const dir of SOURCES) if ((await newestMtime(dir)) > builtAt) return 'its sources changed since the last build';
  return null;
}

/** Runs `npm run build -w @clinic/web` (the screens' own build), its output on stderr. */
export function buildFrontEnd(): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn('npm', ['run', 'build', '-w', '@clinic/web'], { cwd: REPO_ROOT, stdio: ['ignore', 2, 2] });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`npm run build -w @clinic/web exited with ${code}`))));
  });
}
