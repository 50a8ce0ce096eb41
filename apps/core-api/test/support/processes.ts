import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: spawned entry points run from there, as `npm start` does. */
export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** A TCP port that was free on loopback a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Ports for every service a spawned `main.ts` listens on (core, telemetry, composer, web, development
 * OpenID provider), so a test server never meets `npm start` running in another terminal or another test
 * file's server. These servers skip the front-end build (the browser harness builds it once, under a lock).
 */
export async function servicePorts(): Promise<{
  PORT: string;
  TELEMETRY_PORT: string;
  COMPOSER_PORT: string;
  WEB_PORT: string;
  DEV_OIDC_PORT: string;
  WEB_BUILD_ON_START: 'off';
}> {
  const [core, telemetry, composer, web, oidc] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  return {
    PORT: String(core),
    TELEMETRY_PORT: String(telemetry),
    COMPOSER_PORT: String(composer),
    WEB_PORT: String(web),
    DEV_OIDC_PORT: String(oidc),
    WEB_BUILD_ON_START: 'off',
  };
}

const live = new Set<ChildProcess>();
/** Kills each live child with the processes it started (ffmpeg, a worker): its whole process group. */
function killAll(): void {
  for (const child of live) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }
}
// A test file that ends, fails or is stopped (the runner's time-out, Ctrl-C) takes its processes with
// it: a server left behind would hold its ports and data folder for the files that run after it.
process.once('exit', killAll);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === 'SIGTERM' ? 15 : 2));
  });
}

/**
 * spawn() whose child, and whatever the child starts, is killed if still running when this test process
 * exits or is stopped. The child leads a process group of its own (`detached`), so one kill reaches them all.
 */
export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * The worker (`apps/core-api/src/worker/main.ts`) as a process of its own, for the crash tests that kill it:
 * with NODE_ENV test, the given settings, its stderr kept to report an unexpected exit, and its stdout shown
 * when CRASH_TEST_LOGS is set (LOG_LEVEL debug then, warn otherwise).
 */
export function spawnWorkerProcess(env: Record<string, string | undefined>): ChildProcess {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', join(ROOT, 'apps/core-api/src/worker/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, NODE_ENV: 'test', LOG_LEVEL: process.env.CRASH_TEST_LOGS ? 'debug' : 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  if (process.env.CRASH_TEST_LOGS) child.stdout!.on('data', (c: Buffer) => process.stderr.write(c));
  child.on('exit', (code, signal) => {
    if (code && code !== 0 && signal === null) process.stderr.write(`worker exited ${code}: ${err}\n`);
  });
  return child;
}

/** Resolves once the child has exited (at once if it already has). */
export const exited = (c: ChildProcess) =>
  new Promise<void>((res) => (c.exitCode !== null || c.signalCode !== null ? res() : c.once('exit', () => res())));

/** Stops a child (SIGTERM unless told otherwise) and resolves with its exit code once it is gone. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

/**
 * Resolves when the child prints text matching `ready` on stdout (with the match), rejects with what it
 * printed if it exits first. No deadline of its own: a child that hangs is the runner's time-out to stop.
 */
export function waitForOutput(child: ChildProcess, ready: RegExp): Promise<{ match: RegExpExecArray; output: () => string }> {
  let out = '';
  const output = () => out;
  child.stderr?.on('data', (c) => {
    out += c;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (c) => {
      out += c;
      const match = ready.exec(out);
      if (match) resolve({ match, output });
    });
    child.once('exit', (code) => reject(new Error(`the process exited with ${code} before it was ready:\n${out}`)));
  });
}
