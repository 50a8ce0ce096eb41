import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import net from 'node:net';
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
 * Ports for every service a spawned `main.ts` listens on (core, telemetry, composer), so a test server
 * never meets `npm start` running in another terminal or another test file's server.
 */
export async function servicePorts(): Promise<{ PORT: string; TELEMETRY_PORT: string; COMPOSER_PORT: string }> {
  const [core, telemetry, composer] = await Promise.all([freePort(), freePort(), freePort()]);
  return { PORT: String(core), TELEMETRY_PORT: String(telemetry), COMPOSER_PORT: String(composer) };
}

const live = new Set<ChildProcess>();
// A test file that ends, fails or is stopped by the runner's time-out takes its processes with it:
// a server left behind would hold its ports and data folder for the files that run after it.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** spawn() whose child is killed, if still running, when this test process exits. */
export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, options);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

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
