import type { WorkerRegistry } from '../../worker/types.ts';
import { type SweepDeps, sweepOrphanFiles } from '../../platform/file-store.ts';
import { knownAssetKeys } from './extras-queries.ts';

/**
 * Removes appointment-file objects that no appointment_files row names: an upload cut short before its
 * row committed, the files of a deleted appointment (its rows go by cascade), an erasure's (migration
 * 0068). Objects younger than the grace period are left. Returns the keys removed.
 */
export function sweepOrphanAppointmentFiles(deps: SweepDeps, now = Date.now()): Promise<string[]> {
  return sweepOrphanFiles(deps, { segment: 'appointments', known: knownAssetKeys }, now);
}

/** Hourly sweep of orphan appointment files. */
export function registerAppointmentJobs(registry: WorkerRegistry, deps: SweepDeps): void {
  registry.every('appointments.orphan_files', 3600, () => sweepOrphanAppointmentFiles(deps).then(() => undefined));
}
