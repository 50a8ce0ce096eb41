import { readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The embedded database belongs to one process (architecture section 5). The holder writes its pid and
 * the address of its loopback control endpoint; a CLI command either hands its work to that endpoint
 * or, when nobody holds the folder, takes the lock itself.
 */
export interface LockInfo {
  pid: number;
  controlUrl: string | null;
  secret: string | null;
}

const lockFile = (dataDir: string) => join(dataDir, 'embedded.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function readLiveLock(dataDir: string): Promise<LockInfo | null> {
  try {
    const info = JSON.parse(await readFile(lockFile(dataDir), 'utf8')) as LockInfo;
    return info.pid !== process.pid && alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

export class DataDirBusyError extends Error {
  constructor(
    readonly holder: LockInfo,
    dataDir: string,
  ) {
    super(`The embedded database in ${dataDir} is in use by process ${holder.pid}. Stop that process, or set DATA_DIR to another folder.`);
  }
}

export interface HeldLock {
  update(info: Omit<LockInfo, 'pid'>): Promise<void>;
  release(): Promise<void>;
}

export async function acquireLock(dataDir: string): Promise<HeldLock> {
  await mkdir(dataDir, { recursive: true });
  const file = lockFile(dataDir);
  const write = (info: Omit<LockInfo, 'pid'>, flag: string) =>
    writeFile(file, JSON.stringify({ pid: process.pid, ...info }), { flag, mode: 0o600 });
  try {
    await write({ controlUrl: null, secret: null }, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const holder = await readLiveLock(dataDir);
    if (holder) throw new DataDirBusyError(holder, dataDir);
    // A stale lock of a process that died: take it over.
    await rm(file, { force: true });
    await write({ controlUrl: null, secret: null }, 'wx');
  }
  return {
    update: (info) => write(info, 'w'),
    release: () => rm(file, { force: true }),
  };
}
