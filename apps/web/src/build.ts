import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rmdir, stat } from 'node:fs/promises';
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
  const built = await Promise.all(
    ['booking', 'portal', 'clinic', 'console'].map((app) => stat(join(distDir, app, 'index.html')).catch(() => null)),
  );
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

/**
 * Builds the front end when it is missing or stale, once at a time across processes (two browser test
 * files or two `npm start`s would otherwise write dist/ together): a lock folder, waited for up to 5
 * minutes; whoever gets it checks again. Returns why it built, or null.
 */
export async function ensureFrontEndBuilt(distDir: string, log: (line: string) => void): Promise<string | null> {
  const lock = join(WEB_ROOT, '.build-lock');
  for (let waited = 0; ; waited += 500) {
    try {
      await mkdir(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock older than the longest build is a crashed builder's: take it over.
      const age = Date.now() - ((await stat(lock).catch(() => null))?.mtimeMs ?? Date.now());
      if (age > 300_000 || waited > 300_000) {
        await rmdir(lock).catch(() => undefined);
        continue;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    const why = await frontEndBuildNeeded(distDir);
    if (!why) return null;
    log(`Building the front end (${why}): npm run build -w @clinic/web`);
    await buildFrontEnd();
    return why;
  } finally {
    await rmdir(lock).catch(() => undefined);
  }
}
