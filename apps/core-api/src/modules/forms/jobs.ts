import type { AssetStore } from '@clinic/assets';
import type { Database } from '@clinic/db';
import type { Logger } from 'pino';
import type { WorkerRegistry } from '../../worker/types.ts';
import { knownAssetKeys } from './queries.ts';

export interface FormJobDeps {
  db: Database;
  assets: AssetStore;
  logger: Logger;
}

/** Objects younger than this may belong to an upload whose transaction has not committed yet. */
export const ORPHAN_GRACE_MS = 60 * 60 * 1000;
const KEY = /^orgs\/[0-9a-f-]{36}\/forms\/[0-9a-f-]{36}\/([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Milliseconds since the epoch from a UUIDv7 file id (its first 48 bits). */
const createdAtOf = (m: RegExpExecArray) => parseInt(m[1]! + m[2]!, 16);

/**
 * Removes form-file objects that no form_files row names (an upload cut short between storing the
 * object and committing its row, docs/operations.md), once they are older than the grace period.
 * Idempotent: a second run finds nothing. Returns the keys removed.
 */
export async function sweepOrphanFormFiles(deps: FormJobDeps, now = Date.now()): Promise<string[]> {
  const candidates: string[] = [];
  for (const key of await deps.assets.list('orgs/')) {
    const m = KEY.exec(key);
    if (m && now - createdAtOf(m) > ORPHAN_GRACE_MS) candidates.push(key);
  }
  if (!candidates.length) return [];
  const rows = await deps.db.withScope({ role: 'app_bypass', principalId: null, orgId: null, permissions: [] }, (tx) =>
    knownAssetKeys(tx, candidates),
  );
  const known = new Set(rows);
  const orphans = candidates.filter((k) => !known.has(k));
  for (const key of orphans) await deps.assets.delete(key);
  if (orphans.length) deps.logger.info({ count: orphans.length }, 'removed orphan form files');
  return orphans;
}

/** Hourly sweep of orphan form files. */
export function registerFormJobs(registry: WorkerRegistry, deps: FormJobDeps): void {
  registry.every('forms.orphan_files', 3600, () => sweepOrphanFormFiles(deps).then(() => undefined));
}
