import type { WorkerRegistry } from '../../worker/types.ts';
import { type SweepDeps, sweepOrphanFiles } from '../../platform/file-store.ts';
import { knownAssetKeys } from './queries.ts';

export { ORPHAN_GRACE_MS } from '../../platform/file-store.ts';
export type FormJobDeps = SweepDeps;

/**
 * Removes form-file objects that no form_files row names (an upload cut short between storing the
 * object and committing its row, docs/operations.md), once they are older than the grace period.
 * Idempotent: a second run finds nothing. Returns the keys removed.
 */
export function sweepOrphanFormFiles(deps: FormJobDeps, now = Date.now()): Promise<string[]> {
  return sweepOrphanFiles(deps, { segment: 'forms', known: knownAssetKeys }, now);
}

/** Hourly sweep of orphan form files. */
export function registerFormJobs(registry: WorkerRegistry, deps: FormJobDeps): void {
  registry.every('forms.orphan_files', 3600, () => sweepOrphanFormFiles(deps).then(() => undefined));
}
